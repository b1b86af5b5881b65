"""The 'dense' benchmark alone: ``objpert bench --only dense [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "dense", *sys.argv[1:]]))
