"""Public constants of a Watkins & Arora (2026) problem (Section 3.1, Assumptions 1-3).

Everything here is a function of the public values n, d, zeta, mu, eta, the loss and
the neighbouring relation (``rows``: datasets that differ in up to that many rows, one
privacy unit's; :mod:`objpert.certify._unit_rows` derives the three constants it changes):
no data, no randomness.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from objpert._losses import Loss, get_loss, require_bounded_gradient
from objpert._validation import check_positive, count, optional, validated
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import ParameterError

__all__ = [
    "ProblemConstants",
    "check_scale",
    "problem",
]

_ETA_SLACK = 1e-12  # eta within this relative distance above 1/L is rounding of 1/L


@dataclass(frozen=True)
class ProblemConstants:
    """Public constants of a regularised GLM (eq. 1) run at step size eta (Section 3.2).

    ``L1, L2, L3`` are the loss constants of Assumptions 2-3; the derived
    properties follow Section 3.1: ``L = mu + L2 zeta^2``, ``M = L3 zeta^3``,
    ``G = 2 L1 zeta / n``, ``Delta_H = 2 L2 zeta^2``, ``rho = 1 - eta mu``,
    ``d_star = min(d, n + 1)`` (eq. 2), ``B = 1/mu`` (Lemma A.9).

    ``rows`` = k > 1: the neighbours differ in up to k rows (one privacy unit of up to k
    rows replaced); then ``G = 2 k L1 zeta / n``, ``d_star = min(d, n + k)`` and the
    log-determinant term is k log(1 + Delta_H / (2 n mu)), every other constant unchanged
    (the derivation: :mod:`objpert.certify._unit_rows`).
    """

    loss: str
    L1: float
    L2: float
    L3: float
    n: int
    d: int
    zeta: float
    mu: float
    eta: float
    loss_params: tuple[tuple[str, float], ...] = ()
    rows: int = 1

    @classmethod
    def from_dict(cls, data: dict) -> ProblemConstants:
        """Inverse of :meth:`to_dict` (JSON turns the loss parameters into lists)."""
        fields = dict(data)
        fields["loss_params"] = tuple(tuple(p) for p in fields.get("loss_params", ()))
        return cls(**fields)

    def loss_object(self) -> Loss:
        """The loss these constants were built for (with its parameters, e.g. the scale)."""
        return get_loss(self.loss, **dict(self.loss_params))

    @property
    def L(self) -> float:
        return self.mu + self.L2 * self.zeta**2

    @property
    def M(self) -> float:
        return self.L3 * self.zeta**3

    @property
    def G(self) -> float:
        """G = 2 L1 zeta / n: the replace-one sensitivity of the mean gradient (Lemma B.5);
        k times it for neighbours that differ in up to k = ``rows`` rows."""
        return self.rows * replace_one_sensitivity(self.L1 * self.zeta) / self.n

    @property
    def L_ell(self) -> float:
        """Per-sample gradient bound L1 zeta, also the bound on ||grad F(0; S)||."""
        return self.L1 * self.zeta

    @property
    def delta_H(self) -> float:
        return 2.0 * self.L2 * self.zeta**2

    @property
    def rho(self) -> float:
        return 1.0 - self.eta * self.mu

    @property
    def log_rho(self) -> float:
        """log(rho) computed as log1p(-eta mu), accurate when eta mu is tiny."""
        return math.log1p(-self.eta * self.mu)

    @property
    def d_star(self) -> int:
        """min(d, n + k): the dimension of the span of both datasets' features (eq. 2)."""
        return min(self.d, self.n + self.rows)

    @property
    def B(self) -> float:
        return 1.0 / self.mu

    @property
    def kappa(self) -> float:
        return self.L / self.mu

    @property
    def min_mg_l(self) -> float:
        """min{1, M G / L}, the factor of eqs. (7)-(8)."""
        return min(1.0, self.M * self.G / self.L)

    @property
    def log_det_term(self) -> float:
        """log(1 + Delta_H / (2 n mu)), the exact-minimizer log-determinant term (Lemma C.6);
        k times it for k = ``rows`` replaced rows."""
        return self.rows * math.log1p(self.delta_H / (2.0 * self.n * self.mu))

    def to_dict(self) -> dict:
        """Every field; ``rows`` only when it is not 1 (replace-one dictionaries are as
        they always were)."""
        out = asdict(self)
        if self.rows == 1:
            del out["rows"]
        return out


