"""One module per command: `configure(parser)` declares arguments, `run(args)` does the work."""
