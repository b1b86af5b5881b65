"""The comparison's table on a tiny run: every registered mechanism, standard errors and
paired intervals recomputed with plain numpy and a closed-form t quantile, per-release
values reproduced by direct releases, certificates in range; refusals exit 2."""

import json
import math
import warnings

import numpy as np
import pytest

from objpert._data import prepare
from objpert.apps import _compare as compare
from objpert.apps._demo import split
from objpert.apps.datasets import load
from objpert.cli import main
from objpert.mechanisms import _registry as registry

EPS, DELTA, SEEDS = 3.0, 1e-6, 3
METHODS = (*registry.names(), "nonprivate", "theta_ref")


def t_quantile_df2(p: float) -> float:
    """Student t quantile with 2 degrees of freedom, closed form: F(t) = 1/2 +
    t / (2 sqrt(2 + t^2)) inverted."""
    return math.sqrt(2.0) * (2.0 * p - 1.0) / math.sqrt(4.0 * p * (1.0 - p))


@pytest.fixture(scope="module")
def tiny():  # about a minute on a busy 2-core machine: the tests using it are marked slow
    rows, meta = compare.run(["breast_cancer"], [EPS], DELTA, SEEDS, methods=METHODS)
    return {r.method: r for r in rows}, meta


@pytest.mark.slow
def test_every_registered_mechanism_has_a_row(tiny):
    by, meta = tiny
    assert set(registry.names()) <= set(by)
    assert set(meta["rules"]) >= set(registry.names())
    for name in registry.names():
        assert by[name].runs == SEEDS and len(by[name].accuracies) == SEEDS


@pytest.mark.slow
def test_standard_errors_and_paired_intervals(tiny):
    by, _ = tiny
    t = t_quantile_df2(0.975)
    for method, r in by.items():
        acc, obj = np.array(r.accuracies), np.array(r.objectives)
        assert r.accuracy_mean == pytest.approx(acc.sum() / SEEDS, abs=1e-15)
        dev = acc - acc.mean()
        assert r.accuracy_se == pytest.approx(np.sqrt(dev @ dev / (SEEDS - 1) / SEEDS), abs=1e-15)
        if method == "watkins_arora":
            assert r.versus == "" and math.isnan(r.accuracy_diff[0])
            continue
        ref = by[r.versus]
        for got, mine, theirs in ((r.accuracy_diff, acc, ref.accuracies),
                                  (r.objective_diff, obj, ref.objectives)):  # fmt: skip
            d = mine - np.array(theirs)
            half = t * np.sqrt(((d - d.mean()) ** 2).sum() / (SEEDS - 1) / SEEDS)
            assert got == pytest.approx((d.mean(), d.mean() - half, d.mean() + half), abs=1e-12)


@pytest.mark.slow
def test_qop_is_paired_with_releasing_its_reference_point(tiny):
    by, _ = tiny
    assert by["qop"].versus == "theta_ref"
    assert all(by[m].versus == "watkins_arora" for m in by if m not in ("qop", "watkins_arora"))
    ref = by["theta_ref"]
    assert (ref.certified_epsilon, ref.certified_delta) == (0.0, 0.0)
    assert ref.objective_mean == pytest.approx(math.log(2.0), rel=1e-12)  # w = 0


@pytest.mark.slow
def test_certificates_in_range_and_times_ordered(tiny):
    by, _ = tiny
    for name in registry.names():
        r = by[name]
        assert 0.0 < r.certified_epsilon <= EPS * (1 + 1e-9), name
        if name == "qop":  # its certificate rests on unchecked assumptions: not certified
            assert r.certified_delta == 1.0
            continue
        assert 0.0 <= r.certified_delta <= DELTA * (1 + 1e-9), name
    assert "| not certified |" in compare.markdown([by["qop"]])
    assert math.isinf(by["nonprivate"].certified_epsilon)
    for r in by.values():
        assert 0.0 <= r.seconds_min <= r.seconds_median <= r.seconds_max


