"""Random stopping: the law of the run count, the certificate against independent
computations, exact output distributions of the whole procedure on neighbouring inputs,
and the search on all the rows."""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from objpert import PrivateLogisticRegression, PrivateRobustRegression
from objpert._randomness import make_rng
from objpert.accounting import PrivacyAccountant
from objpert.exceptions import (
    DataError,
    ObjpertError,
    ParameterError,
    PrivacyError,
    TestingSeedWarning,
    UnreachableTargetError,
)
from objpert.model_selection import (
    PrivateGridSearch,
    RandomStoppingCertificate,
    draw_runs,
    random_stopping_budget,
    random_stopping_certificate,
)
from objpert.model_selection._random_stopping import (
    bad_run_probability,
    candidate_budget,
    runs_mean_of,
    runs_pmf,
    stop_denominator,
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # testing seeds
        yield


# ---------------------------------------------------------------- the law of K

LAWS = ("logarithmic", "geometric")


@functools.cache
def _q(runs_mean, law):
    """gamma = 1/q, found independently: q = M (geometric); the smallest q >= 2 with
    mean (q - 1) / log q >= M (logarithmic; mpmath)."""
    if law == "geometric":
        return runs_mean
    q = 2
    while (q - 1) / mpmath.log(q) < runs_mean:
        q += 1
    return q


def _pmf(k, runs_mean, law):
    """P(K = k) (mpmath): gamma (1 - gamma)^(k - 1) or (1 - gamma)^k / (k log q)."""
    q = _q(runs_mean, law)
    g = mpmath.mpf(1) / q
    if law == "geometric":
        return g * (1 - g) ** (k - 1)
    return (1 - g) ** k / (k * mpmath.log(q))


def _counts(runs_mean, draws, seed, top, law):
    gen, _ = make_rng(seed)
    ks = np.array([draw_runs(runs_mean, gen, law) for _ in range(draws)])
    counts = np.bincount(np.minimum(ks, top), minlength=top + 1)[1:]
    return ks, counts


def _expected(runs_mean, draws, top, law):
    """The law's probabilities for k < top, the last bin the tail P(K >= top)."""
    probs = [_pmf(k, runs_mean, law) for k in range(1, top)]
    probs.append(1 - mpmath.fsum(probs))
    return np.array([float(p) for p in probs]) * draws


@pytest.mark.parametrize("law", LAWS)
def test_run_count_follows_its_law(law):
    draws, top = 20000, 16
    ks, counts = _counts(4, draws, 3, top, law)
    assert ks.min() >= 1
    assert stats.chisquare(counts, _expected(4, draws, top, law)).pvalue > 1e-4
    mean = float(mpmath.nsum(lambda k: k * _pmf(k, 4, law), [1, mpmath.inf]))
    var = float(mpmath.nsum(lambda k: (k - mean) ** 2 * _pmf(k, 4, law), [1, mpmath.inf]))
    assert abs(ks.mean() - mean) < 4 * math.sqrt(var / draws)
    assert runs_mean_of(4, law) == pytest.approx(mean, rel=1e-12) and mean >= 4


@pytest.mark.parametrize("law", LAWS)
def test_the_goodness_of_fit_test_detects_a_wrong_law(law):
    """The same test rejects the law of mean 5, and the other law of mean 4: it can fail."""
    draws, top = 20000, 16
    _, counts = _counts(4, draws, 3, top, law)
    assert stats.chisquare(counts, _expected(5, draws, top, law)).pvalue < 1e-6
    other = LAWS[1 - LAWS.index(law)]
    assert stats.chisquare(counts, _expected(4, draws, top, other)).pvalue < 1e-6


def test_one_run_on_average_and_the_pmfs():
    gen, _ = make_rng(0)
    assert {draw_runs(1, gen, "geometric") for _ in range(50)} == {1}
    np.testing.assert_allclose(runs_pmf([0, 1, 2, 3], 4, "geometric"), [0, 0.25, 0.1875, 0.140625])
    for law in LAWS:
        assert stop_denominator(7, law) == _q(7, law)
        ks = np.arange(0, 30)
        want = [0.0] + [float(_pmf(k, 7, law)) for k in ks[1:]]
        np.testing.assert_allclose(runs_pmf(ks, 7, law), want, rtol=1e-13)
    with pytest.raises(ParameterError, match="law"):
        runs_pmf(1, 4, "poisson")


@settings(max_examples=60, deadline=None)
@given(mean=st.integers(1, 10**7))
def test_the_logarithmic_law_has_the_smallest_q_whose_mean_reaches_the_request(mean):
    q = stop_denominator(mean, "logarithmic")

    def law_mean(x):
        return (mpmath.mpf(x) - 1) / mpmath.log(x)

    assert q >= 2 and law_mean(q) >= mean
    assert q == 2 or law_mean(q - 1) < mean


# ---------------------------------------------------------------- the certificate


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize(
    ("eps_c", "delta_c", "mean"),
    [
        (0.1, 1e-8, 4),
        (0.5, 1e-6, 16),
        (1.0, 3e-9, 1),
        (2.0, 1e-7, 50),
        (3.0, 1e-3, 50),
        (0.3, 0.0, 10),
    ],
)
def test_certificate_equals_the_formula_summed_independently(law, eps_c, delta_c, mean):
    """epsilon = (2 + eta) (eps_c + log(1 / (1 - delta_c))), delta = 1 - E[(1 - delta_c)^K],
    the expectation summed term by term (eta = 1 geometric, 0 logarithmic)."""
    mpmath.mp.dps = 40
    d = mpmath.mpf(delta_c)
    p = 1 - mpmath.nsum(lambda k: _pmf(k, mean, law) * (1 - d) ** k, [1, mpmath.inf])
    eps, delta = random_stopping_certificate(eps_c, delta_c, mean, law=law)
    factor = {"geometric": 3, "logarithmic": 2}[law]
    eps_tilde = mpmath.mpf(eps_c) + mpmath.log(1 / (1 - d))
    assert eps == pytest.approx(float(factor * eps_tilde), rel=1e-14)
    assert delta == pytest.approx(float(p), rel=1e-12, abs=0.0)
    assert bad_run_probability(delta_c, mean, law) == pytest.approx(float(p), rel=1e-12, abs=0)


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("eps", [0.1, 0.3, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-3])
@pytest.mark.parametrize("mean", [1, 7, 16, 100])
def test_calibrated_runs_meet_the_target(law, eps, delta, mean):
    eps_c, delta_c = random_stopping_budget(eps, delta, mean, law)
    got_eps, got_delta = random_stopping_certificate(eps_c, delta_c, mean, law=law)
    assert got_eps <= eps and got_delta <= delta
    assert got_eps >= eps * (1 - 1e-12) and got_delta >= delta * (1 - 1e-9)


def test_pure_runs_give_a_pure_certificate_and_approximate_ones_are_refused():
    assert random_stopping_certificate(0.2, 0.0, 10, pure=True, law="geometric") == (
        pytest.approx(0.6),
        0.0,
    )
    assert random_stopping_certificate(0.2, 0.0, 10, pure=True) == (pytest.approx(0.4), 0.0)
    assert random_stopping_budget(0.9, 0.0, 10, "geometric") == (pytest.approx(0.3), 0.0)
    assert random_stopping_budget(0.9, 0.0, 10) == (pytest.approx(0.45), 0.0)
    with pytest.raises(ParameterError, match="pure"):
        random_stopping_certificate(0.2, 1e-9, 10, pure=True)
    with pytest.raises(ParameterError, match="candidate_delta must be < 1"):
        random_stopping_certificate(0.5, 1.0, 5)  # log(1 / (1 - delta_c)) is infinite


def test_model_and_score_compose_within_the_run_budget():
    for eps_c in (1e-3, 0.1, 1 / 3, 2.0):
        for frac in (0.01, 0.1, 0.5, 0.9):
            model, score = candidate_budget(eps_c, frac)
            assert model + score <= eps_c and math.isclose(score, frac * eps_c)


# ------------------------------------------------------- exact output distributions


@functools.lru_cache(maxsize=8)
@functools.cache
def _weights(mean, law, kmax):
    """The law's pmf at k = 1..kmax by mpmath (computed once per law and mean)."""
    with mpmath.workdps(20):
        w = np.array([float(_pmf(k, mean, law)) for k in range(1, kmax + 1)])[:, None]
    w.flags.writeable = False
    return w


def _best_of_pmf(q, mean, law, kmax=6000):
    """The output pmf of random stopping over a pmf q on ordered outputs, by brute force:
    P(max of k draws <= y) = F(y)^k summed over k with the law's weights."""
    cdf = np.cumsum(q)
    ks = np.arange(1, kmax + 1)[:, None]
    law_cdf = (_weights(mean, law, kmax) * cdf[None, :] ** ks).sum(axis=0)
    return np.diff(np.concatenate([[0.0], law_cdf]))


def _pure_pair(rng, size, eps):
    """Two pmfs with |log(q / q')| <= eps everywhere (randomized-response-like)."""
    q = rng.dirichlet(np.ones(size))
    q2 = q * np.exp(rng.uniform(-eps, eps, size))
    q2 /= q2.sum()
    while np.max(np.abs(np.log(q / q2))) > eps:  # renormalising may push a ratio out
        q2 = np.sqrt(q * q2)
        q2 /= q2.sum()
    return q, q2


def _hockey(p, q, eps):
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


def _adversarial_pair(eps):
    """Less mass on the lowest and the (rare) top output under x."""
    q2 = np.array([0.62, 0.38 - 1e-4, 1e-4])
    low, top = q2[[0, 2]] * math.exp(-eps)
    q = np.array([low, 1.0 - low - top, top])
    assert np.max(np.abs(np.log(q / q2))) <= eps
    return q, q2


@pytest.mark.parametrize("law", LAWS)
def test_exact_privacy_loss_of_pure_runs_is_within_the_certificate(law):
    """Randomized-response runs: the exact output law of the whole procedure on two
    neighbouring inputs has privacy loss <= (2 + eta) epsilon (the certificate), and more
    than 1.4 epsilon for an adversarial pair (so a 1x certificate would fail). The
    logarithmic law is checked at a mean of 8 and of 100 (its bound is approached as the
    stopping probability falls)."""
    rng = np.random.default_rng(0)
    eps = 0.5
    for mean in (8, 100):
        worst = 0.0
        for _ in range(100):
            q, q2 = _pure_pair(rng, 6, eps)
            a, b = _best_of_pmf(q, mean, law), _best_of_pmf(q2, mean, law)
            worst = max(worst, np.max(np.abs(np.log(a / b))))
        cert_eps, cert_delta = random_stopping_certificate(eps, 0.0, mean, pure=True, law=law)
        assert cert_delta == 0.0 and worst <= cert_eps + 1e-9
        q, q2 = _adversarial_pair(eps)
        a, b = _best_of_pmf(q, mean, law), _best_of_pmf(q2, mean, law)
        loss = np.max(np.abs(np.log(a / b)))
        assert loss <= cert_eps + 1e-9
    assert loss > 1.4 * eps


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize(("eps_c", "delta_c", "mean"), [(0.3, 1e-3, 10), (1.0, 1e-2, 30)])
def test_exact_hockey_stick_of_approximate_runs_is_the_certificate_delta(law, eps_c, delta_c, mean):
    """Runs that leak: with probability delta_c the output under x is the top one, under
    x' the bottom one. Each run is (eps_c, delta_c)-DP (checked). The whole procedure's
    hockey-stick divergence at the certificate's epsilon is at most its delta
    p = 1 - E[(1 - delta_c)^K], both ways, and one way it is p itself: the top output
    appears under x exactly when some run leaked, and never under x'. So the certificate's
    delta cannot be lowered (its former (1 + e^epsilon) p was loose by that factor)."""
    rng = np.random.default_rng(1)
    cert_eps, cert_delta = random_stopping_certificate(eps_c, delta_c, mean, law=law)
    tol = 1e-12  # the brute-force sum over k <= 6000 and float64 rounding
    for _ in range(50):
        base, base2 = _pure_pair(rng, 7, eps_c)
        q = np.concatenate([[0.0], (1 - delta_c) * base, [delta_c]])
        q2 = np.concatenate([[delta_c], (1 - delta_c) * base2, [0.0]])
        assert max(_hockey(q, q2, eps_c), _hockey(q2, q, eps_c)) <= delta_c + 1e-15
        a, b = _best_of_pmf(q, mean, law), _best_of_pmf(q2, mean, law)
        forward, backward = _hockey(a, b, cert_eps), _hockey(b, a, cert_eps)
        assert forward <= cert_delta * (1 + tol) and backward <= cert_delta * (1 + tol)
        assert forward == pytest.approx(cert_delta, rel=1e-9)
    # the leak is real: at epsilon_c the procedure's delta exceeds delta_c
    assert _hockey(a, b, eps_c) > delta_c


@pytest.mark.parametrize("law", LAWS)
def test_random_run_pairs_stay_within_the_certificate(law):
    """Arbitrary run laws on 8 ordered outputs: each pair's own (eps_c, delta_c) (its exact
    hockey-stick divergence at eps_c, the larger way), and the whole procedure's exact
    hockey-stick divergence at the certificate's epsilon within its delta, both ways."""
    rng = np.random.default_rng(7)
    eps_c, mean = 0.4, 12
    for _ in range(200):
        q, q2 = rng.dirichlet(np.full(8, 0.5)), rng.dirichlet(np.full(8, 0.5))
        delta_c = max(_hockey(q, q2, eps_c), _hockey(q2, q, eps_c))
        if not 0.0 < delta_c < 0.5:
            continue
        cert_eps, cert_delta = random_stopping_certificate(eps_c, delta_c, mean, law=law)
        a, b = _best_of_pmf(q, mean, law), _best_of_pmf(q2, mean, law)
        assert max(_hockey(a, b, cert_eps), _hockey(b, a, cert_eps)) <= cert_delta + 1e-12


# ---------------------------------------------------------------- the search


def _data(n=2000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    w = rng.normal(size=d) * 4
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


GRID = {"comparator_norm": [1.0, 3.0, 10.0]}


def _search(epsilon=1.0, **kw):
    base = PrivateLogisticRegression(
        epsilon=epsilon, delta=1e-6, data_norm=1.0, classes=[0, 1], max_iter=300
    )
    params = {"method": "random_stopping", "random_state": 5, **kw}
    return PrivateGridSearch(estimator=base, param_grid=GRID, **params)


def test_every_run_trains_on_all_rows_and_the_certificate_meets_the_budget():
    X, y = _data()
    gs = _search(runs_mean=6).fit(X, y)
    cert = gs.certificate_
    assert isinstance(cert, RandomStoppingCertificate) and cert.certified
    assert gs.best_estimator_.plan_.constants.n == len(X) == cert.n_rows
    assert cert.epsilon <= 1.0 and cert.delta <= 1e-6
    assert cert.law == "logarithmic"  # the default
    assert (cert.epsilon, cert.delta) == random_stopping_certificate(
        cert.candidate_epsilon, cert.candidate_delta, 6, law="logarithmic"
    )
    chosen = gs.best_estimator_.release_certificate_
    assert chosen.epsilon <= cert.model_epsilon and chosen.delta <= cert.candidate_delta
    assert cert.model_epsilon + cert.score_epsilon <= cert.candidate_epsilon + 1e-15
    assert gs.best_params_ in [{"comparator_norm": c} for c in GRID["comparator_norm"]]
    # neither the run count nor any score is kept
    kept = {k: v for k, v in vars(gs).items() if k.endswith("_")}
    assert set(kept) <= {
        "certificate_", "best_index_", "best_params_", "best_estimator_", "n_candidates_",
        "n_features_in_", "classes_",
    }  # fmt: skip
    text = str(cert)
    assert "random stopping" in text and "Papernot & Steinke" in text and "not released" in text
    assert cert.to_dict()["runs_mean"] == 6 and "scores" not in str(cert.to_dict())
    majority = max(np.mean(y), 1 - np.mean(y))
    assert gs.score(X, y) > majority + 0.05


def test_seeded_search_warns_once_and_repeats():
    X, y = _data(n=600)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = _search(runs_mean=3).fit(X, y)
    seeds = [w for w in caught if issubclass(w.category, TestingSeedWarning)]
    assert len(seeds) == 1, [str(w.message) for w in seeds]
    b = _search(runs_mean=3).fit(X, y)
    assert a.best_index_ == b.best_index_
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)


def test_unseeded_search_does_not_warn():
    X, y = _data(n=600)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TestingSeedWarning)
        gs = _search(runs_mean=2, random_state=None).fit(X, y)
    assert gs.certificate_.certified


