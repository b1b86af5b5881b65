"""Every registered mechanism's person-level certificate groups its own privacy-loss
events (Gaussian at k times the sensitivity, zCDP at k^2 rho, the chain bound on a
profile), never worse than grouping its (epsilon, delta) point and strictly tighter for
the Gaussian-noise ones; each grouped event against an independent computation."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize

import objpert
from objpert.accounting import _pld as pld
from objpert.accounting import group_certificate, group_privacy
from objpert.accounting._events import certified_point, subsampled_gaussian
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates.redberg import exact_lop_delta

pytestmark = pytest.mark.skipif(not pld.available(), reason="needs dp-accounting")

PUBLIC = dict(n=2000, d=5, zeta=1.0)
K = 3
EPS_1, DELTA_1 = 1.0 / K, 1e-7
#: the kind of event each registered mechanism emits at its default settings
KINDS = {
    "watkins_arora": "watkins_arora",
    "lop": "objective",
    "lop_clip": "objective",
    "amp": "objective",
    "multinomial": "objective",
    "output_perturbation": "zcdp",
    "noisy_gd": "zcdp",
    "dp_newton": "gaussian",
    "dp_sgd": "subsampled_gaussian",
}
GAUSSIAN_NOISE = ("output_perturbation", "noisy_gd", "dp_newton", "dp_sgd")
CERTIFIED = [n for n in (*registry.names(), *registry.names(multiclass=True)) if n != "qop"]


@pytest.fixture(scope="module")
def certs():
    out = {}
    for name in CERTIFIED:
        loss = dict(loss="softmax", n_classes=3) if name == "multinomial" else dict(loss="logistic")
        out[name] = objpert.plan(name, **loss, **PUBLIC, epsilon=EPS_1, delta=DELTA_1).certificate
    return out


def point_route(cert, rows: int, epsilon: float) -> float:
    """The baseline: group privacy of the certificate's (epsilon, delta) point alone (its
    chain bound, and the classical bound where it applies)."""
    dist = pld.distribution(group_privacy(certified_point(cert), rows))
    delta = pld.delta_for_epsilon(dist, epsilon)
    if epsilon >= rows * cert.epsilon:
        delta = min(delta, cert.delta * sum(math.exp(i * cert.epsilon) for i in range(rows)))
    return delta


def test_every_certified_mechanism_is_listed():
    assert set(CERTIFIED) == set(KINDS)


@pytest.mark.parametrize("name", CERTIFIED)
def test_grouped_events_never_worse_than_the_point(certs, name):
    cert = certs[name]
    (loss,) = cert.privacy_losses()
    assert loss.kind == KINDS[name]
    for epsilon in (K * cert.epsilon, 1.5):
        unit = group_certificate(cert, K, epsilon)
        base = point_route(cert, K, epsilon)
        assert unit.certified and unit.delta <= base * (1 + 1e-9)
        if name in GAUSSIAN_NOISE:  # strictly, by more than the PLD's rounding
            assert unit.delta < 0.99 * base


def gaussian_delta(mu: float, eps: float) -> float:
    """The exact profile of N(0, 1) against N(mu, 1) (Balle & Wang 2018), in mpmath."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return float(
        mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)
    )


def test_dp_newton_groups_to_the_gaussian_mechanism_at_k_times_the_sensitivity(certs):
    """2K steps of multiplier z, k rows: mu-GDP with mu = k sqrt(2K) / z (Dong, Roth & Su
    2022, Corollary 3.3), its exact profile in mpmath."""
    cert = certs["dp_newton"]
    mu = K * math.sqrt(cert.details["mechanisms"]) / cert.details["noise_multiplier"]
    for epsilon in (K * cert.epsilon, 1.5, 3.0):
        exact = gaussian_delta(mu, epsilon)
        got = group_certificate(cert, K, epsilon).delta
        assert exact * (1 - 1e-9) <= got <= exact * 1.02 + 1e-15


def zcdp_delta(rho: float, eps: float) -> float:
    """Canonne, Kamath & Steinke (2020), Corollary 13, minimised over alpha by scipy."""

    def log_delta(log_t: float) -> float:
        a = 1.0 + math.exp(log_t)
        return (a - 1) * (a * rho - eps) - math.log(a - 1) + a * math.log1p(-1 / a)

    best = optimize.minimize_scalar(log_delta, bounds=(-20.0, 20.0), method="bounded")
    return min(1.0, math.exp(best.fun))


