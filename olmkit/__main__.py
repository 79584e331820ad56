"""``python -m olmkit``."""

import sys

from olmkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
