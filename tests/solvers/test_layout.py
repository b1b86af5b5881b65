"""The solvers package: its names, and the Newton solver the peer releases re-export."""

from __future__ import annotations

import importlib
import warnings

import objpert._solvers as solvers
from objpert._solvers import newton, splitting
from objpert.mechanisms import _peers as mpeers


def test_solvers_exports_davis_yin_and_newton_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(solvers)
    for module in (splitting, newton):
        for name in module.__all__:
            assert getattr(solvers, name) is getattr(module, name), name
    assert callable(solvers.davis_yin)  # the function, not a module of that name


def test_the_peer_releases_reexport_the_newton_solver():
    for name in ("DENSE_NEWTON_MAX_D", "solve_to_tolerance", "solve_batch_to_tolerance"):
        assert name in mpeers.__all__
        assert getattr(mpeers, name) is getattr(newton, name)
