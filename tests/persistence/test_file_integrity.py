"""Model files keep their integrity: a save never destroys the file it replaces (a full
disk or an interruption while writing leaves the previous model file whole, and no
temporary file behind), and a file that gives a key twice is refused."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

import objpert
from objpert._files import write_atomically

KEY = b"k" * 32


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    fit = objpert.PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], max_iter=300)
    return fit.fit(X, y), objpert.PrivateLogisticRegression(
        data_norm=1.0, classes=[0, 1], max_iter=300, epsilon=2.0
    ).fit(X, y)


@pytest.mark.parametrize("fault", [OSError(errno.ENOSPC, "No space left"), KeyboardInterrupt()])
def test_a_failed_save_leaves_the_previous_file_whole(models, tmp_path, monkeypatch, fault):
    first, second = models
    path = objpert.save(first, tmp_path / "model.json", key=KEY)
    before = path.read_bytes()

    def fails(fd):
        raise fault

    monkeypatch.setattr(os, "fsync", fails)
    with pytest.raises(type(fault)):
        objpert.save(second, path, key=KEY)
    assert path.read_bytes() == before
    assert objpert.load(path, key=KEY).coef_.tolist() == first.coef_.tolist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_a_save_replaces_the_file_and_keeps_its_mode(models, tmp_path):
    first, second = models
    path = objpert.save(first, tmp_path / "model.json", key=KEY)
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    objpert.save(second, path, key=KEY)
    assert path.stat().st_mode & 0o777 == 0o600
    assert objpert.load(path, key=KEY).coef_.tolist() == second.coef_.tolist()


def test_a_file_with_a_key_given_twice_is_refused(models, tmp_path):
    """Readers disagree on which of two "coef" values counts: such a file never loads,
    even when re-signed."""
    import json

    first, _ = models
    path = objpert.save(first, tmp_path / "model.json", key=KEY)
    text = path.read_text()
    doubled = text.replace('"coef":', '"coef": [[0.0, 0.0, 0.0]], "coef":', 1)
    assert json.loads(doubled)["coef"] == json.loads(text)["coef"]  # Python keeps the last
    bad = tmp_path / "doubled.json"
    bad.write_text(doubled)
    with pytest.raises(objpert.ModelFileError, match="given twice"):
        objpert.load(bad, key=KEY)


@pytest.mark.parametrize("what", ["predictions", "figure"])
def test_predictions_and_figures_are_written_whole_or_not_at_all(tmp_path, monkeypatch, what):
    """objpert predict --out and every figure go through the same atomic write."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from objpert._files import save_figure, write_atomically

    path = tmp_path / ("p.csv" if what == "predictions" else "f.png")
    path.write_bytes(b"old")

    def write() -> None:
        if what == "predictions":
            write_atomically(path, "prediction\n1\n")
        else:
            fig, ax = plt.subplots()
            ax.plot([0, 1], [0, 1])
            save_figure(fig, path, dpi=50)
            plt.close(fig)

    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(28, "full")))
    with pytest.raises(OSError):
        write()
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    monkeypatch.undo()
    write()
    assert path.read_bytes() != b"old"
    if what == "figure":
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_atomic_write_never_replaces_what_is_not_a_regular_file(tmp_path):
    """Renamed over a device or a FIFO, the temporary file would replace it."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        write_atomically(fifo, "data")
    assert fifo.is_fifo() and os.listdir(tmp_path) == ["fifo"]
