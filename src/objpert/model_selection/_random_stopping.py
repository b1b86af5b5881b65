"""Random stopping: private selection on all the rows for a constant factor of epsilon.

The procedure (Liu & Talwar 2019, Section 3, "random stopping"; Papernot & Steinke 2022,
Section 2): draw a run count K from a public law on {1, 2, ...}, run a randomized
algorithm Q K times independently, and output the run whose score is highest. Here Q
picks a grid point uniformly at random, trains it on ALL rows by its own private
release, and scores the released model privately; its output is (model, noisy score).
Neither K nor the other runs is released.

Two laws of K, each with a stopping probability gamma = 1 / q for a public integer q:

- ``"logarithmic"`` (the default): P(K = k) = (1 - gamma)^k / (k log(1/gamma)), the
  truncated negative binomial law of Papernot & Steinke (2022) with eta = 0; its mean is
  (q - 1) / log q, and q is the smallest integer >= 2 whose mean is at least the
  requested ``runs_mean``.
- ``"geometric"``: P(K = k) = gamma (1 - gamma)^(k - 1) (Liu & Talwar 2019; the truncated
  negative binomial with eta = 1), of mean q = ``runs_mean``.

The guarantee, from public constants only:

- **Pure candidates.** If Q is epsilon_c-DP, the output is (2 + eta) epsilon_c-DP:
  3 epsilon_c for the geometric law (Liu & Talwar 2019, Theorem 3.2, for every gamma),
  2 epsilon_c for the logarithmic law. The latter is Papernot & Steinke (2022, Theorem 2)
  in its limit: for an epsilon_c-DP Q, every Renyi divergence of the runs is at most
  epsilon_c, so the output's Renyi divergence of order lambda is at most
  epsilon_c + (1 + eta)(1 - 1/lambda-hat) epsilon_c + (1 + eta) log(1/gamma) / lambda-hat
  + log E[K] / (lambda - 1) for all lambda > 1 and lambda-hat >= 1; letting lambda-hat and
  then lambda grow, the max-divergence (the Renyi divergence grows with its order and
  tends to it: van Erven & Harremoes 2014) is at most (2 + eta) epsilon_c. The runs'
  outputs must be totally ordered by the score.
- **Approximate candidates** (a corollary of those theorems, proved below): if Q is
  (epsilon_c, delta_c)-DP, the output is ((2 + eta) epsilon~, p)-DP with
  epsilon~ = epsilon_c + log(1 / (1 - delta_c)) and p = 1 - E[(1 - delta_c)^K]:
  p = delta_c q / (1 + delta_c (q - 1)) for the geometric law and
  p = log(1 + delta_c (q - 1)) / log q for the logarithmic one. This delta is tight: runs
  that, with probability delta_c, put out under x a top-scoring output that x' never
  produces give the whole procedure that output with probability exactly p under x and 0
  under x' (tests/test_random_stopping.py computes the exact output laws).

Proof of the corollary. Fix neighbours x, x' and let q, q' be the laws of one run's output.
With m = min(q, e^{eps_c} q') and m' = min(q', e^{eps_c} q) (as measures): m <= e^{eps_c} m'
and m' <= e^{eps_c} m everywhere, and their masses are 1 - a and 1 - a' with
a = int (q - e^{eps_c} q')_+ <= delta_c and a' <= delta_c (Q is (eps_c, delta_c)-DP both
ways). Let P = m / (1 - a) and P' = m' / (1 - a'); as (1 - a') / (1 - a) <= 1 / (1 - delta_c),
P <= e^{eps~} P' and P' <= e^{eps~} P. Since a <= delta_c, q = (1 - delta_c) P + delta_c B
for a probability law B (B mixes the remainder (q - m) / delta_c with (delta_c - a) / delta_c
of P), and likewise q' = (1 - delta_c) P' + delta_c B': the SAME weight 1 - delta_c on the
good part under x and x'. Draw each run from P with probability 1 - delta_c (a "good" run),
else from B. Given K = k and all k runs good, the runs are k independent draws from P, so
with Pi_k(S) the probability that the best of k draws from P lies in S,

  Pr[A(x) in S] <= Pr[A(x) in S, all runs good] + Pr[some run bad]
               = sum_k P(K = k) (1 - delta_c)^k Pi_k(S) + p.

The weights P(K = k) (1 - delta_c)^k / (1 - p) are again a law of the same family with a
larger stopping probability: gamma (1 - gamma)^(k - 1) (1 - delta_c)^k is proportional to
r^(k - 1) and (1 - gamma)^k (1 - delta_c)^k / k to r^k / k, with r = (1 - gamma)(1 - delta_c).
The pure case holds for every stopping probability, so random stopping over P, P' with that
law is (2 + eta) eps~-indistinguishable, and with Pi'_k for P',

  sum_k P(K = k) (1 - delta_c)^k Pi_k(S) <= e^{(2 + eta) eps~} sum_k P(K = k)
  (1 - delta_c)^k Pi'_k(S) = e^{(2 + eta) eps~} Pr[A(x') in S, all runs good]
  <= e^{(2 + eta) eps~} Pr[A(x') in S].

Hence Pr[A(x) in S] <= e^{(2 + eta) eps~} Pr[A(x') in S] + p. (Coupling the two searches
through a procedure that redraws bad runs, as an earlier version of this proof did, pays p
on both sides and gives the looser (1 + e^{(2 + eta) eps~}) p: conditioning on the good runs
keeps the same tilted law of K under x and x', so p is paid once.)

Calibration inverts the bound: delta_c from p = delta and
epsilon_c = epsilon / (2 + eta) - log(1 / (1 - delta_c)), each rounded down (one ulp at a
time) until the bound meets the target. Every step is checked against exact output laws
of the whole procedure in tests/test_random_stopping.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._validation import check_int, check_nonnegative, check_positive, check_unit, validated
from objpert.accounting._certificate import Certificate, budget_text
from objpert.accounting._composition import basic
from objpert.exceptions import ParameterError

__all__ = [
    "LAWS",
    "RandomStoppingCertificate",
    "bad_run_probability",
    "candidate_budget",
    "draw_runs",
    "epsilon_factor",
    "random_stopping_budget",
    "random_stopping_certificate",
    "runs_mean_of",
    "runs_pmf",
    "search_certificate",
    "stop_denominator",
]

#: The laws of the number of runs, the default first (the module docstring).
LAWS = ("logarithmic", "geometric")
_ETA = {"logarithmic": 0.0, "geometric": 1.0}  # the truncated negative binomial's eta

_THEOREMS = {
    "geometric": (
        "random stopping, geometric run count (Liu & Talwar 2019, Theorem 3.2: 3 epsilon_c "
        "for epsilon_c-DP runs; delta_c by the coupling corollary of "
        "objpert.model_selection._random_stopping)"
    ),
    "logarithmic": (
        "random stopping, logarithmic run count (Papernot & Steinke 2022, Theorem 2 with "
        "eta = 0 at growing Renyi orders: 2 epsilon_c for epsilon_c-DP runs; delta_c by the "
        "coupling corollary of objpert.model_selection._random_stopping)"
    ),
}


def _check_law(law: Any) -> str:
    if not isinstance(law, str) or law not in LAWS:
        raise ParameterError(f"law must be one of {LAWS}; got {law!r}")
    return law


def _check_runs_mean(runs_mean: Any) -> int:
    """The requested mean number of runs: a public integer >= 1."""
    return check_int("runs_mean", runs_mean, 1)


def epsilon_factor(law: str = LAWS[0]) -> float:
    """epsilon of the output over epsilon of one pure run: 2 + eta (3 geometric, 2
    logarithmic; the module docstring)."""
    return 2.0 + _ETA[_check_law(law)]


def stop_denominator(runs_mean: int, law: str = LAWS[0]) -> int:
    """q = 1 / gamma, a public integer: ``runs_mean`` for the geometric law; for the
    logarithmic law the smallest q >= 2 whose mean (q - 1) / log q is at least
    ``runs_mean`` (a public function of the two: a model file's law is re-derived by it)."""
    m = _check_runs_mean(runs_mean)
    if _check_law(law) == "geometric":
        return m

    def enough(q: int) -> bool:  # mean(q) >= m; false on [2, q*), true from q* on
        return q - 1 >= m * math.log(q)  # (q - 1 - m log q falls, then rises, from q = 2)

    if enough(2):
        return 2
    lo, hi = 2, 4  # enough(lo) is false; double hi until enough(hi), then bisect
    while not enough(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def runs_mean_of(runs_mean: int, law: str = LAWS[0]) -> float:
    """E[K]: q for the geometric law, (q - 1) / log q for the logarithmic one."""
    q = stop_denominator(runs_mean, law)
    return float(q) if law == "geometric" or q == 1 else (q - 1) / math.log(q)


def runs_pmf(k: Any, runs_mean: int, law: str = LAWS[0]) -> np.ndarray:
    """P(K = k) for k >= 1 (0 below): gamma (1 - gamma)^(k - 1) (geometric) or
    (1 - gamma)^k / (k log(1/gamma)) (logarithmic), gamma = 1 / :func:`stop_denominator`."""
    q = stop_denominator(runs_mean, law)
    k = np.asarray(k, dtype=float)
    gamma = 1.0 / q
    with np.errstate(divide="ignore", invalid="ignore"):
        if law == "geometric":
            out = gamma * np.power(1.0 - gamma, k - 1.0)
        else:
            out = np.power(1.0 - gamma, k) / (k * math.log(q))
    return np.where(k >= 1, out, 0.0)


def _geometric(q: int, generator: np.random.Generator) -> int:
    """K of the geometric law of mean q: after each run a uniform integer below q stops
    the search when it is 0 (an exact coin: numpy's bounded integers reject, no floating
    point enters the law)."""
    k = 1
    while q > 1 and int(generator.integers(q)) != 0:
        k += 1
    return k


def draw_runs(runs_mean: int, generator: np.random.Generator, law: str = LAWS[0]) -> int:
    """K on {1, 2, ...} from ``law`` with gamma = 1 / :func:`stop_denominator`, by exact
    integer draws: geometric as :func:`_geometric`; logarithmic by rejection, a geometric
    proposal k accepted with probability 1/k (a uniform integer below k is 0), so
    P(K = k) is proportional to gamma (1 - gamma)^(k - 1) / k, the logarithmic law."""
    q = stop_denominator(runs_mean, law)
    if not isinstance(generator, np.random.Generator):
        raise ParameterError(f"generator must be a numpy Generator; got {type(generator).__name__}")
    if law == "geometric":
        return _geometric(q, generator)
    while True:
        k = _geometric(q, generator)
        if k == 1 or int(generator.integers(k)) == 0:
            return k


def bad_run_probability(candidate_delta: float, runs_mean: int, law: str = LAWS[0]) -> float:
    """p = 1 - E[(1 - delta_c)^K], the probability that one of the K runs falls in the
    delta_c part of the candidates' law (the proof in the module docstring):
    delta_c q / (1 + delta_c (q - 1)) (geometric), log(1 + delta_c (q - 1)) / log q
    (logarithmic), q = :func:`stop_denominator`."""
    d = candidate_delta
    q = stop_denominator(runs_mean, law)
    if law == "geometric":
        return min(1.0, d * q / (1.0 + d * (q - 1)))
    return min(1.0, math.log1p(d * (q - 1)) / math.log(q))


@validated(candidate_epsilon=check_nonnegative, candidate_delta=check_unit)
def random_stopping_certificate(
    candidate_epsilon: float,
    candidate_delta: float,
    runs_mean: int,
    *,
    pure: bool = False,
    law: str = LAWS[0],
) -> tuple[float, float]:
    """(epsilon, delta) of random stopping over (epsilon_c, delta_c)-DP runs with a run
    count of ``law`` and requested mean ``runs_mean``: ((2 + eta) epsilon~, p),
    epsilon~ = epsilon_c + log(1 / (1 - delta_c)), p = :func:`bad_run_probability` (the
    module docstring). ``pure=True`` is the pure
    theorem itself ((2 + eta) epsilon_c, 0): it refuses delta_c > 0.
    """
    eps_c = candidate_epsilon
    if not math.isfinite(eps_c):
        raise ParameterError(f"candidate_epsilon must be finite; got {candidate_epsilon!r}")
    d = candidate_delta
    if d >= 1.0:
        raise ParameterError(
            f"candidate_delta must be < 1 (runs at delta 1 promise nothing); got {d!r}"
        )
    m = _check_runs_mean(runs_mean)
    factor = epsilon_factor(law)
    if pure and d > 0.0:
        raise ParameterError(
            "pure=True is for pure-DP runs (delta_c = 0); these runs are "
            f"(epsilon, delta)-DP with delta_c = {d:.3g} (objective perturbation with "
            "Gaussian noise is never pure DP): use pure=False"
        )
    eps = factor * (eps_c - math.log1p(-d))  # (2 + eta) epsilon~ (module docstring)
    if d == 0.0:
        return eps, 0.0
    return eps, bad_run_probability(d, m, law)


@validated(epsilon=check_positive, delta=check_unit)
def random_stopping_budget(
    epsilon: float, delta: float, runs_mean: int, law: str = LAWS[0]
) -> tuple[float, float]:
    """(epsilon_c, delta_c) of each run so that :func:`random_stopping_certificate` meets
    the total (epsilon, delta): delta_c = delta / (q - delta (q - 1)) (geometric) or
    expm1(delta log q) / (q - 1) (logarithmic), the inverse of p = delta, and
    epsilon_c = epsilon / (2 + eta) - log(1 / (1 - delta_c)), each rounded down (one ulp at
    a time) until the bound is within the target. delta = 0 asks for pure-DP runs."""
    eps = epsilon
    if not math.isfinite(eps):
        raise ParameterError(f"epsilon must be finite; got {epsilon!r}")
    dlt = delta
    if dlt >= 1.0:
        raise ParameterError("delta must be < 1: a release with delta = 1 has no guarantee")
    m = _check_runs_mean(runs_mean)
    q = stop_denominator(m, law)
    if law == "geometric":
        d_c = dlt / (q - dlt * (q - 1))
    else:
        d_c = math.expm1(dlt * math.log(q)) / (q - 1)
    eps_c = eps / epsilon_factor(law) + math.log1p(-d_c)
    if eps_c <= 0.0:
        raise ParameterError(
            f"(epsilon, delta) = ({epsilon!r}, {delta!r}) leaves no epsilon for the runs"
        )
    for _ in range(64):
        got_eps, got_delta = random_stopping_certificate(eps_c, d_c, m, law=law)
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
    eps_c = candidate_epsilon
    frac = score_fraction
    if frac >= 1.0:
        raise ParameterError(f"score_fraction must be in (0, 1); got {score_fraction!r}")
    score = frac * eps_c
    model = eps_c - score
    while basic([model, score], [0.0, 0.0])[0] > eps_c:
        model = math.nextafter(model, 0.0)
    return model, score


@dataclass(frozen=True)
class RandomStoppingCertificate(Certificate):
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
    law: str = LAWS[0]
    not_public: tuple[str, ...] = ()

    @property
    def certified(self) -> bool:
        return bool(getattr(self.chosen, "certified", False)) and self.delta < 1.0

    @property
    def rows_per_unit(self) -> int:
        """The chosen model's privacy unit (every run's: one row, or one person of k)."""
        return int(getattr(self.chosen, "rows_per_unit", 1))

    @property
    def covers(self) -> str:
        k = self.rows_per_unit
        unit = "" if k == 1 else f" (one person, up to {k} rows)"
        return (
            f"a random-stopping search over {self.n_candidates} grid points on all the "
            f"rows{unit}: the chosen model, its score and the choice"
        )

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
            f"{self.n_candidates} candidates by random stopping, every run on all the "
            + (
                f"{self.n_rows} rows)"
                if self.rows_per_unit == 1
                else f"persons' rows; the guarantee is for one person, up to {self.rows_per_unit} "
                "rows)"
            ),
            f"  {self.method}",
            f"  runs: {self.law} law, gamma = 1/{stop_denominator(self.runs_mean, self.law)}, "
            f"mean {runs_mean_of(self.runs_mean, self.law):.3g} (the count is not released); "
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
    law: str = LAWS[0],
) -> RandomStoppingCertificate:
    """The certificate of a random-stopping search from its public budget (the guarantee by
    :func:`random_stopping_certificate`) and the chosen model's own certificate: what a
    search records and what a model file's record is recomputed into."""
    eps, delta = random_stopping_certificate(candidate_epsilon, candidate_delta, runs_mean, law=law)
    return RandomStoppingCertificate(
        method=_THEOREMS[law],
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
        law=law,
        not_public=tuple(chosen.not_public),
    )
