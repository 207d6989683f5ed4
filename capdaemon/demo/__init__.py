"""`capdaemon demo` and the sandbox commands: the only product package that imports ghsandbox."""
