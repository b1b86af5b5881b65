"""The 'sparse' benchmark alone: ``objpert bench --only sparse [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "sparse", *sys.argv[1:]]))
