"""One regression test per reproducer of the fuzz campaign: each failed on the
code before the fix (silently wrong results, raw Python/numpy exceptions, accepted invalid
input, slow input)."""

from __future__ import annotations

import functools
import json
import math
import time
import warnings

import numpy as np
import pytest
from scipy import sparse

import objpert
from objpert.accounting import _composition as composition
from objpert.accounting._gaussian_mechanism import classical_gaussian_sigma, gaussian_profile
from objpert.accounting._pld import distribution as pld_distribution
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import problem
from objpert.certify._calibration import calibrate
from objpert.certify._utility import e_opt
from objpert.cli import main
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import DataError, ModelFileError, ObjpertError, ParameterError
from objpert.mechanisms._certificates import discrete_gaussian_rho

pytestmark = pytest.mark.filterwarnings("ignore")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 2)) / 3
Y = (X[:, 0] > 0).astype(int)
PC = problem("logistic", n=1000, d=5, zeta=1.0, mu=0.1)


def fast(**kw):
    return dict(calibration="corollary413", random_state=0, **kw)


# ---------------------------------------------------------------- silently wrong


def test_robust_regression_on_targets_near_the_float_limit_is_finite_or_refused():
    y = np.where(np.arange(40) % 2, 1.7e308, -1.7e308)
    try:
        model = PrivateRobustRegression(scale=0.5, **fast()).fit(X, y)
    except ObjpertError:
        return
    assert np.isfinite(model.coef_).all() and math.isfinite(model.intercept_)


@pytest.mark.parametrize("make", [np.asarray, sparse.csr_matrix], ids=["dense", "sparse"])
def test_clipping_scales_huge_rows_instead_of_zeroing_them(make):
    from objpert._data import prepare

    Xh = np.array([[1e200, 1e200], [3e154, -4e154], [0.3, 0.4]])
    p = prepare(make(Xh), np.array([1.0, 0.0, 1.0]), labels="real", data_norm=1.0,
                fit_intercept=False, clip=True)  # fmt: skip
    rows = p.X.toarray() if sparse.issparse(p.X) else p.X
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), [1.0, 1.0, 0.5], rtol=1e-12)
    np.testing.assert_allclose(rows[0], [2**-0.5, 2**-0.5], rtol=1e-12)
    np.testing.assert_allclose(rows[1], [0.6, -0.8], rtol=1e-12)


EXTREME_X = np.array([[1e300, -1e300], [1e308, 1e308], [-1e308, 5.0], [1.7e308, -1.7e308]])


def test_multiclass_probabilities_on_extreme_finite_input_are_valid():
    model = PrivateLogisticRegression(classes=[0, 1, 2], **fast()).fit(X, np.arange(40) % 3)
    proba = model.predict_proba(EXTREME_X)
    assert not np.isnan(proba).any()
    assert ((proba >= 0) & (proba <= 1)).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    logp = model.predict_log_proba(EXTREME_X)
    assert not np.isnan(logp).any()
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=1e-12)
    assert set(model.predict(EXTREME_X).tolist()) <= {0, 1, 2}


def test_multiclass_probabilities_when_every_sigmoid_underflows():
    model = PrivateLogisticRegression(classes=[0, 1, 2], **fast()).fit(X, np.arange(40) % 3)
    model.intercept_ = np.array([-2000.0, -2001.0, -2003.0])  # every sigmoid is 0.0
    proba = model.predict_proba(X[:2])
    s = model.decision_function(X[:2])  # log sigmoid(s) = s + log1p(-sigmoid(s)) ~ s here
    ref = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, ref / ref.sum(axis=1, keepdims=True), rtol=1e-12)
    assert np.isfinite(model.predict_log_proba(X[:2])).all()