def test_regression_search_scores_clipped_errors():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 4)) / 3
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = np.clip(X @ np.array([1.0, -1.0, 0.5, 0.0]), -1, 1)
    base = PrivateRobustRegression(epsilon=2.0, delta=1e-6, data_norm=1.0, max_iter=300)
    gs = PrivateGridSearch(
        estimator=base, param_grid={"comparator_norm": [1.0, 2.0]}, method="random_stopping",
        runs_mean=3, score_bound=2.0, random_state=0,
    ).fit(X, y)  # fmt: skip
    assert gs.certificate_.certified and gs.certificate_.epsilon <= 2.0
    assert math.isfinite(gs.score(X, y))


class _LyingRegression(PrivateLogisticRegression):
    """A model whose certificate claims twice its budget (as a mis-planned run would)."""

    def fit(self, X, y):
        super().fit(X, y)
        cert = self.certificate_
        self.certificate_ = dataclasses.replace(cert, epsilon=2 * cert.epsilon)
        return self


def test_a_run_over_its_budget_stops_the_search():
    X, y = _data(n=400)
    base = _LyingRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1])
    gs = PrivateGridSearch(
        estimator=base, param_grid=GRID, method="random_stopping", runs_mean=2, random_state=0
    )
    with pytest.raises(PrivacyError, match="nothing is released"):
        gs.fit(X, y)
    assert not hasattr(gs, "best_estimator_")


