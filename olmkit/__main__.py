"""``python -m olmkit``."""

from olmkit.cli import entry

if __name__ == "__main__":
    entry()