def test_robust_predict_and_score_do_not_overflow():
    X3 = RNG.normal(size=(40, 3)) / 3
    model = PrivateRobustRegression(fit_intercept=False, **fast()).fit(X3, X3[:, 0])
    model.coef_ = np.array([0.7, 0.7, 0.7])  # a partial sum overflows, the margin does not
    Xe = np.array([[1.7e308, 1.7e308, -1.7e308], [1e300, -1e300, 1e300]])
    with np.errstate(over="ignore"):
        assert not np.isfinite(Xe[:1] @ np.array([0.7, 0.7, 0.0])).all()  # the old overflow
    np.testing.assert_allclose(model.predict(Xe), [0.7 * 1.7e308, 0.7e300], rtol=1e-12)
    with pytest.raises(DataError, match="float64 range"):  # the margin itself is beyond
        model.predict(np.array([[1.7e308, 1.7e308, 1.7e308]]))
    assert math.isfinite(model.score(X3[:2], np.array([1e308, -1e308])))
    assert math.isfinite(model.score(X3, np.full(40, 1e300)))
    assert math.isfinite(model.score(Xe, np.array([1e308, -1e308])))


def test_gaussian_profile_is_in_the_unit_interval():
    for eps in (1e300, 3.7e9, 1e4):
        val = gaussian_profile(eps, 1.0, 1.0)
        assert 0.0 <= val <= 1.0 and not np.isnan(val)
    assert gaussian_profile(1.0, 1.0, 1e-300) == 1.0


def test_advanced_composition_never_reports_delta_above_one():
    assert composition.advanced(0.1, 0.5, 10, 0.5)[1] == 1.0


def test_basic_composition_never_reports_delta_above_one():
    assert composition.basic([1.0, 1.0], [0.6, 0.6]) == (2.0, 1.0)


def test_composed_uncertified_releases_are_reported_uncertified():
    weak = theorem41.certify(PC, 0.001, 6.0, 10, 0.1)  # delta = 1: nothing certified
    cc = composition.compose([weak] * 3, "basic")
    assert cc.delta == 1.0 and not cc.certified


def test_helpers_give_no_zero_or_infinite_sigma():
    assert math.isfinite(classical_gaussian_sigma(1000.0, 0.5, 5e-324))
    rho = discrete_gaussian_rho(1.0, 2.6e-233, 1)
    assert rho > 0  # was ZeroDivisionError; now +inf or a finite value, never 0 or NaN


def test_a_certificate_delta_is_never_exactly_zero_from_underflow():
    cert = theorem41.certify(PC, 10.0, 60.0, 100000, 100.0)  # e^{-1800}: underflows
    assert cert.certified and cert.delta > 0.0
    cert = theorem_c13.certify_limit(PC, 1e300, 1.0)
    assert cert.certified and cert.delta > 0.0


def test_save_after_set_params_is_refused(tmp_path):
    from objpert.persistence import save

    model = PrivateLogisticRegression(random_state=0, max_iter=200).fit(X, Y)
    model.set_params(mu=0.5)
    with pytest.raises(ModelFileError):
        save(model, tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


# ---------------------------------------------------------------- raw exceptions


HUGE = 10**400


@pytest.mark.parametrize(
    "call",
    [
        lambda: problem("logistic", n=HUGE, d=3, zeta=1, mu=1),
        lambda: problem("logistic", n=1000, d=HUGE, zeta=1, mu=1),
        lambda: problem("logistic", n=1000, d=3, zeta=HUGE, mu=1),
        lambda: theorem41.certify(PC, 1.0, 6.0, HUGE, 1.0),
        lambda: theorem41.certify(PC, HUGE, 6.0, 100, 1.0),
        lambda: theorem_c13.certify(PC, 1.0, 100, HUGE, u=6.0),
        lambda: calibrate("logistic", n=HUGE, d=3, zeta=1, epsilon=1, delta=1e-6),
        lambda: calibrate("logistic", n=1000, d=3, zeta=1, epsilon=1, delta=1e-6,
                          max_iter=HUGE),
        lambda: objpert.plan("noisy_gd", loss="logistic", n=1000, d=3, zeta=1, epsilon=1,
                             delta=1e-6, iterations=HUGE),
        lambda: e_opt(PC, HUGE, 10),
        lambda: PrivateLogisticRegression(epsilon=HUGE, **fast()).fit(X, Y),
        lambda: PrivateLogisticRegression(max_iter=HUGE, **fast()).fit(X, Y),
        lambda: PrivateRobustRegression(scale=HUGE, **fast()).fit(X, X[:, 0]),
    ],
)  # fmt: skip
def test_huge_integers_are_a_parameter_error(call):
    with pytest.raises(ParameterError, match=r"\S"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: theorem41.certify(PC, 1e-300, 6.0, 100, 1.0),
        lambda: theorem41.certify(PC, 1e300, 6.0, 100, 1.0),
        lambda: theorem41.certify(PC, 1.0, 6.0, 100, 1e-300),
        lambda: theorem_c13.certify_limit(PC, 1e-300, 1.0),
        lambda: theorem_c13.certify_limit(PC, 1e300, 1.0),
        lambda: theorem_c13.certify(PC, 1e-300, 100, 1.0, u=6.0),
    ],
)
def test_extreme_legal_values_give_a_certificate(call):
    cert = call()
    assert 0.0 <= cert.delta <= 1.0 and (not cert.certified or cert.delta < 1.0)


