"""Checks at the doors: arguments are validated where they enter the library (``objpert.plan``,
an estimator's ``fit`` through scikit-learn's constraints, the command line, the file
loader), and the one deliberate re-check is the re-derivation of a plan before its release.

What "one validation of epsilon" means here. The validation layer is
``objpert/_validation.py`` (its checks and rules, not the wrappers of the ``validated`` and
``numeric_guard`` decorators), the library's scikit-learn constraints
(``objpert/preprocessing/_parameters.py``) and scikit-learn's
``sklearn/utils/_param_validation.py``. One validation of epsilon is one outermost call
into that layer whose arguments hold the sentinel epsilon (a float equal to it, or a dict
or tuple holding it: scikit-learn's parameter dict); calls nested in such a call
(``check_positive`` -> ``_real``, scikit-learn's constraint -> :class:`Number`) are part of
the same validation. Building a :class:`objpert.Target` (``Target.checked``) is a
validation: it calls the layer.

The epsilon is a sentinel no other computation produces (0.73123..., different in every
case, so that no cached plan answers for it), followed by ``sys.setprofile`` from the
constructor to the certificate.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import sklearn

import objpert
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.mechanisms import get

SRC = Path(__file__).resolve().parents[1] / "src"
_OBJ = os.path.dirname(objpert.__file__) + os.sep
_LAYER = {
    _OBJ + "_validation.py",
    _OBJ + os.path.join("preprocessing", "_parameters.py"),
    os.path.join(os.path.dirname(sklearn.__file__), "utils", "_param_validation.py"),
}
_WRAPPERS = {"door", "wrapper", "decorate", "validated", "numeric_guard"}
_CALL_SITE = re.compile(r"\bcheck_[A-Za-z0-9_]+\(")
_DEF = re.compile(r"^\s*def\s")
_SENTINELS = itertools.count(1)
MAX_CALL_SITES = 150


def call_sites() -> list[str]:
    """Every ``check_*(`` call in src (``def`` lines excluded), as ``path:line``."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _CALL_SITE.search(line) and not _DEF.match(line):
                out.append(f"{path.relative_to(SRC)}:{i}")
    return out


def test_check_calls_are_few():
    """Validation sits at the doors: at most MAX_CALL_SITES check calls in the library."""
    sites = call_sites()
    assert len(sites) <= MAX_CALL_SITES, f"{len(sites)} check_* calls in src"


# ---------------------------------------------------------------- the epsilon trace


def _in_layer(frame) -> bool:
    return frame.f_code.co_filename in _LAYER and frame.f_code.co_name not in _WRAPPERS


def _holds(frame, value: float) -> bool:
    for v in frame.f_locals.values():
        if isinstance(v, float) and v == value:
            return True
        if isinstance(v, dict | tuple | list):
            items = v.values() if isinstance(v, dict) else v
            if any(isinstance(x, float) and x == value for x in items):
                return True
    return False


def validations_of(value: float, run) -> list[list[str]]:
    """The validations of ``value`` while ``run()`` runs (module docstring): for each, the
    names of its frames, innermost first (``file:function``)."""
    found: list[list[str]] = []

    def profile(frame, event, arg):
        if event != "call" or not _in_layer(frame) or not _holds(frame, value):
            return
        f = frame.f_back
        while f is not None:
            if _in_layer(f) and _holds(f, value):
                return  # nested in a validation already counted
            f = f.f_back
        chain, f = [], frame
        while f is not None:
            name = f.f_code.co_filename.replace(_OBJ, "objpert/").split("site-packages/")[-1]
            chain.append(f"{name}:{f.f_code.co_name}")
            f = f.f_back
        found.append(chain)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            run()
        finally:
            sys.setprofile(None)
    return found


def _rows(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X[:, 0] > 0).astype(int), np.digitize(X[:, 0], [-0.2, 0.2])


X, Y, Y3 = _rows()
_ESTIMATOR_DOOR = "sklearn/utils/_param_validation.py:validate_parameter_constraints"
_PLAN_DOOR = "objpert/mechanisms/_registry.py:plan"
_REDERIVATION = "objpert/certify/_plan.py:rederive_plan"
_PEER_REDERIVATION = ":check_peer_plan"  # a peer's plan re-derived before its release
_MULTINOMIAL_REDERIVATION = ":check_multinomial_plan"


def _estimator(**kw):
    def run(eps):
        PrivateLogisticRegression(epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0, **kw).fit(
            X, Y3 if "classes" in kw else Y
        )

    return run


def _robust(eps):
    PrivateRobustRegression(epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0).fit(
        X, 0.5 * X[:, 0]
    )


def _per_person(eps):
    """One privacy unit of up to two rows (Theorem C.13 for k rows)."""
    PrivateLogisticRegression(
        epsilon=eps, delta=1e-6, data_norm=1.0, random_state=0, max_rows_per_unit=2
    ).fit(X, Y, privacy_unit=np.arange(len(X)) // 2)


def _planned(mechanism, **options):
    def run(eps):
        plan = objpert.plan(
            mechanism, loss="logistic", n=len(X), d=X.shape[1] + 1, zeta=np.sqrt(2.0),
            epsilon=eps, delta=1e-6, **options,
        )  # fmt: skip
        Xi = np.hstack([X, np.ones((len(X), 1))])
        get(mechanism).release(Xi, Y, plan, rng=np.random.default_rng(0))

    return run


CASES = [
    pytest.param(_estimator(), _ESTIMATOR_DOOR, _REDERIVATION, id="logistic"),
    pytest.param(
        _estimator(calibration="corollary413"),
        _ESTIMATOR_DOOR,
        _REDERIVATION,
        id="logistic-corollary413",
    ),
    pytest.param(_robust, _ESTIMATOR_DOOR, _REDERIVATION, id="robust"),
    pytest.param(_per_person, _ESTIMATOR_DOOR, _REDERIVATION, id="per-person"),
    pytest.param(_planned("watkins_arora"), _PLAN_DOOR, _REDERIVATION, id="plan-watkins_arora"),
    pytest.param(_planned("amp"), _PLAN_DOOR, _PEER_REDERIVATION, id="plan-amp"),
    pytest.param(
        _estimator(classes=[0, 1, 2], multi_class="multinomial"),
        _ESTIMATOR_DOOR,
        _MULTINOMIAL_REDERIVATION,
        id="multinomial",
    ),
    pytest.param(_estimator(classes=[0, 1, 2], multi_class="ovr"), _ESTIMATOR_DOOR, None, id="ovr"),
]


@pytest.mark.parametrize(("run", "door", "rederivation"), CASES)
def test_epsilon_is_validated_at_the_door_and_at_the_rederivation(run, door, rederivation):
    """The sentinel epsilon is validated once at the door and, where the release re-derives
    a plan at that epsilon, once there (``rederivation``); nowhere else. (The releases of a
    one-vs-rest fit are re-derived at their own epsilon_i, so its epsilon is checked at the
    door only.)"""
    eps = 0.7312345 + 1e-9 * next(_SENTINELS)  # a new epsilon: no cached plan answers
    seen = validations_of(eps, lambda: run(eps))
    where = [chain[0] + " <- " + " <- ".join(c.split(":")[1] for c in chain[1:6]) for chain in seen]
    expected = 1 if rederivation is None else 2
    assert len(seen) == expected, "epsilon validated at:\n" + "\n".join(where)
    assert door in seen[0], where
    if rederivation is not None:
        assert rederivation in " ".join(seen[1]), where


def test_the_trace_sees_a_validation_in_the_middle():
    """The trace counts a check anywhere (it would have caught the old re-checks): a
    public certificate function called on the sentinel is one more validation."""
    from objpert.certify import problem, theorem_c13

    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=0.1)
    eps = 0.7312399
    seen = validations_of(eps, lambda: theorem_c13.certify(pc, 0.5, 100, eps, u=3.0))
    assert len(seen) == 1 and seen[0][0] == "objpert/_validation.py:check_positive"
