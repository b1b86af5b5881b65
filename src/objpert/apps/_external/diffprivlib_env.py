"""IBM diffprivlib as an external peer, in a virtual environment of its own.

diffprivlib 0.6.6 needs scikit-learn < 1.8, which objpert does not: rather than pin
objpert's environment down, a separate venv is created on first use (under
``$OBJPERT_CACHE`` or ``~/.cache/objpert``) and the peer runs there in a subprocess that
reads the data from a file and writes its results, with its versions, as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from objpert.exceptions import ExternalPeerError

__all__ = [
    "DIFFPRIVLIB_REQUIREMENTS",
    "RUNNER",
    "ExternalPeerError",
    "cache_dir",
    "ensure_env",
    "run_diffprivlib",
]

DIFFPRIVLIB_REQUIREMENTS = ("diffprivlib==0.6.6", "scikit-learn>=1.4,<1.8", "numpy<3")
RUNNER = Path(__file__).with_name("diffprivlib_runner.py")


def cache_dir() -> Path:
    return Path(os.environ.get("OBJPERT_CACHE", Path.home() / ".cache" / "objpert"))


def ensure_env(env_dir: Path | None = None) -> Path:
    """The venv's python, creating the venv and installing diffprivlib when missing."""
    env = Path(env_dir) if env_dir else cache_dir() / "diffprivlib-venv"
    python = env / "bin" / "python"
    marker = env / ".objpert-ready"
    if marker.exists() and python.exists():
        return python
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", str(env)], check=True, capture_output=True, text=True
        )
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *DIFFPRIVLIB_REQUIREMENTS],
            check=True,
            capture_output=True,
            text=True,
        )
    except subprocess.CalledProcessError as err:
        tail = (err.stderr or err.stdout or "").strip().splitlines()[-1:] or [""]
        raise ExternalPeerError(f"could not build the diffprivlib environment: {tail[0]}") from None
    marker.write_text(" ".join(DIFFPRIVLIB_REQUIREMENTS))
    return python


def run_diffprivlib(
    Xtr: np.ndarray,
    ytr: np.ndarray,
    Xte: np.ndarray,
    yte: np.ndarray,
    *,
    epsilons,
    seeds: int | list[int],
    data_norm: float,
    env_dir: Path | None = None,
) -> dict:
    """diffprivlib's LogisticRegression at each epsilon, one fit per seed (``seeds``: a
    count, seeds 0, 1, ...; or the list of seeds); results + versions."""
    python = ensure_env(env_dir)
    with tempfile.TemporaryDirectory() as tmp:
        data, args, out = Path(tmp, "d.npz"), Path(tmp, "a.json"), Path(tmp, "o.json")
        np.savez(data, Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte)
        args.write_text(
            json.dumps(
                {
                    "epsilons": list(map(float, epsilons)),
                    "seeds": seeds if isinstance(seeds, int) else [int(s) for s in seeds],
                    "data_norm": float(data_norm),
                }
            )
        )
        proc = subprocess.run(
            [str(python), str(RUNNER), str(data), str(args), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or [""])[-1]
            raise ExternalPeerError(f"diffprivlib run failed: {tail}")
        return json.loads(out.read_text())