def test_bad_random_stopping_searches_are_refused_before_any_fit():
    X, y = _data(n=200)
    base = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1])
    bad = [
        {"method": "bogus"},
        {"method": "random_stopping", "runs_mean": 0},
        {"method": "random_stopping", "runs_mean": 2.5},
        {"method": "random_stopping", "score_fraction": 1.0},
        {"method": "random_stopping", "score_fraction": 0.0},
        {"method": "random_stopping", "selection_epsilon": 0.5},
        {"method": "random_stopping", "law": "poisson"},
        {"method": "split", "runs_mean": 4},
        {"method": "split", "law": "geometric"},
        {"method": "split", "score_fraction": 0.2},
    ]
    for kw in bad:
        with pytest.raises(ParameterError):
            PrivateGridSearch(estimator=base, param_grid=GRID, **kw).fit(X, y)
    for key in ("epsilon", "delta", "random_state"):
        with pytest.raises(ParameterError, match=key):
            PrivateGridSearch(
                estimator=base, param_grid={key: [0.5, 1.0]}, method="random_stopping"
            ).fit(X, y)
    with pytest.raises(DataError):
        PrivateGridSearch(estimator=base, param_grid=GRID, method="random_stopping").fit(X, y[:-1])
    ledger = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1],
        accountant=PrivacyAccountant(epsilon=10.0, delta=1e-5),
    )  # fmt: skip
    with pytest.raises(ParameterError, match="hidden count"):
        PrivateGridSearch(estimator=ledger, param_grid=GRID, method="random_stopping").fit(X, y)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    eps=st.floats(1e-3, 20.0),
    delta=st.one_of(st.just(0.0), st.floats(1e-300, 0.5)),
    mean=st.integers(1, 10_000),
    law=st.sampled_from(LAWS),
)
def test_budget_always_meets_its_target(eps, delta, mean, law):
    try:
        eps_c, delta_c = random_stopping_budget(eps, delta, mean, law)
    except ParameterError as exc:  # log(1 / (1 - delta_c)) alone would exceed epsilon / 3
        assert "no epsilon" in str(exc) and delta > 0
        return
    got_eps, got_delta = random_stopping_certificate(eps_c, delta_c, mean, law=law)
    assert eps_c > 0 and 0 <= delta_c <= delta
    assert got_eps <= eps and got_delta <= delta


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    runs_mean=st.one_of(st.none(), st.integers(-1, 4), st.floats(allow_nan=True)),
    score_fraction=st.one_of(st.none(), st.just(math.nan), st.floats(-0.5, 1.5)),
    epsilon=st.floats(0.2, 5.0),
    law=st.sampled_from([None, *LAWS, "poisson", 3]),
)
def test_the_search_either_refuses_or_meets_its_budget(runs_mean, score_fraction, epsilon, law):
    X, y = _data(n=300)
    base = PrivateLogisticRegression(
        epsilon=epsilon, delta=1e-6, data_norm=1.0, classes=[0, 1], max_iter=200
    )
    gs = PrivateGridSearch(
        estimator=base, param_grid={"comparator_norm": [1.0]}, method="random_stopping",
        runs_mean=runs_mean, score_fraction=score_fraction, law=law, random_state=0,
    )  # fmt: skip
    try:
        gs.fit(X, y)
    except ObjpertError as exc:
        assert str(exc)
    else:
        cert = gs.certificate_
        assert law in (None, *LAWS) and cert.law == (law or LAWS[0])
        assert cert.epsilon <= epsilon and cert.delta <= 1e-6 and cert.certified


