"""``objpert bench``: the runner, its CLI, the fit benchmark and the flights dataset."""

import json
import math
import os
import sys
import types

import numpy as np
import pytest

from objpert.apps import datasets
from objpert.apps._bench import runner
from objpert.apps._bench.common import BenchResult
from objpert.cli import main
from objpert.exceptions import ParameterError


@pytest.fixture(scope="module")
def flights():
    return datasets.load_flights()


@pytest.fixture
def cached_flights(flights, monkeypatch):
    """The fit benchmark reloads the data on each call: serve the module's copy."""
    monkeypatch.setattr(datasets, "load_flights", lambda: flights)


def test_flights_is_a_public_binary_task(flights):
    assert flights.X.shape == (336_776 - 9_430, 41)  # cancelled / diverted flights dropped
    assert flights.y.shape == (flights.n,)
    assert set(np.unique(flights.y)) == {0, 1}
    assert 0.35 < flights.y.mean() < 0.45  # arrived late
    assert np.all(np.isfinite(flights.X))
    assert np.abs(flights.X).max() <= 1.0
    assert np.linalg.norm(flights.X, axis=1).max() <= flights.data_norm == math.sqrt(7)
    assert len(flights.feature_names) == flights.X.shape[1]
    # each one-hot group covers every row: the published category lists are complete
    for group in ("month", "weekday", "carrier", "origin"):
        cols = [j for j, n in enumerate(flights.feature_names) if n.startswith(group + "=")]
        assert np.all(flights.X[:, cols].sum(axis=1) == 1), group
    assert datasets.LOADERS["flights"] is datasets.load_flights


@pytest.mark.parametrize(
    ("threshold", "kind", "ratio", "passed"),
    [
        (None, None, 5.0, None),
        (2.0, "max", 2.0, True),
        (2.0, "max", 2.01, False),
        (2.0, "min", 2.0, True),
        (2.0, "min", 1.99, False),
    ],
)
def test_passed(threshold, kind, ratio, passed):
    r = BenchResult("x", ratio, "b", 1.0, ratio, threshold, kind)
    assert r.passed is passed
    assert r.to_dict()["passed"] is passed