@pytest.mark.parametrize("name", ["output_perturbation", "noisy_gd"])
def test_zcdp_peers_group_to_k_squared_rho(certs, name):
    cert = certs[name]
    rho = cert.details.get("rho_total", cert.details.get("rho"))
    (grouped,) = group_certificate(cert, K).privacy_losses()
    assert dict(grouped.parameters)["rho"] == pytest.approx(K * K * rho, rel=1e-12)
    for epsilon in (K * cert.epsilon, 2.0):
        exact = zcdp_delta(K * K * rho, epsilon)
        got = group_certificate(cert, K, epsilon).delta
        assert exact * (1 - 1e-6) <= got <= exact * 1.05


def chain_two(profile, E: float, points: int = 4001) -> float:
    """The chain bound for two rows, min over a of delta(a) + e^a delta(E - a), searched on
    a fine grid (an independent reading of the chain bound)."""
    a = np.linspace(0.0, E, points)
    return float(np.min(profile(a) + np.exp(a) * profile(E - a)))


def test_lop_groups_its_exact_minimiser_profile(certs):
    """LOP's event is Redberg et al.'s profile; its chain bound for two rows agrees with a
    direct search over the split."""
    cert = certs["lop"]
    c = cert.constants
    args = (c["n"], c["gradient_bound"], c["smoothness"], c["mu"], cert.sigma)
    (loss,) = cert.privacy_losses()
    profile = pld.one_row_profile(loss)
    for e in (0.05, cert.epsilon, 1.0):
        expected = min(exact_lop_delta(*args, e), cert.delta) if e >= cert.epsilon else None
        expected = exact_lop_delta(*args, e) if expected is None else expected
        assert float(profile(np.array([e]))[0]) <= expected * (1 + 1e-12)
    E = 2.0 * cert.epsilon

    def direct(a):
        return np.array([exact_lop_delta(*args, float(x)) for x in np.atleast_1d(a)])

    reference = chain_two(direct, E, 801)
    got = pld.delta_for_epsilon(pld.distribution(group_privacy(loss, 2)), E)
    assert reference * (1 - 1e-3) <= got <= reference * 1.05


def subsampled_pair_delta(z: float, q: float, rows: int, eps: float) -> float:
    """One k-row pair of a Poisson-subsampled Gaussian step, by quadrature: the k rows at
    +1 against the k rows at -1, each in the batch with probability q (a lower bound on
    the step's k-row delta)."""
    from scipy import stats

    weights = stats.binom.pmf(np.arange(rows + 1), rows, q)

    def p(x):
        return float(np.sum(weights * stats.norm.pdf(x, np.arange(rows + 1), z)))

    def r(x):
        return float(np.sum(weights * stats.norm.pdf(x, -np.arange(rows + 1), z)))

    value = integrate.quad(lambda x: max(p(x) - math.exp(eps) * r(x), 0.0), -40 * z, 40 * z,
                           limit=400, points=[0.0])[0]  # fmt: skip
    return value


