"""The command line's flags, plans, certificates and progress bar as a user meets them:
every estimator parameter is a flag with help and default, ``calibrate`` gives the plan
``train`` uses, ``certify --model`` certifies a saved model as it was calibrated, printed
certificates are a few lines, and the bar shows on terminals only."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import types
import warnings

import numpy as np
import pytest

from objpert.accounting._composition import compose
from objpert.cli import build_parser, main
from objpert.cli._certify import target_reasons
from objpert.cli._common import budget_warnings, thread_limit
from objpert.cli._params import flag_for, parameter_docs, parse_feature_bounds, value_reader
from objpert.cli._train import LIBRARY_ONLY
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import CliError, ParameterError
from objpert.mechanisms import _progress as progress


def run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


@pytest.mark.parametrize("cls", [PrivateLogisticRegression, PrivateRobustRegression])
def test_every_estimator_parameter_is_a_flag_with_help_and_default(cls):
    options = {s: a for a in subparser("train")._actions for s in a.option_strings}
    for name, default in cls().get_params().items():
        if name in LIBRARY_ONLY:  # the library's: a ledger, a Dask cluster, a prior
            assert "--" + name.replace("_", "-") not in options
            continue
        flag = flag_for(name)
        assert flag in options, flag
        text = options[flag].help or ""
        assert len(text) > 10, (flag, text)
        if name not in ("epsilon", "delta"):  # required: the budget is always chosen
            assert "default" in text, (flag, text)
            if isinstance(default, bool | float | int) and not isinstance(default, bool):
                assert repr(default) in text, (flag, text)


@pytest.mark.parametrize("command", ["demo", "compare", "bench"])
def test_threads_flag(command):
    options = {s for a in subparser(command)._actions for s in a.option_strings}
    assert "--threads" in options  # the threads of the whole run


def test_train_threads_are_n_jobs():
    options = {s for a in subparser("train")._actions for s in a.option_strings}
    assert "--n-jobs" in options and "--threads" not in options


def test_flags_reach_the_estimator():
    from objpert.cli._params import estimator_kwargs

    p = subparser("train")
    args = p.parse_args(
        ["--data", "x.csv", "--target", "y", "--epsilon", "0.5", "--delta", "1e-7", "--loss",
         "robust", "--scale", "0.25", "--comparator-norm", "2", "--intercept-scaling", "3",
         "--no-fit-intercept", "--mu", "0.1", "--max-iter", "77", "--seed", "4"]
    )  # fmt: skip
    kwargs = estimator_kwargs(args, PrivateRobustRegression, "robust")
    assert kwargs == {
        "epsilon": 0.5,
        "delta": 1e-7,
        "scale": 0.25,
        "comparator_norm": 2.0,
        "intercept_scaling": 3.0,
        "fit_intercept": False,
        "mu": 0.1,
        "max_iter": 77,
        "random_state": 4,
    }
    params = PrivateRobustRegression(**kwargs).get_params()
    assert all(params[k] == v for k, v in kwargs.items())
    args = p.parse_args(["--data", "x", "--target", "y", "--epsilon", "1", "--delta", "1e-6",
                         "--scale", "2"])  # fmt: skip
    with pytest.raises(CliError, match="--scale does not apply to --loss logistic"):
        estimator_kwargs(args, PrivateLogisticRegression, "logistic")


class _Documented:
    """A toy estimator.

    Parameters
    ----------
    a : float > 0 or None, default=None
        The first. It has two sentences.
    b, c : int >= 1, default=3
        Shared by two.
    d : {"x", "y"}, default="x"
        A choice.
    e
        As in :class:`Other`.

    Attributes
    ----------
    f_ : int
    """


def test_parameter_docs_read_numpydoc():
    docs = parameter_docs(_Documented)
    assert sorted(docs) == ["a", "b", "c", "d"]  # "As in ..." leaves e to another class
    assert docs["a"].type == "float > 0 or None, default=None"
    assert docs["a"].summary == "The first. It has two sentences"
    assert docs["b"].description == docs["c"].description == "Shared by two."
    assert docs["d"].type.startswith('{"x", "y"}')


def test_value_reader():
    read = value_reader("mu", "auto", '"auto" or float > 0')
    assert read("auto") == "auto" and read("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match="--mu"):
        read("fast")
    read = value_reader("intercept_scaling", None, "float > 0 or None")
    assert read("none") is None and read("2") == 2.0
    with pytest.raises(argparse.ArgumentTypeError, match="finite"):
        read("inf")
    read = value_reader("max_iter", 5000, "int >= 1")
    assert read("12") == 12 and isinstance(read("12"), int)
    with pytest.raises(argparse.ArgumentTypeError, match="integer"):
        read("1.5")
    read = value_reader("verbose", "auto", 'bool or "auto"')
    assert read("auto") == "auto" and read("on") is True and read("false") is False


def test_feature_bounds_from_text_and_files(tmp_path):
    want = [(18.0, 99.0), (0.0, 2e5), (-1.0, 1.0)]
    assert parse_feature_bounds("18:99,0:200000,-1:1") == want
    (tmp_path / "b.json").write_text(json.dumps([[18, 99], [0, 200000], [-1, 1]]))
    assert parse_feature_bounds(str(tmp_path / "b.json")) == want
    (tmp_path / "b.csv").write_text("lo,hi\n18,99\n0,200000\n-1,1\n")
    assert parse_feature_bounds(str(tmp_path / "b.csv")) == want
    for bad in ("3:1", "a:b", "1:2,nan:3", str(tmp_path / "missing.csv")):
        with pytest.raises(argparse.ArgumentTypeError, match="--feature-bounds"):
            parse_feature_bounds(bad)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A seeded binary model (n = 300, d = 3, data_norm = 2) saved to a file."""
    from objpert import save

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateLogisticRegression(
            data_norm=2.0, classes=[0, 1], max_iter=400, random_state=1
        ).fit(X, y)
    path = tmp_path_factory.mktemp("model") / "m.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save(model, path)
    return model, str(path)


