"""``python -m tfstudio``: the same as the ``tfstudio`` command."""

import sys

from tfstudio.cli import main

sys.exit(main())
