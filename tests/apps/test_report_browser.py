"""The HTML report in a real headless browser (Chromium, where it is installed): the page
loads, its sections come in the order an officer reads them, and it renders to a
screenshot."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from objpert import PrivateLogisticRegression
from objpert.cli import main
from objpert.persistence import save

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed")


def _browser(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_report_renders_in_a_headless_browser(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    model = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1]).fit(
        X, (X[:, 0] > 0).astype(int)
    )
    path = save(model, tmp_path / "m.json", key=b"k" * 32)
    page = tmp_path / "report.html"
    argv = ["report", str(path), "--out", str(page), "--title", "A model", "--purpose", "p"]
    assert main(argv) == 0
    dom = _browser("--dump-dom", page.as_uri()).stdout
    headings = [
        h for h in ("Summary", "What an attacker can achieve", "Privacy profile") if h in dom
    ]
    assert headings == ["Summary", "What an attacker can achieve", "Privacy profile"]
    assert dom.index("Summary") < dom.index("What an attacker") < dom.index("Privacy profile")
    shot = tmp_path / "report.png"
    _browser("--hide-scrollbars", "--window-size=1100,2000", f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_ledger_report_renders_in_a_headless_browser(tmp_path):
    from objpert.accounting import PrivacyAccountant, gaussian

    pytest.importorskip("dp_accounting")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    acc = PrivacyAccountant(3.0, 1e-5)
    PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], accountant=acc).fit(
        X, (X[:, 0] > 0).astype(int)
    )
    acc.spend(gaussian(20.0, 1.0), name="a noisy count")
    path = save(acc, tmp_path / "ledger.json", key=b"k" * 32)
    page = tmp_path / "ledger.html"
    assert main(["report", str(path), "--out", str(page), "--title", "A ledger"]) == 0
    dom = _browser("--dump-dom", page.as_uri()).stdout
    order = ("Summary", "The ledger: each step and the total", "What an attacker can achieve")
    assert all(h in dom for h in order) and "a noisy count" in dom
    assert dom.index(order[0]) < dom.index(order[1]) < dom.index(order[2])
    shot = tmp_path / "ledger.png"
    _browser("--hide-scrollbars", "--window-size=1100,2000", f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_pipeline_report_from_train_reads_right_in_a_browser(tmp_path, capsys):
    """A pipeline file written by ``objpert train`` with declared columns and left-out
    incomplete rows: the page states the privacy unit in its summary, says rows were left
    out (not how many), and shows no contradicting "None" bound."""
    import pandas as pd

    rng = np.random.default_rng(2)
    n = 300
    df = pd.DataFrame(
        {"age": rng.integers(18, 90, n).astype(float), "income": rng.uniform(0, 2e5, n),
         "plan": rng.choice(["basic", "pro"], n), "label": rng.choice(["no", "yes"], n)}
    )  # fmt: skip
    df.loc[[4, 7, 11], "income"] = np.nan
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    model = tmp_path / "m.json"
    argv = ["train", "--data", str(data), "--target", "label", "--classes", "no,yes",
            "--epsilon", "1", "--delta", "1e-6", "--feature-bounds", "age=18:99,income=0:200000",
            "--categories", "plan=basic,pro", "--missing", "drop", "--out", str(model)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    page = tmp_path / "r.html"
    assert main(["report", str(model), "--out", str(page), "--curator", "A clinic"]) == 0
    dom = _browser("--dump-dom", page.as_uri()).stdout
    summary = dom[dom.index("Summary") : dom.index("What an attacker")]
    assert "Privacy unit: one row" in summary and "Curator: A clinic" in summary
    assert "Rows with missing values were left out before training" in dom
    assert "3 row" not in dom and ": None" not in dom and "docs/" not in dom
