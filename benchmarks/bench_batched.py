"""The 'batched' benchmark alone: ``objpert bench --only batched [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "batched", *sys.argv[1:]]))
