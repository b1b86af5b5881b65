"""Every benchmark, as ``objpert bench``; writes results.json and results.md beside this file.

Usage: python benchmarks/run_all.py [--quick] [--threads N] [--only NAMES]
"""

import sys
from pathlib import Path

from objpert.cli import main

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    out = ["--json-file", str(HERE / "results.json"), "--markdown-file", str(HERE / "results.md")]
    raise SystemExit(main(["bench", *sys.argv[1:], *out]))
