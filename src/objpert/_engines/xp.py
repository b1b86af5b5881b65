"""An engine written with the array API standard: numpy, array-api-strict, CuPy or PyTorch.

:class:`XPEngine` holds X (and the labels) in one array namespace (``array-api-compat``)
on one device and supplies the engine protocol (``matvec``, ``rmatvec``, fused
``glm_gradient``; host arrays in and out) plus :meth:`XPEngine.descend`, which runs the
whole descent of eq. (4) of Watkins & Arora (2026) on the device: X, y, w and z stay
resident and only w_N is copied back. The loss derivative l' is written in array-API
operations for the registered losses (:data:`DERIVATIVES`); any other loss is refused,
never approximated. ``dtype="float32"`` on numpy arrays runs one fused float32 sweep
compiled by numba per step (:func:`_rows32`; the array-API code without numba). It
changes the rounding of the products and of l' only: the noise is drawn in float64 by the
caller, the release is still exactly N steps, and the certificate does not depend on
rounding. ``counts`` weights each row by a multiplicity (exactly merged duplicate rows,
:mod:`objpert._engines.shaped`); the public n stays the 1/n factor, given by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert._losses import Loss
from objpert.exceptions import ParameterError

__all__ = [
    "DERIVATIVES",
    "DTYPES",
    "XPEngine",
    "gpu_namespace",
    "to_numpy",
]

#: The element types an :class:`XPEngine` computes in.
DTYPES: tuple[str, ...] = ("float64", "float32")

#: |z| clamp of the pseudo-Huber derivative, as in :class:`objpert._losses.PseudoHuberLoss`.
_Z_MAX = 1e300


def _expit(xp: Any, u: Any) -> Any:
    """sigma(u) = 1 / (1 + e^-u) without overflow: e = exp(-|u|), then 1/(1+e) or e/(1+e)."""
    e = xp.exp(-xp.abs(u))
    return xp.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _logistic(xp: Any, loss: Loss, t: Any, y: Any) -> Any:
    """l'(t, y) = -y sigma(-y t) (:class:`objpert._losses.LogisticLoss`)."""
    return -y * _expit(xp, -y * t)


def _robust(xp: Any, loss: Loss, t: Any, y: Any) -> Any:
    """l'(t, y) = c z / sqrt(1 + z^2), z = (t - y)/c clamped to +-1e300 (float32: to its
    largest finite value) (:class:`objpert._losses.PseudoHuberLoss`)."""
    c = float(loss.params()["scale"])
    z = (t - y) / c
    bound = min(_Z_MAX, float(xp.finfo(z.dtype).max))
    z = xp.clip(z, min=-bound, max=bound)
    return c * (z / xp.hypot(xp.ones_like(z), z))


def _squared(xp: Any, loss: Loss, t: Any, y: Any) -> Any:
    """l'(t, y) = t - y (:class:`objpert._losses.SquaredLoss`)."""
    return t - y


#: l' in array-API operations, by loss name: ``DERIVATIVES[name](xp, loss, t, y)``.
DERIVATIVES: dict[str, Callable[[Any, Loss, Any, Any], Any]] = {
    "logistic": _logistic,
    "robust": _robust,
    "squared": _squared,
}


def _derivative(loss: Loss) -> Callable[[Any, Loss, Any, Any], Any]:
    d1 = DERIVATIVES.get(type(loss).name) if type(loss).__module__ == "objpert._losses" else None
    if d1 is None:
        raise ParameterError(
            f"the array-API engine has no derivative for the loss {loss.name!r}; it supports "
            f"{', '.join(sorted(DERIVATIVES))}"
        )
    return d1


