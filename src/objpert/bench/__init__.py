"""Benchmarks behind ``objpert bench`` (issue 6): every figure is a ratio against a
baseline timed in the same process, with BLAS threads pinned (threadpoolctl)."""
