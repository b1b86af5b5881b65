"""The 'fit' benchmark alone: ``objpert bench --only fit [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "fit", *sys.argv[1:]]))