def _rows32(X, w, y, c, kind, scale, out, buf):  # pragma: no cover - compiled by numba
    """out += sum_i c_i l'(<x_i, w>, y_i) x_i in float32 (c_i = 1 when c is empty), rows
    in blocks of 1024 summed in float32, the blocks' sums added in float64; compiled with
    reassociation and contraction so that both row loops vectorise in float32. kind: 0
    logistic, 1 pseudo-Huber (scale c), 2 squared."""
    n, d = X.shape
    one = np.float32(1.0)
    for s in range(0, n, 1024):
        for j in range(d):
            buf[j] = np.float32(0.0)
        for i in range(s, min(n, s + 1024)):
            t = np.float32(0.0)
            for j in range(d):
                t += X[i, j] * w[j]
            if kind == 0:
                u = -y[i] * t
                e = np.exp(-abs(u))
                r = -y[i] * (one / (one + e) if u >= 0 else e / (one + e))
            elif kind == 1:
                z = min(max((t - y[i]) / scale, np.float32(-3e38)), np.float32(3e38))
                r = scale * (z / np.float32(math.hypot(1.0, z)))
            else:
                r = t - y[i]
            if c.shape[0]:
                r *= c[i]
            for j in range(d):
                buf[j] += r * X[i, j]
        for j in range(d):
            out[j] += buf[j]


_KERNEL32: list[Any] = []
_KINDS = {"logistic": 0, "robust": 1, "squared": 2}


def _kernel32() -> Any:
    """The compiled :func:`_rows32`, or None without numba."""
    if not _KERNEL32:
        try:
            import numba
        except ImportError:
            _KERNEL32.append(None)
        else:
            _KERNEL32.append(
                numba.njit(fastmath={"reassoc", "contract"}, nogil=True, cache=True)(_rows32)
            )
    return _KERNEL32[0]


def gpu_namespace() -> tuple[Any, Any] | None:
    """(namespace, device) of the first CUDA array library found (CuPy, then PyTorch), or
    None when neither is installed with a usable GPU."""
    try:
        import cupy  # type: ignore[import-not-found]

        if cupy.cuda.runtime.getDeviceCount() > 0:
            import array_api_compat.cupy as xp_cupy

            return xp_cupy, None
    except Exception:  # (no CuPy, or CuPy without a driver: look further)
        pass
    try:
        import torch  # type: ignore[import-not-found]

        if torch.cuda.is_available():
            import array_api_compat.torch as xp_torch

            return xp_torch, torch.device("cuda")
    except Exception:
        pass
    return None


def to_numpy(a: Any) -> np.ndarray:
    """A host float64 copy of an array of any supported namespace."""
    import array_api_compat as compat

    if compat.is_cupy_array(a):
        a = a.get()
    elif compat.is_torch_array(a):
        a = a.detach().cpu().numpy()
    elif not isinstance(a, np.ndarray):
        a = np.from_dlpack(a)
    return np.array(a, dtype=np.float64)


