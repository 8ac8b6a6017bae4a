"""Entry point of a checkout: ``python cli.py COMMAND ...`` is the installed ``placement COMMAND ...``."""

import sys

from placement.cli import main

if __name__ == "__main__":
    sys.exit(main())
