"""The minimal-N search against brute force (objpert.certify), against independent computations."""

from __future__ import annotations

import math
import re
import time

import mpmath
import numpy as np
import pytest
from certify_cases import (
    SETTINGS,
    msg_of,
)

from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _truncation as truncation
from objpert.certify import min_iterations, problem
from objpert.exceptions import ObjpertError, UnreachableTargetError

mpf = mpmath.mpf


def _brute_first(pc, sigma, eps, delta, u, form, kind, cap=20_000):
    for N in range(1, cap + 1):
        if form == "c13":
            c = theorem_c13.certify(pc, sigma, N, eps, u=u, truncation=kind)
        else:
            c = theorem41.certify(pc, sigma, u, N, eps, truncation=kind)
        if c.certified and c.delta <= delta:
            return N, c
    raise AssertionError("brute force found nothing")


SEARCH_CASES = [
    (SETTINGS[0], "c13", "paper"),
    (SETTINGS[0], "c13", "exact"),
    (SETTINGS[0], "theorem41", "paper"),
    (SETTINGS[1], "c13", "paper"),
    (SETTINGS[1], "theorem41", "exact"),
    (SETTINGS[2], "c13", "exact"),
    (SETTINGS[2], "theorem41", "paper"),
]


@pytest.mark.parametrize(
    ("s", "form", "kind"), SEARCH_CASES, ids=[f"{s.name}-{f}-{k}" for s, f, k in SEARCH_CASES]
)
def test_min_iterations_equals_brute_force(s, form, kind):
    pc, sigma, u = s.pc, s.sigma, s.u
    for eps, delta in ((1.0, 1e-6), (2.0, 1e-7)):
        found = min_iterations(pc, sigma, eps, delta, u=u, form=form, truncation=kind)
        N, brute = _brute_first(pc, sigma, eps, delta, u, form, kind)
        assert found.iterations == N
        assert found.form == form and found.certified and found.delta <= delta
        assert found.delta == brute.delta
        if form == "theorem41":
            assert theorem41.threshold_iterations(pc, sigma, u) <= N


def test_min_iterations_respects_n_max_and_explicit_radii():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    first = min_iterations(pc, sigma, 1.0, 1e-6, u=u).iterations
    assert min_iterations(pc, sigma, 1.0, 1e-6, u=u, n_max=first).iterations == first
    with pytest.raises(UnreachableTargetError, match="iterations"):
        min_iterations(pc, sigma, 1.0, 1e-6, u=u, n_max=first - 1)
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    by_radius = min_iterations(pc, sigma, 1.0, 1e-6, r=r, r_outer=r_outer)
    assert by_radius.iterations == first


