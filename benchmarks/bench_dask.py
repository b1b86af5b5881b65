"""The 'dask' benchmark alone: ``objpert bench --only dask [--quick] [--threads N]``."""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "dask", *sys.argv[1:]]))