@pytest.mark.parametrize(
    ("z", "q", "epsilons"), [(1.0, 0.05, (0.1, 0.3)), (None, None, (0.005, 0.01))]
)
def test_dp_sgd_step_groups_between_a_pair_and_the_direct_chain(certs, z, q, epsilons):
    """One DP-SGD step grouped over two rows: above the delta of an explicit two-row pair
    (quadrature) and equal to the chain bound searched directly on dp-accounting's profile
    (a step of the registry's plan, and one of more privacy loss)."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as dpl

    if z is None:
        cert = certs["dp_sgd"]
        z, q = cert.details["noise_multiplier"], cert.details["sampling_rate"]
    step = dpl.from_gaussian_mechanism(
        z, sampling_prob=q, value_discretization_interval=1e-3,
        neighboring_relation=NeighboringRelation.REPLACE_ONE,
    )  # fmt: skip
    got_dist = pld.distribution(group_privacy(subsampled_gaussian(z, q), 2))
    for E in epsilons:
        got = pld.delta_for_epsilon(got_dist, E)
        reference = chain_two(lambda a: np.asarray(step.get_delta_for_epsilon(np.sort(a)))[
            np.argsort(np.argsort(a))], E)  # fmt: skip
        assert subsampled_pair_delta(z, q, 2, E) <= got
        assert reference * (1 - 1e-3) <= got <= reference * 1.05


def test_row_level_events_reproduce_the_certificates(certs):
    """k = 1: each event's own PLD gives at most the certificate's delta (up to the grid)."""
    for name in CERTIFIED:
        cert = certs[name]
        dist = pld.compose(cert.privacy_losses())
        assert pld.delta_for_epsilon(dist, cert.epsilon) <= cert.delta * 1.05, name


def test_a_ledger_of_peer_events_round_trips(certs, tmp_path):
    """The new events (exact-minimiser profile, subsampled Gaussian) are saved by their
    public numbers and rebuilt at load, one-row and grouped."""
    import warnings

    from objpert.accounting import PrivacyAccountant

    for rows in (1, K):
        ledger = PrivacyAccountant(epsilon=20.0, delta=1e-3)
        for name in ("amp", "dp_sgd", "output_perturbation"):
            cert = certs[name] if rows == 1 else group_certificate(certs[name], rows)
            ledger.spend(cert, name=name)
        path = objpert.save(ledger, tmp_path / f"ledger{rows}.json")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unsigned
            back = objpert.load(path)
        assert back.spent == pytest.approx(ledger.spent, rel=1e-12)
        kinds = [x.kind for s in back.steps for x in s.losses]
        assert kinds == (["objective", "subsampled_gaussian", "zcdp"] if rows == 1
                         else ["group", "group", "zcdp"])  # fmt: skip
        # the ledger's privacy report names each release's kind
        from objpert.cli import main

        page = tmp_path / f"ledger{rows}.html"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["report", str(path), "--out", str(page)]) == 0
        text = page.read_text()
        if rows == 1:
            assert "Poisson-subsampled Gaussian step" in text
            assert "exact-minimiser profile" in text
        else:
            assert "release grouped for one person" in text and "3 rows of: noise" in text


@pytest.mark.parametrize("name", ["amp", "multinomial"])
def test_two_part_releases_emit_their_basic_composition_profile(certs, name):
    """AMP and the multinomial release: delta(epsilon) = delta_obj(epsilon - epsilon_2) +
    delta_2 above the output part's epsilon_2 (the objective part by Redberg et al.'s
    profile, the multinomial's by its own quadrature), 1 below it, capped by the point."""
    from objpert.accounting._group import point_profile
    from objpert.mechanisms._certificates.multinomial import chi_profile_delta
    from objpert.mechanisms._certificates.redberg import folded_gaussian_delta

    cert = certs[name]
    d = cert.details
    eps2, delta2 = d["epsilon_output"], d["delta_output"]
    (loss,) = cert.privacy_losses()
    profile = pld.one_row_profile(loss)
    if name == "amp":
        c = cert.constants
        t = 2 * c["gradient_bound"] / (c["n"] * cert.sigma)  # G / sigma, mean form
        c0 = math.log1p(c["smoothness"] / (c["n"] * c["mu"]))
        assert t == pytest.approx(d["sensitivity_ratio"]) and c0 == pytest.approx(d["log_det"])

        def objective(e):
            return folded_gaussian_delta(e, t, c0)
    else:

        def objective(e):
            return chi_profile_delta(
                e, d["sensitivity_ratio"], d["log_det"], d["profile_dimension"]
            )

    for e in (0.5 * eps2, eps2 + 0.01, cert.epsilon, 2 * cert.epsilon):
        ref = 1.0 if e < eps2 else min(1.0, objective(e - eps2) + delta2)
        cap = float(point_profile(cert.epsilon, cert.delta, [e])[0])
        assert float(profile(np.array([e]))[0]) == pytest.approx(min(ref, cap), rel=1e-9)


def test_the_multinomial_report_profile_is_its_event():
    """The privacy report's delta(epsilon) of a multinomial model is its event's profile
    (below the output part's epsilon only its point's bound, never the objective part's
    delta at 0)."""
    from objpert.mechanisms._certificates.multinomial import multinomial_profile

    plan = objpert.plan("multinomial", loss="softmax", n_classes=3, **PUBLIC, epsilon=1.0,
                        delta=1e-6)  # fmt: skip
    eps = np.array([0.5 * plan.certificate.details["epsilon_output"], 0.5, 1.0, 2.0])
    expected = pld.one_row_profile(plan.certificate.privacy_loss())(eps)
    np.testing.assert_array_equal(multinomial_profile(plan, eps), expected)
    from objpert.accounting._group import point_profile

    cap = point_profile(plan.certificate.epsilon, plan.certificate.delta, eps[:1])
    assert expected[0] == cap[0] and expected[2] <= plan.certificate.delta  # below eps_2: the point