def check_scale(loss: Loss, n: int, zeta: float) -> None:
    """Refuse (ParameterError naming zeta) a row bound whose constants L2 zeta^2, L3 zeta^3
    or G = 2 L1 zeta / n leave the float64 range (see :func:`problem`): for the calibrations,
    before they search over mu."""
    _check_representable(loss, n, zeta, 1.0)


def _check_representable(loss: Loss, n: int, zeta: float, mu: float) -> None:
    """Refuse (ParameterError naming zeta or mu) constants whose derived quantities leave the
    float64 range: L2 zeta^2 and L3 zeta^3 overflowing, the sensitivity G = 2 L1 zeta / n
    or the ridge's 1/mu underflowing to 0 or overflowing. Legal in the paper, but no
    certificate can be evaluated for them in double precision."""
    log_zeta = math.log(zeta)
    if 3.0 * log_zeta > _LOG_MAX_SAFE or (loss.L1 and log_zeta - math.log(n) < _LOG_MIN_SAFE):
        raise ParameterError(
            f"zeta = {zeta!r} is too extreme for double precision: the constants L2 zeta^2, "
            f"L3 zeta^3 and G = 2 L1 zeta / n must stay within about 1e-300 and 1e300 "
            f"(rescale the features)"
        )
    if abs(math.log(mu)) > _LOG_MAX_SAFE:
        raise ParameterError(
            f"mu = {mu!r} is too extreme for double precision (1/mu and mu zeta^2 must stay "
            "within about 1e-300 and 1e300)"
        )


_LOG_MAX_SAFE = math.log(1e300)
_LOG_MIN_SAFE = math.log(1e-300)


@validated(
    n=count(2),
    d=count(1),
    rows=count(1),
    zeta=check_positive,
    mu=check_positive,
    eta=optional(check_positive),
)
def problem(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    mu: float,
    eta: float | None = None,
    rows: int = 1,
    **loss_params: float,
) -> ProblemConstants:
    """Validate public constants and build :class:`ProblemConstants`.

    ``rows``: the neighbours differ in up to this many rows (1: replace-one).

    ``eta`` defaults to 1/L with L = mu + L2 zeta^2. Section 3.2 requires
    0 < eta <= 1/L and eta mu < 1; the loss must have a finite L1 (Assumption 2).
    """
    loss_obj = get_loss(loss, **loss_params)
    require_bounded_gradient(loss_obj, "the Watkins & Arora certificate")
    if rows > n:
        raise ParameterError(f"rows must be at most n = {n}; got {rows!r}")
    _check_representable(loss_obj, n, zeta, mu)
    L = mu + loss_obj.L2 * zeta**2
    if eta is None:
        eta = 1.0 / L
    else:
        if eta > 1.0 / L:
            if eta <= (1.0 / L) * (1.0 + _ETA_SLACK):
                eta = 1.0 / L
            else:
                raise ParameterError(
                    f"eta must be in (0, 1/L] = (0, {1.0 / L:.6g}] with L = mu + L2 zeta^2 = "
                    f"{L:.6g} (Section 3.2); got {eta!r}"
                )
    if eta * mu >= 1.0:
        raise ParameterError(f"eta * mu must be < 1 (Section 3.2); got eta * mu = {eta * mu!r}")
    return ProblemConstants(
        loss=loss_obj.name,
        L1=float(loss_obj.L1),
        L2=float(loss_obj.L2),
        L3=float(loss_obj.L3),
        n=n,
        d=d,
        zeta=zeta,
        mu=mu,
        eta=float(eta),
        loss_params=tuple(sorted(loss_obj.params().items())),
        rows=rows,
    )
