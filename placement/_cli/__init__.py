"""The command line's private parts: the ``placement`` command's argument parser, one builder per subcommand."""
