"""``python main.py``: the same as the ``tfstudio`` command."""

import sys

from tfstudio.cli import main

if __name__ == "__main__":
    sys.exit(main())