def test_calibrate_gives_the_plan_train_uses(fitted, capsys):
    model, _ = fitted
    zeta = math.sqrt(2.0**2 + 2.0**2)  # the intercept column of value data_norm
    argv = ["calibrate", "--n", "300", "--d", "4", "--zeta", repr(zeta), "--epsilon", "1",
            "--delta", "1e-6", "--max-iter", "400", "--json"]  # fmt: skip
    code, out, _ = run(capsys, argv)
    assert code == 0
    plan = json.loads(out)
    for key in ("sigma", "mu", "eta", "iterations", "u", "objective", "comparator_norm"):
        assert plan[key] == getattr(model.plan_, key), key
    code, _, err = run(capsys, [*argv, "--radius", "3"])  # only --comparator-norm
    assert code == 2 and "unrecognized arguments: --radius" in err
    code, out3, _ = run(capsys, [*argv, "--objective", "population"])
    assert code == 0 and json.loads(out3)["objective"] == "population"


def test_certify_model_uses_the_calibrated_form(fitted, capsys):
    model, path = fitted
    code, out, _ = run(capsys, ["certify", "--model", path, "--json"])
    assert code == 0
    payload = json.loads(out)
    assert payload["certified"] is True and payload["reasons"] == []
    assert payload["form"] == model.certificate_.form == "c13"
    assert payload["delta"] == model.certificate_.delta <= payload["target_delta"] == 1e-6
    # a stricter target: not certified, and the reason is printed without --json
    code, out, _ = run(capsys, ["certify", "--model", path, "--delta", "1e-9"])
    assert code == 0 and "not certified: delta = " in out and "above the target" in out


