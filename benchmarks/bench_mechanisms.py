"""The 'mechanisms' benchmark alone: ``objpert bench --only mechanisms [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "mechanisms", *sys.argv[1:]]))
