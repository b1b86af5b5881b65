"""``objpert report``: the privacy report of a model file (objpert.apps._privacy_report).

The key numbers are checked against independent computations: the certificate recomputed
by Theorem C.13 from the plan's public inputs, and the attacker's bound from a plain loop
over a coarser grid of Theorem C.13 certificates (more points only lower the bound, so the
report's bound is at most the loop's and close to it).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import objpert
from objpert._special import chi_radius
from objpert.apps._privacy_report import build_report, render
from objpert.apps._privacy_report.content import fmt_upper
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import problem
from objpert.cli import main
from objpert.exceptions import ParameterError
from objpert.persistence import read

KEY = b"report-test-key"
FPRS = (0.001, 0.01, 0.1)


def _data(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return X, rng


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Model files: binary (signed), 3-class (unsigned), robust (signed), and a binary one
    whose label set was read from the data and whose noise came from a testing seed."""
    out = tmp_path_factory.mktemp("models")
    X, rng = _data()
    y = (X[:, 0] > 0).astype(int)
    y3 = np.digitize(X[:, 0], [-0.3, 0.3])
    t = 2.0 * X[:, 0] + 0.1 * rng.normal(size=len(X))
    kw = {"epsilon": 1.0, "delta": 1e-6, "data_norm": 1.0, "max_iter": 300}
    paths = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the leak and testing-seed warnings of "leaky"
        fits = {
            "binary": (objpert.PrivateLogisticRegression(classes=[0, 1], **kw).fit(X, y), KEY),
            "three": (
                objpert.PrivateLogisticRegression(classes=[0, 1, 2], multi_class="ovr", **kw).fit(
                    X, y3
                ),
                None,
            ),
            "robust": (objpert.PrivateRobustRegression(**kw).fit(X, t), KEY),
            "leaky": (objpert.PrivateLogisticRegression(random_state=3, **kw).fit(X, y), None),
        }
        for name, (model, key) in fits.items():
            paths[name] = str(out / f"{name}.json")
            objpert.save(model, paths[name], key=key)
    return paths


def _report(path: str, key: bytes | None = KEY):
    return build_report(path, read(path, key))


def _reference_tpr(plans, fprs=FPRS) -> np.ndarray:
    """The attacker's bound by a plain loop: Theorem C.13 certificates (theorem_c13.certify)
    on a coarse grid of epsilons and truncation radii, basic composition at the even split
    for several releases, then sup over points of max(0, 1 - delta - e^eps a,
    e^-eps (1 - delta - a))."""
    k = len(plans)
    eps_grid = [*np.linspace(0.0, 10.0, 81), plans[0].epsilon * k]
    points = []
    memo: dict[tuple[str, float], float] = {}  # identical plans (one-vs-rest) computed once
    for eps in eps_grid:
        total = 0.0
        for plan in plans:
            key = (plan.to_json(), eps)
            if key in memo:
                total += memo[key]
                continue
            pc = problem(plan.loss, n=plan.n, d=plan.d, zeta=plan.zeta, mu=plan.mu, eta=plan.eta,
                         **dict(plan.certificate.constants.get("loss_params", ())))  # fmt: skip
            best = 1.0
            radii = [plan.radius] + [
                plan.sigma * float(chi_radius(m, pc.d_star)) for m in np.geomspace(1e-30, 0.3, 16)
            ]
            for r in radii:
                if eps / k <= 0.0:
                    continue
                c = theorem_c13.certify(
                    pc, plan.sigma, plan.iterations, eps / k, r=r, truncation="exact"
                )
                if c.certified:
                    best = min(best, c.delta)
            memo[key] = best
            total += best
        points.append((eps, min(total, 1.0)))
    out = []
    for a in fprs:
        f = 0.0
        for eps, d in points:
            f = max(f, 1 - d - math.exp(eps) * a, math.exp(-eps) * (1 - d - a))
        out.append(1.0 - f)
    return np.array(out)


def _plans(path: str):
    model = read(path, KEY).model
    return model.plan_ if isinstance(model.plan_, list) else [model.plan_]


def _shown_tprs(text: str) -> list[float]:
    """The attacker's bounds as printed: the rows '0.1%' / '1%' / '10%' of its table."""
    found = []
    for fpr in ("0.1%", "1%", "10%"):
        m = re.search(rf"<td>{re.escape(fpr)}</td><td>([0-9.e+-]+)%</td>", text)
        assert m, f"no row for false-positive rate {fpr}"
        found.append(float(m.group(1)) / 100.0)
    return found


