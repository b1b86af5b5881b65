"""What every peer release does first and last: the plan's certificate recomputed and
checked, the data checked against the plan's public constants, and the solve checked
against the plan's public tolerance (no release otherwise)."""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._data import for_plan
from objpert._solvers.newton import solve_batch_to_tolerance, solve_to_tolerance
from objpert.accounting._certificate import ReleaseCertificate
from objpert.exceptions import PrivacyError, ToleranceError
from objpert.mechanisms._certificates import PeerPlan

__all__ = ["check_data", "check_peer_plan", "solve_checked"]

_EPS_REL = 1e-12  # certified epsilon may exceed the target by this relative rounding only


def check_peer_plan(plan: Any, method: str) -> ReleaseCertificate:
    """Recompute the plan's certificate from its public fields; refuse a plan of another
    method, one that does not certify, one whose stored certificate differs from the
    recomputed one, or one whose certificate exceeds its target."""
    if not isinstance(plan, PeerPlan):
        raise PrivacyError(
            f"expected a PeerPlan for {method!r} (objpert.plan); got {type(plan).__name__}"
        )
    if plan.mechanism != method:
        raise PrivacyError(f"this release needs a {method!r} plan; got a {plan.mechanism!r} plan")
    try:
        cert = plan.recertify()
    except (ValueError, TypeError) as exc:
        raise PrivacyError(f"the plan cannot be certified: {exc}") from None
    if not cert.certified:
        raise PrivacyError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if plan.certificate is None or plan.certificate.to_dict() != cert.to_dict():
        raise PrivacyError(
            "the plan's stored certificate differs from the one recomputed from its fields"
        )
    if cert.delta > plan.delta:
        raise PrivacyError(
            f"the plan certifies delta = {cert.delta:.3g} > its target {plan.delta:.3g}"
        )
    if cert.epsilon > plan.epsilon * (1.0 + _EPS_REL):
        raise PrivacyError(
            f"the plan certifies epsilon = {cert.epsilon:.6g} > its target {plan.epsilon:.6g}"
        )
    return cert


def check_data(X: Any, y: Any, plan: PeerPlan, clip: bool):
    """(X, y) checked against the plan's public n, d, zeta and loss: (M, y, n_clipped)."""
    return for_plan(
        X,
        y,
        n=plan.n,
        d=plan.d,
        zeta=plan.zeta,
        label_kind=plan.loss_object().label_kind,
        clip=clip,
    )


def solve_checked(objective, z, plan: PeerPlan) -> tuple[np.ndarray, int]:
    """The minimiser of F + <z, w> for z of shape (d,) (one release) or (d, B) (a batch),
    refused unless every gradient norm meets the plan's tolerance."""
    if z.ndim == 1:
        w, norm, used = solve_to_tolerance(objective, z, plan.tolerance, plan.max_iter)
    else:
        w, norms, used = solve_batch_to_tolerance(objective, z, plan.tolerance, plan.max_iter)
        norm = float(norms.max())
    if not norm <= plan.tolerance:
        raise ToleranceError(
            f"the solver stopped at gradient norm {norm:.3g} > the plan's tolerance "
            f"{plan.tolerance:.3g} after {used} iterations; nothing was released. This "
            "refusal depends on the data: plan a looser public tolerance or a larger "
            "max_iter instead of retrying on the same data"
        )
    return w, used
