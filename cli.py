"""Entry point: ``python cli.py solve [SCENARIO] [--out DIR]`` and ``python cli.py validate FILE``."""

import sys

from placement.cli import main

if __name__ == "__main__":
    sys.exit(main())
