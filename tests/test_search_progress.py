"""A private search shows its progress (a long one on a terminal, any with verbose=True):
the split method its fits done, random stopping only its elapsed time (the number of runs
stays hidden); the progress never changes what is released."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from rich.console import Console

import objpert.mechanisms._progress as progress
from objpert import PrivateLogisticRegression
from objpert.exceptions import ParameterError
from objpert.model_selection import PrivateGridSearch, _search


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    return X, (X[:, 0] > 0).astype(int)


def _search_for(method: str, verbose) -> PrivateGridSearch:
    est = PrivateLogisticRegression(
        epsilon=1.0, data_norm=1.0, classes=[0, 1], max_iter=50, random_state=0
    )
    return PrivateGridSearch(
        estimator=est, param_grid={"mu": [0.3, 1.0, 3.0]}, method=method,
        random_state=3, verbose=verbose,
    )  # fmt: skip


@pytest.fixture
def screen(monkeypatch):
    """What the progress draws, on a fake terminal."""
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=120)
    monkeypatch.setattr("rich.console.Console", lambda stderr=True: terminal)
    return out


@pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")
@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_progress_never_changes_the_release(data, method, screen):
    X, y = data
    quiet = _search_for(method, False).fit(X, y)
    shown = _search_for(method, True).fit(X, y)
    np.testing.assert_array_equal(quiet.best_estimator_.coef_, shown.best_estimator_.coef_)
    assert screen.getvalue(), "verbose=True drew nothing"
    assert shown.best_estimator_.verbose is False  # the fits drew no bar of their own


@pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")
def test_split_counts_its_fits_and_random_stopping_hides_its_runs(data, monkeypatch):
    X, y = data
    ticks: list[int] = []

    @contextlib.contextmanager
    def recording(description, total, verbose, work=None):
        assert verbose is True and total == 3
        yield ticks.append

    monkeypatch.setattr(_search, "step_progress", recording)
    _search_for("split", True).fit(X, y)
    assert ticks == [0, 1, 2]
    said: list[str] = []

    @contextlib.contextmanager
    def spinning(description, show):
        said.append(description)
        yield

    monkeypatch.setattr(_search, "spinner", spinning)
    _search_for("random_stopping", True).fit(X, y)
    assert said and "hidden" in said[0] and not any(ch.isdigit() for ch in said[0])


def test_auto_is_quiet_off_a_terminal(data, capsys):
    X, y = data
    _search_for("split", "auto").fit(X, y)
    assert capsys.readouterr().err == ""
    assert not progress.show_progress("auto", 10**9, 10**12)  # pytest: not a terminal


def test_verbose_is_validated(data):
    X, y = data
    with pytest.raises(ParameterError, match="verbose"):
        _search_for("split", "yes").fit(X, y)
