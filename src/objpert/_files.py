"""Files the library and the command line write: whole or not at all.

Every file objpert writes (model, pipeline and ledger files, reports, predictions,
figures) goes to a temporary file in the same folder, is flushed to disk and renamed over
its target, so that a full disk or an interruption leaves the previous file whole.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["save_figure", "write_atomically"]


def write_atomically(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` so that ``path`` holds either
    its old content or all the new one, never a part: a temporary file in the same
    folder, flushed to disk, then renamed over ``path`` (atomic on POSIX and Windows). A
    full disk or an interruption leaves the previous file whole and removes the
    temporary one; the file keeps the mode it had (0o644 when new)."""
    path = Path(path)
    if path.exists() and not path.is_file():  # a device or a FIFO would be replaced
        raise OSError(errno.EINVAL, "not a regular file (a directory, device or FIFO)", str(path))
    data = data.encode("utf-8") if isinstance(data, str) else data
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644  # as a plain write's
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save_figure(fig: Any, path: str | Path, **kwargs: Any) -> None:
    """A matplotlib figure written atomically (:func:`write_atomically`), in the format
    its file name says."""
    buffer = io.BytesIO()
    fmt = Path(path).suffix.lstrip(".") or None
    fig.savefig(buffer, format=fmt, **kwargs)
    write_atomically(path, buffer.getvalue())