@pytest.mark.parametrize("only", ["foo", "dense,foo", ",", ""])
def test_bad_only_is_a_one_line_error(only, capsys):
    assert main(["bench", "--only", only]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("objpert: error: --only") and "\n" not in err


def test_run_benchmarks_refuses_unknown_names():
    with pytest.raises(ParameterError, match="--only"):
        runner.run_benchmarks(["fit", "gpu"])


def test_bad_threads_is_a_one_line_error(capsys):
    assert main(["bench", "--only", "fit", "--threads", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.fixture
def fake_bench(monkeypatch):
    """A benchmark module 'fake' recording its arguments and the BLAS limit it ran under."""
    seen = {}

    def bench_fake(quick: bool = False, threads: int = 1) -> list[BenchResult]:
        from threadpoolctl import threadpool_info

        seen.update(quick=quick, threads=threads)
        seen["limits"] = {p["num_threads"] for p in threadpool_info()}
        return [
            BenchResult("fake fast", 1.0, "base", 2.0, 0.5, 1.0, "max"),
            BenchResult("fake slow", 3.0, "base", 2.0, 1.5, 1.0, "max", note="too slow"),
        ]

    module = types.ModuleType("fake_bench_module")
    module.bench_fake = bench_fake
    monkeypatch.setitem(sys.modules, "fake_bench_module", module)
    monkeypatch.setitem(runner.BENCHMARKS, "fake", ("fake_bench_module", "bench_fake"))
    monkeypatch.setitem(runner.BENCHMARKS, "gone", ("objpert.apps._bench.no_such_module", "f"))
    module.bench_broken = lambda: 1 / 0
    monkeypatch.setitem(runner.BENCHMARKS, "broken", ("fake_bench_module", "bench_broken"))
    return seen


def test_runner_passes_options_pins_threads_and_skips_missing(fake_bench):
    results = runner.run_benchmarks(["gone", "fake"], quick=True, threads=1)
    assert fake_bench["quick"] is True and fake_bench["threads"] == 1
    assert fake_bench["limits"] <= {1}  # every BLAS/OpenMP pool pinned to one thread
    assert [r.name for r in results] == ["gone", "fake fast", "fake slow"]
    assert results[0].note == "skipped: objpert.apps._bench.no_such_module is missing"
    assert [r.passed for r in results] == [None, True, False]


def test_threads_default_to_the_available_cores(fake_bench):
    from objpert._engines.blocked import available_cores

    runner.run_benchmarks(["fake"])
    assert fake_bench["threads"] == available_cores()
    assert fake_bench["limits"] <= {available_cores()}


def test_missed_threshold_is_printed_with_exit_zero_and_files_written(fake_bench, tmp_path, capsys):
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    args = ["bench", "--only", "fake,gone", "--quick", "--threads", "1", "--json-file", str(out)]
    assert main([*args, "--markdown-file", str(md)]) == 0
    printed = capsys.readouterr().out
    assert "fake slow" in printed and "FAIL" in printed and "skipped" in printed
    assert "1 threshold(s) not met: fake slow" in printed
    payload = json.loads(out.read_text())  # strict JSON: skipped NaNs are null
    assert payload["meta"]["quick"] is True and payload["meta"]["threads"] == 1
    assert [r["passed"] for r in payload["results"]] == [True, False, None]
    assert payload["results"][2]["seconds"] is None
    assert md.read_text().splitlines()[2].startswith("| fake fast | 1 | base | 2 | 0.5 | <= 1 |")
    assert main(["bench", "--only", "fake", "--markdown"]) == 0
    assert capsys.readouterr().out.startswith("| benchmark | seconds |")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dense", "sparse", "batched", "dask", "mechanisms"])
def test_benchmarks_run_quick_from_the_cli(name, capsys):
    assert main(["bench", "--quick", "--only", name]) == 0
    out = capsys.readouterr().out
    assert "objpert bench (quick sizes" in out and "skipped: objpert" not in out


def test_fit_quick_from_the_cli(cached_flights, capsys):
    assert main(["bench", "--quick", "--only", "fit"]) == 0
    out = capsys.readouterr().out
    assert "fit vs scikit-learn (flights)" in out and "fit vs diffprivlib (flights)" in out
    assert "accuracy: objpert" in out


def test_fit_reports_diffprivlib_as_skipped_when_unavailable(cached_flights, monkeypatch):
    from objpert.apps._bench.fit import QUICK_ROWS, bench_fit
    from objpert.apps._external import diffprivlib_env

    def offline(*args, **kwargs):
        raise diffprivlib_env.ExternalPeerError("could not build the diffprivlib environment")

    monkeypatch.setattr(diffprivlib_env, "run_diffprivlib", offline)
    sk, dp = bench_fit(quick=True)
    assert sk.seconds > 0 and sk.baseline_seconds > 0
    assert sk.ratio == pytest.approx(sk.seconds / sk.baseline_seconds)
    assert f"{QUICK_ROWS:,} x 41 rows" in sk.note and "sklearn 0." in sk.note
    assert math.isnan(dp.ratio) and dp.note.startswith("skipped: could not build")


def test_blas_env_is_set_inside_and_restored(monkeypatch):
    from objpert.apps._bench.fit import BLAS_ENV, blas_env

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    with blas_env(2):
        assert all(os.environ[k] == "2" for k in BLAS_ENV)
    assert os.environ["OMP_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ


def test_a_raising_benchmark_is_a_row_and_exit_one(fake_bench, capsys):
    assert main(["bench", "--only", "broken,fake"]) == 1
    captured = capsys.readouterr()
    assert "ERROR" in captured.out and "ZeroDivisionError" in captured.out
    assert "fake fast" in captured.out  # the others still ran
    assert captured.err == "objpert: error: benchmark(s) raised: broken\n"


def test_the_mechanism_benchmark_is_in_the_runners_list():
    assert runner.BENCHMARKS["mechanisms"] == (
        "objpert.apps._bench.mechanisms",
        "bench_mechanisms",
    )


def test_mechanism_benchmark_times_every_registered_mechanism():
    from objpert.apps._bench.mechanisms import REFERENCE, bench_mechanisms
    from objpert.mechanisms import _registry as registry

    results = bench_mechanisms(n=200, d=3, rounds=3, warmup=1, settle=0.0)
    assert [r.name for r in results] == [f"release {name}" for name in registry.names()]
    for name, r in zip(registry.names(), results, strict=True):
        assert not r.note.startswith(("error", "skipped")), r.note
        assert r.seconds > 0 and r.passed is None  # reported only
        low, high = (float(s) for s in r.note.split("min ")[1].split(", max "))
        # the note prints three significant digits: rounding moves them by up to 0.5%
        assert low <= r.seconds * (1 + 5e-3) and r.seconds <= high * (1 + 5e-3)
        assert "median of 3 rounds" in r.note
        mechanism = registry.get(name)
        if "logistic" in mechanism.losses:
            assert r.note.startswith("logistic, n=200, d=3")
            assert r.baseline == f"{REFERENCE} release"
            assert r.ratio == pytest.approx(r.seconds / r.baseline_seconds)
        else:  # QOP: its own squared-loss problem, no common baseline
            assert r.note.startswith(f"{mechanism.losses[0]}, n=200, d=3")
            assert r.baseline == "" and math.isnan(r.ratio)
    assert results[0].name == f"release {REFERENCE}" and results[0].ratio == pytest.approx(1.0)


def test_mechanism_benchmark_reports_a_broken_mechanism_and_times_the_others(monkeypatch):
    import dataclasses

    from objpert.apps._bench import mechanisms as bench
    from objpert.mechanisms import _registry as registry

    def broken(*args, **kwargs):
        raise RuntimeError("no release today")

    real_names, real_get = registry.names, registry.get
    fake = dataclasses.replace(real_get("amp"), name="broken", release=broken)
    other = dataclasses.replace(real_get("amp"), name="gd_only", losses=("hinge",))
    monkeypatch.setattr(registry, "names", lambda: ("lop", "broken", "gd_only"))
    monkeypatch.setattr(
        registry, "get", lambda name: {"broken": fake, "gd_only": other}.get(name) or real_get(name)
    )
    results = bench.bench_mechanisms(n=100, d=2, rounds=1, warmup=1, settle=0.0)
    assert real_names()  # the registry itself is untouched
    lop, bad, skipped = results
    assert lop.seconds > 0 and lop.baseline == ""  # no Watkins & Arora row to compare with
    assert bad.note == "error: RuntimeError: no release today" and math.isnan(bad.seconds)
    assert skipped.note.startswith("skipped: accepts neither") and runner.cells(skipped)[6] == (
        "skipped"
    )