@pytest.mark.parametrize(
    "kw",
    [
        dict(epsilon=1e-300),
        dict(data_norm=1e-300),
        dict(data_norm=1e300),
    ],
)
def test_extreme_estimator_parameters_are_a_library_error(kw):
    with pytest.raises(ObjpertError, match=r"\S"):
        PrivateLogisticRegression(random_state=0, max_iter=200, **kw).fit(X, Y)


def test_extreme_robust_scale_is_a_library_error():
    with pytest.raises(ObjpertError, match=r"\S"):
        PrivateRobustRegression(scale=1e-300, random_state=0, max_iter=200).fit(X, X[:, 0])


def test_extreme_calibration_targets_are_a_library_error():
    for kw in (dict(epsilon=1e-300), dict(zeta=1e-300)):
        args = dict(n=1000, d=5, zeta=1.0, epsilon=1.0, delta=1e-6) | kw
        with pytest.raises(ObjpertError, match=r"\S"):
            calibrate("logistic", **args)
        with pytest.raises(ObjpertError, match=r"\S"):
            calibrate("logistic", calibration="corollary413", **args)


@pytest.mark.parametrize(
    "text",
    [
        '{"format": NaN}',
        '{"format": "objpert-model", "version": 2, "x": Infinity}',
        '{"a": 1e400}',
        "[" * 100000 + "]" * 100000,
        '{"a": ' + "[" * 900 + "]" * 900 + "}",
        '{"a": ' + "1" * 5000 + "}",
    ],
    ids=["nan", "infinity", "overflowing-float", "deep", "deep-below-recursion", "huge-int"],
)
def test_load_refuses_hostile_json(tmp_path, text):
    from objpert.persistence import load

    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ModelFileError):
        load(path)


@pytest.mark.parametrize("depth", [500, 900])
def test_load_refuses_deep_nesting_inside_a_model_file(tmp_path, depth):
    """Below json's own limit but deep enough for the digest's recursion (RecursionError)."""
    from objpert.persistence import load, save

    path = save(PrivateLogisticRegression(**fast()).fit(X, Y), tmp_path / "m.json")
    text = path.read_text().replace(
        '"feature_names_in": null', '"feature_names_in": ' + "[" * depth + "]" * depth
    )
    assert "[[[" in text
    path.write_text(text)
    with pytest.raises(ModelFileError, match="nested"):
        load(path)


def test_labels_mixing_none_and_strings_are_a_data_error():
    y = np.array([None, "a", "b"] * 13 + ["a"], dtype=object)
    with pytest.raises(DataError, match="None"):
        PrivateLogisticRegression(**fast()).fit(X, y)
    with pytest.raises(DataError, match="None"):
        PrivateLogisticRegression(classes=["a", "b"], **fast()).fit(X, y)


# ---------------------------------------------------------------- accepted invalid input


@pytest.mark.parametrize("dtype", ["datetime64[D]", "timedelta64[s]"])
def test_date_and_time_features_are_refused(dtype):
    Xd = np.arange(40).reshape(20, 2).astype(dtype)
    with pytest.raises(DataError, match="dates or times"):
        PrivateRobustRegression(**fast()).fit(Xd, np.arange(20.0))


def test_date_labels_are_refused():
    y = (np.arange(40) % 2).astype("datetime64[D]")
    with pytest.raises(DataError, match="dates or times"):
        PrivateLogisticRegression(**fast()).fit(X, y)