@pytest.mark.slow
def test_per_release_values_are_direct_releases(tiny):
    by, _ = tiny
    ds = load("breast_cancer")
    Xtr, Xte, ytr, yte = split(ds)
    P, Pte = prepare(Xtr, ytr, data_norm=ds.data_norm), prepare(Xte, yte, data_norm=ds.data_norm)
    mech = registry.get("noisy_gd")
    plan = compare.mechanism_plan("noisy_gd", P.n, P.d, P.zeta, EPS, DELTA)
    for s in range(SEEDS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = mech.release(P.X, P.y, plan, np.random.default_rng(1000 * s + 17)).weights
        pairs = zip(Pte.X, Pte.y, strict=True)
        acc = np.mean([(1.0 if x @ w > 0 else -1.0) == y for x, y in pairs])
        loss = np.mean(np.log1p(np.exp(-P.y * (P.X @ w))))
        assert by["noisy_gd"].accuracies[s] == pytest.approx(acc, abs=1e-15)
        assert by["noisy_gd"].objectives[s] == pytest.approx(loss, rel=1e-12)


@pytest.mark.slow
def test_report_states_rules_and_command(tiny):
    by, meta = tiny
    text = compare.report(list(by.values()), meta, "objpert compare --tiny")
    assert "`objpert compare --tiny`" in text
    assert all(f"- `{m}`:" in text for m in registry.names())
    assert text.count("| qop | 3 | 3 |") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--methods", ""],
        ["compare", "--methods", ","],
        ["compare", "--seeds", "0"],
        ["compare", "--seeds", "-3"],
        ["compare", "--data", ""],
        ["compare", "--data", " , "],
        ["compare", "--data", "no_such_dataset", "--methods", "theta_ref"],
        ["compare", "--epsilons", ""],
        ["compare", "--workers", "0", "--methods", "theta_ref"],
        ["compare", "--workers=-2", "--methods", "theta_ref"],
    ],
)
def test_no_work_exits_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("objpert: error:")


def test_the_json_is_json_and_a_repeated_value_runs_once(capsys):
    """No NaN or Infinity (null stands for them: the non-private row's epsilon), and
    --epsilons 3,3 runs epsilon 3 once."""
    argv = ["compare", "--datasets", "breast_cancer,breast_cancer", "--epsilons", "3,3",
            "--seeds", "2", "--methods", "nonprivate,theta_ref", "--json"]  # fmt: skip
    assert main(argv) == 0

    def refuse(token):
        raise AssertionError(f"{token} is not JSON")

    payload = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert payload["meta"]["epsilons"] == [3.0] and payload["meta"]["datasets"] == ["breast_cancer"]
    rows = [compare.CompareRow.from_dict(r) for r in payload["rows"]]
    assert sorted(r.method for r in rows) == ["nonprivate", "theta_ref"]
    assert math.isnan(next(r for r in rows if r.method == "nonprivate").certified_epsilon)


def test_diffprivlib_runs_the_seeds_every_method_runs(monkeypatch):
    """Paired by seed: diffprivlib's release s uses seed 1000 s + 17, as every method's."""
    from objpert.apps import _external

    seen = {}

    def fake(Xtr, ytr, Xte, yte, *, epsilons, seeds, data_norm, env_dir=None):
        seen["seeds"] = list(seeds)
        rows = [{"epsilon": e, "seed": s, "accuracy": 0.5, "seconds": 0.0,
                 "coef": [0.0] * Xtr.shape[1], "intercept": 0.0}
                for e in epsilons for s in seeds]  # fmt: skip
        return {"rows": rows, "versions": {}, "privacy": "pure"}

    monkeypatch.setattr(_external, "run_diffprivlib", fake)
    compare.run(["breast_cancer"], [1.0], DELTA, 3, methods=["diffprivlib"], workers=1)
    assert seen["seeds"] == [compare.seed_of(s) for s in range(3)] == [17, 1017, 2017]


def test_quick_states_its_setting(monkeypatch, capsys):
    monkeypatch.setattr(compare, "QUICK", {"datasets": ("breast_cancer",), "epsilons": (3.0,),
                                           "seeds": 2})  # fmt: skip
    assert main(["compare", "--quick", "--methods", "noisy_gd,theta_ref"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Quick setting (--quick): breast_cancer, epsilons 3, 2 seeds.")
    assert "| noisy_gd | 3 | 2 |" in out
    assert main(["compare", "--quick", "--methods", "theta_ref", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    meta = payload["meta"]
    rows = [compare.CompareRow.from_dict(r) for r in payload["rows"]]
    yte = split(load("breast_cancer"))[3]
    share = np.mean(prepare(np.zeros((len(yte), 1)), yte, data_norm=1.0).y == -1.0)  # w = 0
    assert f"| theta_ref | 3 | 2 | {share:.4f} +- 0.0000 |" in compare.markdown(rows)
    assert (meta["datasets"], meta["epsilons"], meta["seeds"]) == (["breast_cancer"], [3.0], 2)
    # the pairing's reference is run although not asked for; only asked-for rows are shown
    assert "watkins_arora" in meta["rules"]
