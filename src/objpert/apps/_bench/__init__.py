"""Benchmarks behind ``objpert bench``: every figure is a ratio against a baseline timed
in the same process, with BLAS threads pinned (threadpoolctl); the mechanism benchmark
times one release of every registered mechanism.

:mod:`.runner` runs a selection of them and writes the results; :mod:`.engine`,
:mod:`.dask_engine`, :mod:`.fit`, :mod:`.mechanisms` and :mod:`.threads` (batches,
one-vs-rest, thread counts, also under a competing load) are the benchmarks.
"""

__all__: list[str] = []