@pytest.mark.parametrize("name", ["binary", "robust"])
def test_single_release_numbers_are_independent_computations(models, name):
    rep = _report(models[name])
    (plan,) = _plans(models[name])
    pc = problem(plan.loss, n=plan.n, d=plan.d, zeta=plan.zeta, mu=plan.mu, eta=plan.eta,
                 **dict(plan.certificate.constants.get("loss_params", ())))  # fmt: skip
    cert = theorem_c13.certify(
        pc, plan.sigma, plan.iterations, plan.epsilon, r=plan.radius,
        r_outer=plan.radius_outer, truncation=plan.truncation,
    )  # fmt: skip
    assert cert.certified and rep.epsilon == plan.epsilon
    assert math.isclose(rep.delta, cert.delta, rel_tol=1e-12)
    html = render(rep, "html")
    assert f"({fmt_upper(plan.epsilon)}, {fmt_upper(cert.delta)})-differentially private" in html
    # the profile at the certificate's epsilon is at most the certified delta
    i = rep.epsilons.index(plan.epsilon)
    assert rep.deltas[i] <= cert.delta * (1 + 1e-12)
    ref = _reference_tpr([plan])
    got = np.array(rep.tpr_bounds)
    assert np.all(got <= ref + 1e-12)
    assert np.all(got >= 0.97 * ref)
    shown = _shown_tprs(html)
    assert np.all(np.array(shown) >= got) and np.all(np.array(shown) <= got * 1.01)
    # and never above the one-point bound of the certificate (closed form)
    one_point = [min(1.0, math.exp(plan.epsilon) * a + cert.delta) for a in FPRS]
    assert np.all(got <= np.array(one_point) + 1e-12)


def test_multiclass_profile_is_composed(models):
    rep = _report(models["three"], None)
    plans = _plans(models["three"])
    assert len(rep.releases) == 3 and rep.composition in ("basic", "advanced", "pld")
    assert rep.profile_composition in ("pld", "basic")
    i = rep.epsilons.index(rep.epsilon)
    assert rep.deltas[i] <= rep.delta * (1 + 1e-6)  # the profile meets the certificate
    got = np.array(rep.tpr_bounds)
    assert np.all(got <= _reference_tpr(plans) + 1e-12)  # basic composition, plain loop
    # three releases reveal at least as much as one of them
    assert np.all(got >= _reference_tpr(plans[:1]) * 0.97)
    assert "3 one-vs-rest releases" in render(rep, "html")


_EXTERNAL = re.compile(r"(https?:|//[a-z]|\bsrc\s*=|\bhref\s*=|url\(|@import|<link|<script)", re.I)


@pytest.mark.parametrize("name", ["binary", "three", "robust", "leaky"])
def test_html_is_self_contained(models, name):
    html = render(_report(models[name]), "html")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not _EXTERNAL.search(html), _EXTERNAL.search(html).group(0)
    assert html.count("<svg") == 2 and html.count("</svg>") == 2
    assert "<style>" in html


def test_what_the_certificate_does_not_cover_is_prominent(models):
    leaky = render(_report(models["leaky"], None), "html")
    assert "NOT COVERED" in leaky and "label set" in leaky
    assert "TESTING SEED" in leaky and "-differentially private with" not in leaky
    assert "READ FROM THE TRAINING LABELS" in leaky
    # its certificate holds (verify says so): the seed, not the theorem, is the problem
    assert "NOT CERTIFIED" not in leaky
    # no per-column declaration: each column is read under the declared row-norm bound
    assert "data_norm = 1" in leaky and "not used" not in leaky
    clean = render(_report(models["binary"]), "html")
    assert "NOT COVERED" not in clean and "TESTING SEED" not in clean
    assert "declared by the caller (public)" in clean
    for text in ("side channels", "Repeated fits", "clipped", "Seeded releases"):
        assert text in clean


def test_signature_status(models):
    assert _report(models["binary"]).signature_status == "signed and verified"
    no_key = render(_report(models["binary"], None), "html")
    assert "signed, not verified (no key" in no_key
    unsigned = render(_report(models["three"], None), "html")
    assert "SIGNATURE: unsigned" in unsigned


def test_markdown_has_the_same_content(models):
    rep = _report(models["binary"])
    md = render(rep, "md")
    html = render(rep, "html")
    assert md.startswith("# Privacy report:") and "<svg" not in md
    for title in re.findall(r"<h2>([^<]+)</h2>", html):
        assert f"## {title}" in md
    for fpr, tpr in zip(("0.1%", "1%", "10%"), rep.tpr_bounds, strict=True):
        assert f"| {fpr} | {fmt_upper(100 * tpr, 3)}% |" in md
    assert "| epsilon | delta(epsilon) |" in md


def test_bad_arguments_are_parameter_errors(models):
    with pytest.raises(ParameterError):
        render(_report(models["binary"]), "pdf")
    with pytest.raises(ParameterError):
        render({"epsilon": 1.0}, "html")
    with pytest.raises(ParameterError):
        build_report(models["binary"], objpert.load(models["binary"], KEY))  # not read()


def test_fmt_upper_rounds_up():
    for v in (9.999999990014673e-07, 1.23444e-6, 0.16307414, 1e-300, 0.5, 123456.0):
        shown = float(fmt_upper(v))
        assert v <= shown <= v * (1 + 1e-3)