@pytest.mark.parametrize(
    "kw", [dict(epsilon="1.0"), dict(epsilon=True), dict(delta=np.True_), dict(data_norm="2")]
)
def test_strings_and_bools_are_not_numbers(kw):
    name = next(iter(kw))
    with pytest.raises(ParameterError, match=rf"^(The )?'?{name}'? (parameter .*)?must be"):
        PrivateLogisticRegression(**fast(**kw)).fit(X, Y)


def test_max_iterations_true_is_not_one():
    with pytest.raises(ParameterError, match="max_iter"):
        calibrate("logistic", n=1000, d=5, zeta=1, epsilon=1, delta=1e-6, max_iter=True)
    with pytest.raises(ParameterError, match="max_iter"):
        PrivateLogisticRegression(max_iter=True, random_state=0).fit(X, Y)


@pytest.mark.parametrize(
    "call",
    [
        lambda: objpert.plan("lop", loss="logistic", n=-5, d=3, zeta=1.0, epsilon=1.0, delta=1e-6),
        lambda: objpert.plan(
            "output_perturbation",
            loss="logistic",
            n=10,
            d=3,
            zeta=1.0,
            epsilon=1.0,
            delta=1e-6,
            mu=-1.0,
        ),
        lambda: objpert.plan(
            "output_perturbation", loss="logistic", n=10, d=0, zeta=1.0, epsilon=1.0, delta=1e-6
        ),
        lambda: objpert.plan(
            "amp", loss="logistic", n=10, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, gamma=-1.0
        ),
        lambda: e_opt(PC, -1.0, 10),
        lambda: theorem41.epsilon0(PC, -1.0, 10),
        lambda: theorem41.divergence(PC, -1.0, 0.5),
        lambda: theorem_c13.limit_s(PC, -1.0),
    ],
)
def test_negative_n_or_sigma_in_helpers_is_refused(call):
    with pytest.raises(ParameterError):
        call()


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--methods", ",", "--data", "breast_cancer"],
        ["compare", "--seeds", "0", "--data", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--data", ",", "--methods", "nonprivate", "--seeds", "1"],
        ["compare", "--epsilons", ",", "--data", "breast_cancer", "--methods", "nonprivate"],
        ["demo", "--seeds", "0", "--datasets", "breast_cancer", "--epsilons", "1"],
    ],
)
def test_compare_without_work_exits_2_with_one_line(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("objpert: error:")


def test_compare_library_refuses_no_work():
    from objpert.apps import _compare as compare

    for args in (([], [1.0], 1e-6, 1), (["breast_cancer"], [], 1e-6, 1),
                 (["breast_cancer"], [1.0], 1e-6, 0)):  # fmt: skip
        with pytest.raises(ParameterError):
            compare.run(*args, methods=("nonprivate",))
    with pytest.raises(ParameterError):
        compare.run(["breast_cancer"], [1.0], 1e-6, 1, methods=())


def _model_file(tmp_path, edit):
    from objpert.persistence import digest, save

    model = PrivateLogisticRegression(**fast()).fit(X, Y)
    path = save(model, tmp_path / "m.json")
    payload = json.loads(path.read_text())
    edit(payload)
    payload["digest"] = digest(payload)  # the digest is no signature: anyone can redo it
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    "field, value",
    [
        ("delta_truncation", 5.0),
        ("delta_truncation", "0.1"),
        ("delta_divergence", -1.0),
        ("utility_bound", [1.0]),
        ("delta_sample", 2.0),
        ("sigma", "abc"),
        ("u", None),
    ],
)
def test_model_files_with_out_of_range_or_non_numbers_are_refused(tmp_path, field, value):
    from objpert.persistence import load

    path = _model_file(tmp_path, lambda p: p["plans"][0].__setitem__(field, value))
    with pytest.raises(ModelFileError, match=field):
        load(path)


# ---------------------------------------------------------------- slow input


