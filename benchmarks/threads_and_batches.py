"""Batches, one-vs-rest releases and thread counts, as the machine is and under a competing
CPU-bound process the benchmark starts itself: ``objpert bench --only threads``.

Usage: python benchmarks/threads_and_batches.py [--quick] [--json r.json] [--markdown-file r.md]
Medians with min/max over interleaved rounds in one process, BLAS on one thread
(threadpoolctl) around the timed work; docs/performance.md has the figures measured.
"""

import sys

from objpert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "--only", "threads", *sys.argv[1:]]))
