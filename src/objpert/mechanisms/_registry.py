"""The mechanism registry: every private training mechanism under one name.

Each :class:`Mechanism` says how to plan a release from public constants, how to run one
release and a batch of independent releases, how to read the certificate of a plan, and
what an audit needs (the loss its canonical problem uses). The comparison
(``objpert compare``), the audit (``objpert audit``), the command line and the benchmarks
look mechanisms up here by name instead of dispatching on their own.

Adding a mechanism is one module (its planner and release) plus one :func:`register` call
in :mod:`objpert.mechanisms._builtin`, which the package imports (see docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from objpert.accounting._certificate import Certificate
from objpert.accounting._plan import Plan, PublicConstants, Target
from objpert.exceptions import ParameterError

__all__ = ["Mechanism", "for_plan", "get", "names", "plan", "register"]


@dataclass(frozen=True)
class Mechanism:
    """One private mechanism and what the library needs to run, compare and audit it.

    ``plan(loss=, n=, d=, zeta=, epsilon=, delta=, **options)`` returns a plan computed
    from public constants only; ``release(X, y, plan, rng=None, **options)`` one release;
    ``release_batch(X, y, plan, draws, rng=None, **options)`` ``draws`` independent
    releases through the same code (for audits). ``certificate(plan)`` is the plan's
    certificate (an object with ``epsilon``, ``delta`` and ``certified``). ``losses``:
    the losses the mechanism accepts; ``audit_loss``: the loss of its audit problem.
    ``release_map`` (optional): where the audit finds the mechanism's release map for a
    fixed noise ("module:attribute", resolved by :meth:`load_release_map`; the Watkins &
    Arora release is a map of one z). It is named, not imported, because the audit sits
    above the mechanisms. ``multiclass``: the mechanism releases a (d, K) weight matrix
    for K classes at once (labels 0, ..., K - 1; its plan takes ``n_classes``), so the
    comparisons, audits and benchmarks of one weight vector do not list it (:func:`names`).
    """

    name: str
    title: str
    reference: str
    plan_type: type
    plan: Callable[..., Any]
    release: Callable[..., Any]
    release_batch: Callable[..., Any]
    losses: tuple[str, ...] = ("logistic", "robust")
    audit_loss: str = "logistic"
    release_map: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    multiclass: bool = False

    def certificate(self, plan: Plan) -> Certificate:
        """The certificate the plan carries."""
        if not isinstance(plan, self.plan_type) or plan.mechanism != self.name:
            raise ParameterError(
                f"{self.name} needs a {self.plan_type.__name__}; got {type(plan).__name__}"
            )
        return plan.certificate

    def load_release_map(self) -> Callable[..., Any] | None:
        """The factory ``plan -> release map`` named by ``release_map`` (None if none)."""
        if self.release_map is None:
            return None
        import importlib

        module, _, attribute = self.release_map.partition(":")
        obj: Any = importlib.import_module(module)
        for part in attribute.split("."):
            obj = getattr(obj, part)
        return obj


_REGISTRY: dict[str, Mechanism] = {}


def register(mechanism: Mechanism) -> Mechanism:
    """Add ``mechanism`` under its name (a name may be registered once)."""
    if mechanism.name in _REGISTRY and _REGISTRY[mechanism.name] is not mechanism:
        raise ParameterError(f"a mechanism named {mechanism.name!r} is already registered")
    _REGISTRY[mechanism.name] = mechanism
    return mechanism


def names(*, multiclass: bool = False) -> tuple[str, ...]:
    """The registered mechanisms' names, in registration order: those releasing one weight
    vector, or (``multiclass=True``) those releasing a weight matrix for K classes."""
    return tuple(name for name, mech in _REGISTRY.items() if mech.multiclass == multiclass)


def for_plan(plan: Plan) -> Mechanism:
    """The registered mechanism that runs ``plan``."""
    mech = _REGISTRY.get(plan.mechanism) if isinstance(plan, Plan) else None
    if mech is None or not isinstance(plan, mech.plan_type):
        raise ParameterError(f"no registered mechanism releases a {type(plan).__name__}")
    return mech


def plan(
    mechanism: str,
    *,
    loss: str,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    **options: Any,
) -> Plan:
    """The plan of one release of the registered ``mechanism`` at (epsilon, delta), from
    public constants only: the loss, the number of rows n (public, as in Watkins & Arora
    2026), the dimension d (intercept column included) and the row-norm bound zeta.

    The one planning entry point of the library (``objpert.plan``). Every option has a
    public default rule, so every registered mechanism plans from these keywords alone;
    ``options`` are the mechanism's own (``mu``, LOP-Clip's ``clip``, ...: the planner of
    each, named in :func:`names`' entries' ``reference``). Watkins & Arora's are the
    estimators' settings (``calibration``, ``mu``, ``comparator_norm``, ``max_iter``,
    ``scale``) with the estimators' defaults, so that a fitted estimator's ``plan_`` is
    this plan for its public constants and settings. Every plan is an
    :class:`objpert.Plan`. The target and the public constants are checked here, once
    (:class:`objpert.Target`, :class:`objpert.PublicConstants`).
    """
    mech = get(mechanism)
    target = Target.checked(epsilon, delta)
    public = PublicConstants.checked(loss, n, d, zeta)
    try:
        return mech.plan(
            loss=public.loss, n=public.n, d=public.d, zeta=public.zeta,
            epsilon=target.epsilon, delta=target.delta, **options,
        )  # fmt: skip
    except TypeError as exc:  # an option the planner does not take
        if "unexpected keyword argument" not in str(exc):
            raise
        raise ParameterError(f"bad option for mechanism {mechanism!r}: {exc}") from None


def get(name: str) -> Mechanism:
    """The mechanism called ``name``."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ParameterError(
            f"mechanism must be one of {', '.join(_REGISTRY)}; got {name!r}"
        ) from None