@pytest.mark.parametrize("k", [10**7, 10**9, 2**53])
def test_split_budget_for_huge_k_is_instant(k):
    start = time.perf_counter()
    split = composition.split_budget(1.0, 1e-6, k)
    assert time.perf_counter() - start < 0.5
    assert split.epsilon_total <= 1.0 and split.delta_total <= 1e-6
    assert split.epsilon_i > 0.0 and split.delta_i > 0.0


def test_split_budget_is_unchanged_for_small_k():
    s = composition.split_budget(1.0, 1e-6, 3)
    assert (s.method, s.epsilon_i) == ("basic", 1.0 / 3) or s.epsilon_total <= 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = composition.split_budget(1.0, 1e-5, 1000)
    assert s.epsilon_total <= 1.0 and s.delta_total <= 1e-5


# ---------------------------------------------------------------- found by the long campaign


def test_output_sensitivity_with_a_subnormal_ridge_is_refused_not_infinite():
    from objpert.mechanisms._certificates.output import output_sensitivity

    with pytest.raises(ParameterError, match="overflows"):
        output_sensitivity(2, 1.0, 2.225073858507203e-309)
    assert output_sensitivity(2, 0.0, 1e-300) == 0.0


def test_qop_plan_refuses_a_default_m_beyond_exact_integers_at_once():
    from objpert.mechanisms._certificates.qop import qop_plan

    with pytest.raises(ParameterError, match="m must be an integer"):
        qop_plan(4_503_599_627_370_497, 1.0, 0.1, smoothness=1.0, rank=1)


# ---------------------------------------------------------------- sizes checked before allocation


TOO_LARGE = {
    # found at random: a Gaussian of sensitivity 4e16 (a ValueError or a MemoryError)
    "gaussian-sensitivity": "accounting.compose([accounting.gaussian(5.75, 4.1e16)] * 2, 1e-3)",
    "laplace-sensitivity": "accounting.compose([accounting.laplace(1.0, 1e5)], 1e-3)",
    "point-count": "accounting.compose([accounting.point(3.0, 1e-6, count=10**6)], 1e-3)",
    "gaussian-count": "accounting.compose([accounting.gaussian(1.0, 1.0, count=10**9)], 1e-3)",
    # found at random (the run killed for memory): a budget asked about 2^53 releases
    "zcdp-count": "accounting.PrivacyAccountant(1, 1e-12).can_spend(accounting.zcdp(1, 2**53 - 2))",
    # the peers' PLD accountants (not fuzzed before: the pld accountant was left out)
    "noisy-gd-iterations": "gsteps.pld_epsilon(1e-6, 10**9, 1.0)",
    "noisy-gd-noise": "gsteps.noisy_gd_epsilon(1e-6, 100, 1e-3, 'pld')",
    "dp-sgd-discretization": "subsampled_gaussian_epsilon(1e-6, 10**6, 0.5, 1.0, 1e-6)",
}  # fmt: skip


@functools.cache
def _too_large_outcomes() -> dict[str, str]:
    """Every call of TOO_LARGE in one fresh interpreter whose address space is capped (1.5
    GiB), so that an allocation from a user-given size fails fast (MemoryError) instead of
    exhausting the machine: the name of what each raised (or 'built') and its message."""
    import subprocess
    import sys

    limit = int(1.5 * 2**30)
    lines = [
        "import resource",
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))",
        "from objpert import accounting",
        "from objpert.accounting import _gaussian_steps as gsteps",
        "from objpert.accounting._gaussian_steps import subsampled_gaussian_epsilon",
    ]
    for name, call in TOO_LARGE.items():
        lines += [
            "try:",
            f"    {call}",
            f"    print({name!r}, 'built')",
            "except BaseException as exc:",
            f"    print({name!r}, type(exc).__name__, ' '.join(str(exc).split()))",
        ]
    proc = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=600
    )
    out = {}
    for line in proc.stdout.splitlines():
        name, _, rest = line.partition(" ")
        out[name] = rest
    return out


@pytest.mark.parametrize("name", sorted(TOO_LARGE))
def test_a_pld_too_large_to_build_is_refused_before_allocation(name):
    pytest.importorskip("dp_accounting")
    out = _too_large_outcomes().get(name, "no output")
    assert out.startswith("ParameterError") and "grid points" in out, out


