"""capdaemon: keeps AI coding agents inside the lines on GitHub."""

__version__ = "0.1.0"