def test_unreachable_targets_explain_what_to_change():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    s_inf = pc.G**2 / (2 * sigma**2) + math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
    # epsilon below the N -> infinity floor: more noise is needed
    with pytest.raises(UnreachableTargetError, match="sigma") as err:
        min_iterations(pc, sigma, 0.5 * s_inf, 1e-6, u=u)
    assert "s_inf" in str(err.value)
    with pytest.raises(UnreachableTargetError, match="sigma"):
        min_iterations(pc, sigma, 0.5 * s_inf, 1e-6, u=u, form="theorem41")
    # epsilon below the log-determinant term: no sigma helps; mu (or n) must grow
    log_det = math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
    with pytest.raises(UnreachableTargetError, match="mu"):
        min_iterations(pc, sigma, 0.5 * log_det, 1e-6, u=u)
    # delta below the truncation mass: u must grow
    for kind in ("paper", "exact"):
        mass = truncation.truncation_mass(
            sigma, pc.d_star, truncation.radius_from_u(sigma, pc.d_star, u), kind
        )
        with pytest.raises(UnreachableTargetError, match=r"increase u") as err:
            min_iterations(pc, sigma, 1.0, 0.5 * mass, u=u, truncation=kind)
        assert "truncation mass" in str(err.value)
    # the hints are actionable: just past the suggested sigma (or u) the target is reachable
    for eps in (0.01, 0.02):
        with pytest.raises(UnreachableTargetError) as err:
            min_iterations(pc, sigma, eps, 1e-6, u=u)
        need = float(re.search(r"sigma to more than ([0-9.e+-]+)", msg_of(err)).group(1))
        assert min_iterations(pc, 1.02 * need, eps, 1e-6, u=u).certified
        with pytest.raises(UnreachableTargetError, match="sigma"):
            min_iterations(pc, 0.98 * need, eps, 1e-6, u=u)
    with pytest.raises(UnreachableTargetError) as err:
        min_iterations(pc, sigma, 2.0, 1e-9, u=u)
    need_u = float(re.search(r"increase u above ([0-9.e+-]+)", msg_of(err)).group(1))
    assert need_u == pytest.approx(math.sqrt(2 * math.log(1e9)), rel=1e-3)
    assert min_iterations(pc, sigma, 2.0, 1e-9, u=1.02 * need_u).certified
    for exc in (UnreachableTargetError, ObjpertError, ValueError):
        with pytest.raises(exc):
            min_iterations(pc, sigma, 1e-4, 1e-6, u=u)


def _best_time(f, repeat: int = 3) -> float:
    """The least CPU time of this process over `repeat` calls (robust to other processes)."""
    f()  # warm up
    best = math.inf
    for _ in range(repeat):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best


def test_search_and_certify_are_fast():
    """Example 4.8's setting: a search up to 10^6 and single certificates at N = 10^6."""
    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=0.01)
    sigma, u = 1e-5, 6.0
    for form in ("c13", "theorem41"):
        c = min_iterations(pc, sigma, 1.0, 1e-7, u=u, form=form)
        assert c.certified and c.delta <= 1e-7
        assert _best_time(lambda f=form: min_iterations(pc, sigma, 1.0, 1e-7, u=u, form=f)) < 0.05
    assert _best_time(lambda: theorem_c13.certify(pc, sigma, 10**6, 1.0, u=u)) < 0.05
    assert _best_time(lambda: theorem41.certify(pc, sigma, u, 10**6, 1.0)) < 0.05
    assert theorem_c13.certify(pc, sigma, 10**6, 1.0, u=u).certified
    assert theorem41.certify(pc, sigma, u, 10**6, 1.0).certified


def test_vectorised_delta_n_over_a_million_iterations():
    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=0.01)
    sigma, u = 1e-5, 6.0
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 10**6 + 1)
    elapsed = []
    for _ in range(2):  # the CPU time of this process, the better of two runs
        t = time.process_time()
        d = theorem_c13.delta_n(pc, sigma, r, r_outer, Ns, 1.0)
        elapsed.append(time.process_time() - t)
    assert min(elapsed) < 1.0
    assert d.shape == Ns.shape and np.all(np.isfinite(d))
    assert np.all((d >= 0) & (d <= 1))
    assert d[0] == 1.0 and d[-1] < 1e-7
    first = int(np.argmax(d <= 1e-7)) + 1
    assert first == min_iterations(pc, sigma, 1.0, 1e-7, u=u).iterations
    d41 = theorem41.delta(pc, sigma, u, Ns, 1.0)
    assert np.all(np.isfinite(d41)) and np.all((d41 >= 0) & (d41 <= 1))


@pytest.mark.parametrize("form", ["bogus", None, "limit"])
def test_an_unknown_form_is_refused_at_the_door(form):
    """The form is checked before anything else: at a u whose truncation mass exceeds
    delta the answer is still "unknown form", not "unreachable target"."""
    from objpert.exceptions import ParameterError

    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=0.05)
    with pytest.raises(ParameterError, match="form must be one of"):
        min_iterations(pc, 2.0, 1.0, 1e-6, u=3.0, form=form)
