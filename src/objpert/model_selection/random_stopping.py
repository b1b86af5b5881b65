"""Random stopping: private selection on all the rows for a constant factor of epsilon.

The procedure (Liu & Talwar 2019, Section 3, "random stopping"): draw K from the geometric
law on {1, 2, ...} with stopping probability gamma = 1 / runs_mean (a public constant),
run a randomized algorithm Q K times independently, and output the run whose score is
highest. Here Q picks a grid point uniformly at random, trains it on ALL rows by its own
private release, and scores the released model privately; its output is (model, noisy
score). Neither K nor the other runs is released.

The guarantee, from public constants only:

- **Pure candidates** (Liu & Talwar 2019, Theorem 3.2; Theorem 1.3 in their
  introduction): if Q is epsilon_c-DP, the random-stopping output is 3 epsilon_c-DP,
  for every gamma in (0, 1]. The runs' outputs must be totally ordered by the score.
- **Approximate candidates** (a corollary of that theorem, proved below): if Q is
  (epsilon_c, delta_c)-DP, the output is (3 epsilon~, (1 + e^{3 epsilon~}) p)-DP with
  epsilon~ = epsilon_c + log(1 / (1 - delta_c)) and p = 1 - E[(1 - delta_c)^K]
  = delta_c M / (1 + delta_c (M - 1)), M = E[K] = 1 / gamma.

Proof of the corollary. Fix neighbours x, x' and let q, q' be the laws of one run's output.
With m = min(q, e^{eps_c} q') and m' = min(q', e^{eps_c} q) (as measures): m <= e^{eps_c} m'
and m' <= e^{eps_c} m everywhere, and their masses are 1 - a and 1 - a' with
a = int (q - e^{eps_c} q')_+ <= delta_c and a' <= delta_c (Q is (eps_c, delta_c)-DP both
ways). So q = (1 - a) P + a B with P = m / (1 - a), likewise q' = (1 - a') P' + a' B', and
P, P' are epsilon~-indistinguishable ((1 - a') / (1 - a) <= 1 / (1 - delta_c)). Draw each
run from B with probability a (a "bad" run), else from P. The procedure that redraws
every bad run from P is random stopping over P, P': 3 epsilon~-indistinguishable by the
theorem (applied to the mechanism x -> P, x' -> P'). It differs from the real one only if
one of the K runs is bad, probability 1 - E[(1 - a)^K] <= p (K is independent of the
runs). Hence for every event S, with A~ the redrawn procedure,
Pr[A(x) in S] <= Pr[A~(x) in S] + p <= e^{3 eps~} Pr[A~(x') in S] + p
<= e^{3 eps~} (Pr[A(x') in S] + p) + p.

Calibration inverts the bound: delta_c = delta / ((1 + e^epsilon) M - delta (M - 1)) and
epsilon_c = epsilon / 3 - log(1 / (1 - delta_c)), each rounded down (one ulp at a time)
until the bound meets the target. Every step is checked against exact output laws of the
whole procedure in tests/test_random_stopping.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.accounting.composition import basic
from objpert.certify.certificate import budget_text
from objpert.exceptions import ParameterError
from objpert.validation import check_int, check_nonnegative, check_positive, check_unit

__all__ = [
    "EPSILON_FACTOR",
    "LAW",
    "RandomStoppingCertificate",
    "bad_run_probability",
    "candidate_budget",
    "draw_runs",
    "random_stopping_budget",
    "random_stopping_certificate",
    "runs_pmf",
    "search_certificate",
]

#: The geometric law of the number of runs (Liu & Talwar 2019, random stopping).
LAW = "geometric"
#: epsilon of the output over epsilon of one run (Liu & Talwar 2019, Theorem 3.2).
EPSILON_FACTOR = 3.0

THEOREM = (
    "random stopping (Liu & Talwar 2019, Theorem 3.2: 3 epsilon_c for epsilon_c-DP runs; "
    "delta_c by the coupling corollary of objpert.model_selection.random_stopping)"
)


def _check_runs_mean(runs_mean: Any) -> int:
    """The mean number of runs M = 1 / gamma: a public integer >= 1 (the stopping coin
    is then an exact uniform integer below M)."""
    return check_int("runs_mean", runs_mean, 1)


def runs_pmf(k: Any, runs_mean: int) -> np.ndarray:
    """P(K = k) = gamma (1 - gamma)^(k - 1) for k >= 1 (0 below), gamma = 1 / runs_mean."""
    m = _check_runs_mean(runs_mean)
    k = np.asarray(k, dtype=float)
    gamma = 1.0 / m
    with np.errstate(divide="ignore", invalid="ignore"):
        out = gamma * np.power(1.0 - gamma, k - 1.0)
    return np.where(k >= 1, out, 0.0)


def draw_runs(runs_mean: int, generator: np.random.Generator) -> int:
    """K on {1, 2, ...} with P(K = k) = gamma (1 - gamma)^(k - 1), gamma = 1 / runs_mean:
    after each run a uniform integer below runs_mean stops the search when it is 0 (an
    exact coin: numpy's bounded integers reject, no floating point enters the law)."""
    m = _check_runs_mean(runs_mean)
    if not isinstance(generator, np.random.Generator):
        raise ParameterError(f"generator must be a numpy Generator; got {type(generator).__name__}")
    k = 1
    while m > 1 and int(generator.integers(m)) != 0:
        k += 1
    return k


def bad_run_probability(candidate_delta: float, runs_mean: int) -> float:
    """p = 1 - E[(1 - delta_c)^K] = delta_c M / (1 + delta_c (M - 1)) for the geometric K
    of mean M: the probability that one of the K runs falls in the delta_c part of the
    candidates' law (the proof in the module docstring)."""
    d = check_unit("candidate_delta", candidate_delta)
    m = _check_runs_mean(runs_mean)
    return min(1.0, d * m / (1.0 + d * (m - 1)))


def random_stopping_certificate(
    candidate_epsilon: float, candidate_delta: float, runs_mean: int, *, pure: bool = False
) -> tuple[float, float]:
    """(epsilon, delta) of random stopping over (epsilon_c, delta_c)-DP runs with a
    geometric number of runs of mean ``runs_mean``: (3 epsilon~, (1 + e^{3 epsilon~}) p),
    epsilon~ = epsilon_c + log(1 / (1 - delta_c)), p = :func:`bad_run_probability` (Liu &
    Talwar 2019, Theorem 3.2, and the corollary in the module docstring). ``pure=True`` is
    the theorem itself (3 epsilon_c, 0): it refuses delta_c > 0.
    """
    eps_c = check_nonnegative("candidate_epsilon", candidate_epsilon)
    if not math.isfinite(eps_c):
        raise ParameterError(f"candidate_epsilon must be finite; got {candidate_epsilon!r}")
    d = check_unit("candidate_delta", candidate_delta)
    m = _check_runs_mean(runs_mean)
    if pure and d > 0.0:
        raise ParameterError(
            "pure=True is for pure-DP runs (delta_c = 0); these runs are "
            f"(epsilon, delta)-DP with delta_c = {d:.3g} (objective perturbation with "
            "Gaussian noise is never pure DP): use pure=False"
        )
    eps = EPSILON_FACTOR * (eps_c - math.log1p(-d))  # 3 epsilon~ (module docstring)
    if d == 0.0:
        return eps, 0.0
    return eps, min(1.0, (1.0 + math.exp(eps)) * bad_run_probability(d, m))


def random_stopping_budget(epsilon: float, delta: float, runs_mean: int) -> tuple[float, float]:
    """(epsilon_c, delta_c) of each run so that :func:`random_stopping_certificate` meets
    the total (epsilon, delta): delta_c = delta / ((1 + e^epsilon) M - delta (M - 1)) and
    epsilon_c = epsilon / 3 - log(1 / (1 - delta_c)), each rounded down (one ulp at a time)
    until the bound is within the target. delta = 0 asks for pure-DP runs (delta_c = 0)."""
    eps = check_positive("epsilon", epsilon)
    if not math.isfinite(eps):
        raise ParameterError(f"epsilon must be finite; got {epsilon!r}")
    dlt = check_unit("delta", delta)
    if dlt >= 1.0:
        raise ParameterError("delta must be < 1: a release with delta = 1 has no guarantee")
    m = _check_runs_mean(runs_mean)
    d_c = dlt / ((1.0 + math.exp(eps)) * m - dlt * (m - 1))
    eps_c = eps / EPSILON_FACTOR + math.log1p(-d_c)
    if eps_c <= 0.0:
        raise ParameterError(
            f"(epsilon, delta) = ({epsilon!r}, {delta!r}) leaves no epsilon for the runs"
        )
    for _ in range(64):
        got_eps, got_delta = random_stopping_certificate(eps_c, d_c, m)
        if got_eps <= eps and got_delta <= dlt:
            return eps_c, d_c
        if got_eps > eps:
            eps_c = math.nextafter(eps_c, 0.0)
        if got_delta > dlt:
            d_c = math.nextafter(d_c, 0.0)
    raise ParameterError(  # pragma: no cover - a few ulps always suffice
        f"no per-run budget meets (epsilon, delta) = ({epsilon!r}, {delta!r})"
    )


def candidate_budget(candidate_epsilon: float, score_fraction: float) -> tuple[float, float]:
    """(epsilon of the model, epsilon of the score) of one run: the score takes
    ``score_fraction`` of epsilon_c, the model the rest, and by basic composition (Dwork &
    Roth 2014, Theorem 3.16) their sum is at most epsilon_c."""
    eps_c = check_positive("candidate_epsilon", candidate_epsilon)
    frac = check_positive("score_fraction", score_fraction)
    if frac >= 1.0:
        raise ParameterError(f"score_fraction must be in (0, 1); got {score_fraction!r}")
    score = frac * eps_c
    model = eps_c - score
    while basic([model, score], [0.0, 0.0])[0] > eps_c:
        model = math.nextafter(model, 0.0)
    return model, score


@dataclass(frozen=True)
class RandomStoppingCertificate:
    """The guarantee of a random-stopping search: the chosen grid point, its model and
    its noisy score, for a run count K that is never released.

    ``candidate_epsilon`` / ``candidate_delta``: one run (a grid point drawn uniformly, its
    model release of ``model_epsilon`` and at most ``candidate_delta``, its score release
    of ``score_epsilon``, composed by basic composition); ``epsilon`` / ``delta``: the
    search (:func:`random_stopping_certificate`). ``chosen`` is the chosen model's own
    certificate; ``n_rows`` the public number of rows every run trained on.
    """

    method: str
    epsilon: float
    delta: float
    candidate_epsilon: float
    candidate_delta: float
    model_epsilon: float
    score_epsilon: float
    runs_mean: int
    n_candidates: int
    n_rows: int
    chosen: Any
    law: str = LAW
    not_public: tuple[str, ...] = ()

    @property
    def certified(self) -> bool:
        return bool(getattr(self.chosen, "certified", False)) and self.delta < 1.0

    @property
    def covers_structure(self) -> bool:
        return not self.not_public

    @property
    def pure(self) -> bool:
        return self.delta == 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "certified": self.certified,
            "candidate_epsilon": self.candidate_epsilon,
            "candidate_delta": self.candidate_delta,
            "model_epsilon": self.model_epsilon,
            "score_epsilon": self.score_epsilon,
            "law": self.law,
            "runs_mean": self.runs_mean,
            "n_candidates": self.n_candidates,
            "n_rows": self.n_rows,
            "chosen": self.chosen.to_dict() if hasattr(self.chosen, "to_dict") else None,
            "not_public": list(self.not_public),
        }

    def summary(self) -> str:
        """What :func:`str` prints: the guarantee in a few lines."""
        return str(self)

    def __repr__(self) -> str:
        return (
            f"RandomStoppingCertificate(candidates={self.n_candidates}, "
            f"runs_mean={self.runs_mean}, epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"certified={self.certified})"
        )

    def __str__(self) -> str:
        status = "certified" if self.certified else "NOT certified"
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} (private selection among "
            f"{self.n_candidates} candidates by random stopping, every run on all "
            f"{self.n_rows} rows)",
            f"  {self.method}",
            f"  runs: {self.law} law of mean {self.runs_mean} (the count is not released); "
            f"each run {budget_text(self.candidate_epsilon, self.candidate_delta)} = model "
            f"epsilon {self.model_epsilon:.4g} + noisy score epsilon {self.score_epsilon:.4g}",
            "  covers: the chosen grid point, its model and its noisy score; not the other "
            "runs (never released)",
        ]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)


def search_certificate(
    candidate_epsilon: float,
    candidate_delta: float,
    model_epsilon: float,
    score_epsilon: float,
    runs_mean: int,
    n_candidates: int,
    n_rows: int,
    chosen: Any,
) -> RandomStoppingCertificate:
    """The certificate of a random-stopping search from its public budget (the guarantee by
    :func:`random_stopping_certificate`) and the chosen model's own certificate: what a
    search records and what a model file's record is recomputed into."""
    eps, delta = random_stopping_certificate(candidate_epsilon, candidate_delta, runs_mean)
    return RandomStoppingCertificate(
        method=THEOREM,
        epsilon=eps,
        delta=delta,
        candidate_epsilon=candidate_epsilon,
        candidate_delta=candidate_delta,
        model_epsilon=model_epsilon,
        score_epsilon=score_epsilon,
        runs_mean=runs_mean,
        n_candidates=n_candidates,
        n_rows=n_rows,
        chosen=chosen,
        not_public=tuple(chosen.not_public),
    )