# ---------------------------------------------------------------- the command line


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_writes_html_and_markdown(models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OBJPERT_MODEL_KEY", KEY.decode())
    out = tmp_path / "report.html"
    rc, _, err = _cli(capsys, "report", models["binary"], "--out", str(out))
    assert rc == 0 and "signed and verified" in err
    assert "signed and verified" in out.read_text(encoding="utf-8")
    md = tmp_path / "report.md"
    rc, _, _ = _cli(capsys, "report", models["three"], "--out", str(md))
    assert rc == 0 and md.read_text(encoding="utf-8").startswith("# Privacy report")
    rc, stdout, _ = _cli(capsys, "report", models["robust"], "--format", "md")
    assert rc == 0 and "PrivateRobustRegression" in stdout and "<html" not in stdout


def _one_error_line(err: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("objpert: error:"), err


def test_cli_errors_are_one_line(models, tmp_path, capsys):
    rc, _, err = _cli(capsys, "report", str(tmp_path / "missing.json"))
    assert rc == 2
    _one_error_line(err)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    rc, _, err = _cli(capsys, "report", str(bad))
    assert rc == 2
    _one_error_line(err)
    payload = json.loads(Path(models["binary"]).read_text(encoding="utf-8"))
    payload["coef"][0][0] += 1.0  # the weights edited: the signature no longer holds
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(payload), encoding="utf-8")
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY + b"\n")
    rc, _, err = _cli(capsys, "report", str(tampered), "--key-file", str(key_file))
    assert rc == 2
    _one_error_line(err)
    wrong = tmp_path / "wrong"
    wrong.write_bytes(b"another key")
    rc, _, err = _cli(capsys, "report", models["binary"], "--key-file", str(wrong))
    assert rc == 2
    _one_error_line(err)
    rc, _, err = _cli(capsys, "report", models["binary"], "--format", "pdf")
    assert rc == 2
    _one_error_line(err)
    rc, _, err = _cli(capsys, "report", models["binary"], "--out", str(tmp_path / "no/dir.html"))
    assert rc == 2
    _one_error_line(err)


# ---------------------------------------------------------------- rendering


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed")
def test_report_renders_in_headless_chromium(models, tmp_path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(render(_report(models["three"], None), "html"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,2000", page.as_uri()],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (2000, 1200)
    assert pixels.var() > 100.0  # not blank
    assert (pixels < 128).mean() > 0.01  # text and lines were drawn


def test_console_command_error_is_one_line(tmp_path):
    """Through a subprocess: a missing file, exit 2 and one stderr line, no traceback."""
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "objpert", "report", str(tmp_path / "none.json")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    _one_error_line(done.stderr)


@pytest.mark.parametrize("name", ["binary", "three", "robust"])
def test_the_report_states_its_privacy_unit_first_and_cites_no_repository_path(models, name):
    """An officer reads the unit first; the page names no file of the source tree."""
    key = None if name == "three" else KEY
    for fmt in ("html", "md"):
        text = render(_report(models[name], key), fmt)
        summary = text[text.index("Summary") :]
        assert "Privacy unit: one row" in summary
        assert summary.index("Privacy unit") < summary.index("What was released")
        assert not re.search(r"\bdocs/|\.md\b|src/objpert", text), re.search(
            r".{40}(docs/|\.md\b|src/objpert).{40}", text
        )
        assert "person's row" not in text


def test_the_curator_and_the_purpose_head_the_summary(models, tmp_path, capsys):
    out = tmp_path / "r.md"
    key = tmp_path / "key"
    key.write_bytes(KEY)
    args = ["report", models["binary"], "--key-file", str(key), "--out", str(out),
            "--curator", "The clinic", "--purpose", "Triage"]  # fmt: skip
    assert main(args) == 0
    text = out.read_text()
    summary = text[text.index("Summary") :]
    assert "Curator: The clinic" in summary and "Purpose: Triage" in summary
    order = [summary.index(s) for s in ("Privacy unit", "Curator", "Purpose", "What was")]
    assert order == sorted(order)


def test_markdown_never_carries_html_from_the_users_names(tmp_path):
    """Column names and labels come from the user's files: in Markdown they are text, as in
    the HTML report, never a tag a viewer would run."""
    import pandas as pd

    X, _ = _data()
    hostile = "<img src=x onerror=alert(1)>"
    frame = pd.DataFrame(X, columns=[hostile, "b", "<script>c"])
    y = np.where(X[:, 0] > 0, "<b>yes</b>", "no")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = objpert.PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=1.0, classes=["no", "<b>yes</b>"], max_iter=300
        ).fit(frame, y)
    path = objpert.save(model, tmp_path / "m.json", key=KEY)
    rep = _report(str(path))
    md, page = render(rep, "md"), render(rep, "html")
    assert "<img" not in md and "<script" not in md and "<b>" not in md
    assert "&lt;img src=x onerror=alert(1)>" in md
    assert "<img" not in page.replace("&lt;img", "")