class XPEngine:
    """X of shape (n, d) in the array namespace ``xp`` on ``device``, as ``dtype``.

    ``xp``: an array-API namespace (default ``array_api_compat.numpy``; ``"gpu"``: CuPy
    or PyTorch on CUDA, :func:`gpu_namespace`). ``y`` (optional): labels kept on the
    device for :meth:`descend` and for ``glm_gradient(W, None, loss)``. ``counts``: row
    multiplicities (default 1); ``n``: the public n of the 1/n factor (default: rows of X,
    or the sum of the counts).
    """

    def __init__(
        self,
        X: Any,
        y: Any = None,
        *,
        xp: Any = None,
        device: Any = None,
        dtype: str = "float64",
        counts: Any = None,
        n: int | None = None,
    ) -> None:
        self.dtype_name = dtype
        if xp == "gpu":
            found = gpu_namespace()
            if found is None:
                raise ParameterError("no CUDA GPU with CuPy or PyTorch was found")
            xp, device = found[0], device if device is not None else found[1]
        if xp is None:
            try:
                import array_api_compat.numpy as xp_numpy
            except ImportError:
                raise ParameterError(
                    "the array-API engine needs array-api-compat: pip install 'objpert[xp]'"
                ) from None
            xp = xp_numpy
        self.xp, self.device = xp, device
        self.dtype = getattr(xp, self.dtype_name)
        self.X = self._put(X)
        if self.X.ndim != 2:
            raise ParameterError(f"X must be 2-D; got shape {tuple(self.X.shape)}")
        rows, self.d = (int(s) for s in self.X.shape)
        if counts is not None:
            counts = np.asarray(counts, dtype=np.float64)
            if counts.shape != (rows,):
                raise ParameterError(f"counts must have shape ({rows},); got {counts.shape}")
        self.counts = None if counts is None else self._put(counts)
        default_n = rows if counts is None else int(counts.sum())
        self.n = int(default_n if n is None else n)
        self.y = None if y is None else self._put(y)

    def _put(self, a: Any) -> Any:
        """``a`` as an array of this engine's namespace, device and dtype (an array already
        there is not copied)."""
        import array_api_compat as compat

        if not isinstance(a, np.ndarray) and compat.is_array_api_obj(a):
            return self.xp.astype(a, self.dtype, copy=False)
        try:
            host = np.asarray(a, dtype=self.dtype_name)
        except (TypeError, ValueError, OverflowError):
            raise ParameterError(f"expected a numeric array; got {type(a).__name__}") from None
        return self.xp.asarray(host, device=self.device)

    def _labels(self, y: Any, m: Any) -> Any:
        """The labels (held ones when ``y`` is None) shaped to broadcast against X W for W
        like ``m`` (a column per point when W is (d, B))."""
        y = self.y if y is None else self._put(y)
        if y is None:
            raise ParameterError("this engine holds no labels: pass y")
        return y[:, None] if m.ndim == 2 and y.ndim == 1 else y

    def _weighted(self, r: Any) -> Any:
        if self.counts is None:
            return r
        return r * (self.counts[:, None] if r.ndim == 2 else self.counts)

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return to_numpy(self.X @ self._put(W))

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        if self.counts is not None:
            raise ParameterError("a weighted engine has merged rows: use glm_gradient")
        return to_numpy(self.X.T @ self._put(R))

    def _gradient(self, W: Any, Y: Any, d1: Callable[..., Any], loss: Loss) -> Any:
        """X^T (c * l'(X W, Y)) on the device (Y resident, broadcastable against X W): the
        unscaled sum over rows. float32 numpy arrays and one point w: one fused compiled
        sweep (:func:`_rows32`) where numba is installed."""
        if self.dtype_name == "float32" and W.ndim == 1 and isinstance(self.X, np.ndarray):
            kernel = _kernel32()
            if kernel is not None:
                out = np.zeros(self.d)
                c = np.empty(0, np.float32) if self.counts is None else self.counts
                scale = np.float32(loss.params().get("scale", 1.0))
                kind = _KINDS[type(loss).name]
                kernel(self.X, W, Y, c, kind, scale, out, np.empty(self.d, np.float32))
                return out.astype(np.float32)
        return self.X.T @ self._weighted(d1(self.xp, loss, self.X @ W, Y))

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        """X^T l'(X W, y) summed over rows (weighted by the counts); y None: the held labels."""
        WW = self._put(W)
        return to_numpy(self._gradient(WW, self._labels(y, WW), _derivative(loss), loss))

    def descend(
        self,
        z: np.ndarray,
        eta: float,
        iterations: int,
        loss: Loss,
        mu: float,
        y: Any = None,
        start: np.ndarray | None = None,
    ) -> np.ndarray:
        """w_N of exactly ``iterations`` steps w <- w - eta ((1/n) X^T l'(Xw, y) + mu w + z)
        from w_0 = 0 (eq. 4), or from the public point ``start`` (the shape of z), all on the
        device; z (d,) or (d, B) in float64 from the caller; returns w_N as a float64 host
        array. No stopping rule of any kind."""
        d1 = _derivative(loss)
        zz = self._put(z)
        yy = self._labels(y, zz)  # labels resident once, with the batch's broadcast shape
        w = self.xp.zeros_like(zz) if start is None else self._put(start)
        inv_n, mu, eta = 1.0 / self.n, float(mu), float(eta)
        for _ in range(iterations):
            g = self._gradient(w, yy, d1, loss) * inv_n
            g = g + mu * w + zz
            w = w - eta * g
        return to_numpy(w)