def test_certify_model_of_three_classes(tmp_path, capsys):
    """A multiclass model: its releases re-derived and recomposed as the model composed
    them (the same total as the fitted certificate's)."""
    from objpert import save

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(300, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateLogisticRegression(
            data_norm=2.0, classes=[0, 1, 2], max_iter=50, random_state=0, multi_class="ovr"
        ).fit(X, rng.integers(0, 3, 300))
        save(model, tmp_path / "m3.json")
    code, out, _ = run(capsys, ["certify", "--model", str(tmp_path / "m3.json"), "--json"])
    assert code == 0
    payload = json.loads(out)
    assert payload["releases"] == 3 and payload["certified"] is True
    assert payload["composition"] == model.certificate_.method
    assert payload["epsilon"] == model.certificate_.epsilon
    assert payload["delta"] == model.certificate_.delta
    # calibrate --releases 3: the plan of each of the three releases
    argv = ["calibrate", "--n", "300", "--d", "3", "--zeta", repr(math.sqrt(8.0)),
            "--epsilon", "1", "--delta", "1e-6", "--max-iter", "50", "--releases", "3",
            "--json"]  # fmt: skip
    code, out, _ = run(capsys, argv)
    assert code == 0
    plan = json.loads(out)
    assert plan["composition"] == model.certificate_.method
    for key in ("sigma", "mu", "iterations", "epsilon", "delta"):
        assert plan[key] == getattr(model.plan_[0], key), key


def test_certify_prints_reasons_without_json(fitted, capsys):
    plan = fitted[0].plan_
    argv = ["certify", "--n", str(plan.n), "--d", str(plan.d), "--zeta", repr(plan.zeta),
            "--mu", repr(plan.mu), "--sigma", repr(plan.sigma), "--iterations", "1",
            "--epsilon", "0.001", "--delta", "1e-12"]  # fmt: skip
    code, out, _ = run(capsys, argv)
    assert code == 0
    assert "not certified: " in out


def test_target_comparison_is_exact_and_explained():
    target = 1e-6
    assert target_reasons(target, target) == []
    assert target_reasons(math.nextafter(target, 0.0), target) == []
    two = math.nextafter(math.nextafter(target, 1.0), 1.0)
    (reason,) = target_reasons(two, target)
    assert "by 2 ulp(s)" in reason and "certify --model" in reason
    (far,) = target_reasons(2e-6, target)
    assert "ulp" not in far and "above the target" in far


def test_budget_warnings():
    n = 1000
    assert budget_warnings(1.0, math.nextafter(1 / n, 0.0), n) == []
    assert len(budget_warnings(1.0, 1 / n, n)) == 1
    assert budget_warnings(20.0, 1e-9, n) == []
    assert len(budget_warnings(math.nextafter(20.0, 21.0), 1e-9, n)) == 1


def test_printed_certificates_are_short(capsys):
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = rng.integers(0, 10, 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateLogisticRegression(
            data_norm=2.0, classes=list(range(10)), max_iter=20, random_state=0, multi_class="ovr"
        ).fit(X, y)
    composed = model.certificate_
    text, rep = str(composed), repr(composed)
    assert len(text.splitlines()) <= 4 and max(map(len, text.splitlines())) < 120, text
    assert "10 releases, each (epsilon_i, delta_i) = " in text
    assert "\n" not in rep and len(rep) < 200, rep
    one = composed.certificates[0]
    assert len(str(one).splitlines()) == 2 and "\n" not in repr(one) and len(repr(one)) < 200
    assert f"{one.epsilon:.4g}" in str(one) and "Theorem C.13" in str(one)
    # to_dict is unchanged: the dataclass fields, details merged, lists for the tuples
    flat = {k: v for k, v in dataclasses.asdict(one).items()
            if k not in ("details", "reasons", "not_public")}  # fmt: skip
    want = {**flat, **one.details, "reasons": [], "not_public": []}
    assert json.loads(json.dumps(one.to_dict())) == json.loads(json.dumps(want))
    basic = compose(composed.certificates[:3], "basic")
    assert "basic composition of 3 releases" in str(basic)
    assert basic.to_dict()["epsilon"] == pytest.approx(3 * one.epsilon, rel=1e-15)


def test_uncertified_certificate_prints_its_reasons():
    from objpert.accounting._certificate import ReleaseCertificate

    cert = ReleaseCertificate.conclude(
        "theorem41", 1.0, 0.5, 0.6, ["N = 3 is below the threshold 10"], iterations=3,
        threshold_iterations=10, sigma=1.0, truncation="paper", constants={},
    )  # fmt: skip
    text = str(cert)
    assert "NOT certified" in text and "not certified: N = 3 is below the threshold 10" in text


class _Stderr:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> int:
        return len(s)

    def flush(self) -> None:
        pass


def test_progress_auto_on_terminals_for_long_runs(monkeypatch):
    big, small = progress.LONG_WORK, progress.LONG_WORK - 1
    monkeypatch.setattr(sys, "stderr", _Stderr(True))
    assert progress.show_progress("auto", 10, big) and progress.show_progress(None, 10, big)
    assert not progress.show_progress("auto", 10, small)
    assert progress.show_progress("auto", progress.LONG_RUN)  # size unknown: the steps
    assert not progress.show_progress(False, 10, big)
    monkeypatch.setattr(sys, "stderr", _Stderr(False))  # a pipe
    assert not progress.show_progress("auto", 10, big) and progress.show_progress(True, 1)
    monkeypatch.setattr(sys, "stderr", _Stderr(True))  # a notebook
    shell = type("ZMQInteractiveShell", (), {})()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert progress.in_notebook() and not progress.show_progress("auto", 10, big)
    assert progress.show_progress(True, 10, big)
    with pytest.raises(ParameterError, match="verbose"):
        progress.show_progress("yes", 10)


def test_sweep_work():
    from scipy import sparse

    assert progress.sweep_work(np.zeros((30, 4)), 10, 2) == 2400
    assert progress.sweep_work(sparse.random(100, 50, density=0.1, format="csr"), 3) == 1500
    assert progress.sweep_work(object(), 3) is None


def test_estimators_default_to_auto_progress():
    assert PrivateLogisticRegression().verbose == "auto"
    assert PrivateRobustRegression().verbose == "auto"


def test_thread_limit():
    from threadpoolctl import threadpool_info

    def pools():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info()}

    before = pools()
    with thread_limit(1):
        assert all(count == 1 for count in pools().values())
    assert pools() == before  # restored, and no thread pool started by the limit


def test_thread_limit_caps_numba_only_once_its_pool_runs():
    """Asking numba for its thread count starts its pool: the limit does not, in a process
    where nothing has started it; once started, it is capped and restored."""
    import subprocess
    import sys

    code = (
        "import numba\n"
        "from numba.np.ufunc import parallel\n"
        "from objpert.cli._common import thread_limit\n"
        "with thread_limit(1):\n"
        "    pass\n"
        "assert not parallel._is_initialized\n"
        "n = numba.get_num_threads()\n"
        "with thread_limit(1):\n"
        "    assert numba.get_num_threads() == 1\n"
        "assert numba.get_num_threads() == n\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.raises(CliError, match="--threads"), thread_limit(0):
        pass