def test_the_pld_size_check_predicts_dp_accountings_own_sizes():
    """The predicted grid sizes are those of the PLDs dp-accounting then builds."""
    pytest.importorskip("dp_accounting")
    from objpert.accounting import _pld as pld
    from objpert.accounting import _pld_grid as pld_grid

    for kind, p in [("gaussian", {"sigma": 0.7, "sensitivity": 2.0}),
                    ("laplace", {"scale": 0.5, "sensitivity": 3.0})]:  # fmt: skip
        built = pld._single_pld(kind, tuple(p.items()), 1e-3)
        par, sens = p.get("sigma", p.get("scale")), p["sensitivity"]
        predicted = pld_grid.mechanism_points(kind, par, sens, 1e-3)
        assert 0 <= predicted - pld_grid.points(built) <= 4
    single = pld_distribution(pld.point(0.5, 1e-6), 1e-3)
    for k in (2, 30, 400):
        assert pld_grid.self_composed_points(single, k) >= pld_grid.points(single.self_compose(k))


def test_self_composing_a_release_without_guarantee_is_no_guarantee():
    """zCDP with rho = 2362 has delta = 1 up to the grid's end (found at random: dp-accounting's
    self-composition took log(1 - 1), a math domain error)."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    pld = accounting.compose([accounting.zcdp(2362.0, count=5)])
    assert accounting.delta_for_epsilon(pld, 30.0) == 1.0
    assert accounting.epsilon_for_delta(pld, 0.5) == math.inf


@pytest.mark.parametrize(
    "kw",
    [dict(d=2**53), dict(draws=2**53), dict(d=10**6, draws=10**4)],
    ids=["d", "draws", "d-times-draws"],
)
def test_timing_a_step_refuses_synthetic_data_too_large_to_allocate(kw):
    """Found at random (test_fuzz_threads): a hostile d or draws reached np.zeros."""
    from objpert._engines.timing import seconds_per_step

    with pytest.raises(ParameterError, match="GiB"):
        seconds_per_step(**{"n": 10, "d": 2, **kw})


def test_timing_a_step_refuses_a_number_of_steps_that_never_ends():
    """Found at random (test_fuzz_threads timed out): steps = 10**12 timed for hours."""
    from objpert._engines.timing import seconds_per_step

    start = time.perf_counter()
    with pytest.raises(ParameterError, match="steps"):
        seconds_per_step(10, 2, steps=10**12)
    assert time.perf_counter() - start < 5.0


def test_a_python_integer_beyond_float64_in_the_features_is_a_data_error():
    from objpert._data import as_feature_matrix
    from objpert.exceptions import DataError

    with pytest.raises(DataError, match="float64 range"):
        as_feature_matrix([[1.0, 10**300 * 10**100]])


def test_a_0d_array_of_bin_edges_is_a_parameter_error():
    from objpert.exceptions import ParameterError
    from objpert.preprocessing._binning import check_edges

    for edges in (np.array(2.0), [np.array(2.0)], [[0.0, 1.0], np.float64(3.0)]):
        with pytest.raises(ParameterError):
            check_edges(edges)


def test_a_pld_grid_step_out_of_range_is_a_parameter_error_in_every_accountant():
    from objpert.accounting import _gaussian_steps as noisy_gd_accounting
    from objpert.exceptions import ParameterError

    with pytest.raises(ParameterError, match="discretization"):
        noisy_gd_accounting.pld_epsilon(5.3e-5, 503, 980.5, 7.55e48)  # overflowed in exp(d)


def test_a_noise_multiplier_beyond_the_pld_range_is_a_parameter_error():
    from objpert.accounting import _gaussian_steps as noisy_gd_accounting
    from objpert.accounting._gaussian_steps import subsampled_gaussian_epsilon
    from objpert.exceptions import ParameterError

    with pytest.raises(ParameterError, match="noise_multiplier"):
        # sigma^2 overflowed in dp-accounting
        subsampled_gaussian_epsilon(0.316, 35, 1.0, 1e300, 1e-3)
    with pytest.raises(ParameterError, match="noise_multiplier"):
        noisy_gd_accounting.pld_epsilon(1e-6, 10, 1e300)