def test_a_grid_point_that_cannot_certify_is_refused_before_any_run(monkeypatch):
    """Whether a grid point certifies the run budget is a matter of public constants: it is
    checked for every point before the first run, never met by a run drawn later."""
    from objpert.exceptions import UnreachableTargetError
    from objpert.model_selection import PrivateGridSearch

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    est = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], max_iter=200
    )
    fits = []
    monkeypatch.setattr(
        PrivateLogisticRegression, "fit", lambda self, *a, **k: fits.append(1) or self
    )
    search = PrivateGridSearch(
        estimator=est, param_grid={"mu": [1e-4, 1.0]}, method="random_stopping"
    )
    with pytest.raises(UnreachableTargetError, match=r"grid point \{'mu': 0.0001\}"):
        search.fit(X, y)
    assert fits == []  # no run was made


def test_a_pipeline_grid_point_that_cannot_certify_is_refused_before_any_run(monkeypatch):
    """The width and row bound its bounded steps declare are public: the same check as
    for a bare estimator, before any run is drawn."""
    from sklearn.pipeline import make_pipeline

    from objpert.preprocessing import BoundedScaler

    fits = []
    original = PrivateLogisticRegression.fit
    monkeypatch.setattr(
        PrivateLogisticRegression,
        "fit",
        lambda self, *a, **k: fits.append(1) or original(self, *a, **k),
    )
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    pipe = make_pipeline(
        BoundedScaler(bounds=[(-1.0, 1.0)] * 3),
        PrivateLogisticRegression(epsilon=0.5, delta=1e-6, classes=[0, 1]),
    )
    search = PrivateGridSearch(
        estimator=pipe, param_grid={"privatelogisticregression__mu": [0.001, 1.0]},
        method="random_stopping",
    )  # fmt: skip
    with pytest.raises(UnreachableTargetError, match=r"privatelogisticregression__mu': 0\.001"):
        search.fit(X, y)
    assert fits == []


def test_the_runs_notices_are_shown_once_whatever_the_hidden_run_count():
    """One notice per run would count the runs, which the search keeps hidden."""
    from objpert.exceptions import ClippingNotice

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    base = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, classes=[0, 1], feature_bounds=[(-0.5, 0.5)] * 3
    )
    search = PrivateGridSearch(
        estimator=base, param_grid={"mu": [1.0, 3.0]}, method="random_stopping", runs_mean=8
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    assert sum(issubclass(w.category, ClippingNotice) for w in caught) == 1
