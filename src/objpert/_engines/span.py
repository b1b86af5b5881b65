"""The data-span reduction of Lemma B.6 (Watkins & Arora 2026).

Every gradient of eq. (1) is (1/n) sum_i l'(<x_i, w>, y_i) x_i + mu w, so on the
orthogonal complement of any subspace C' that contains every row x_i the iteration (4) is
the affine recursion p <- rho p - eta z_perp, rho = 1 - eta mu, which from p_0 = 0 ends at
-B_N z_perp with B_N = (1 - rho^N)/mu; within C' it is eq. (4) for F restricted to C',
a GLM on the features Q^T x_i for an orthonormal basis Q of C' (Lemma B.6 items 1 and 3;
the proof uses only x_i in C', so a superspace of the span C of eq. (2) will do). With
d > n this runs the recursion in at most n dimensions instead of d.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

__all__ = [
    "FeatureSpan",
    "span_reduction_pays",
    "stored_columns",
]


class FeatureSpan:
    """An orthonormal basis Q (d x r) of a subspace containing every row of X, computed once.

    Dense X: Q from the reduced QR factorisation X^T = Q R (r = min(n, d)), so X Q = R^T.
    Sparse X: the coordinate axes of the columns holding stored entries (r = their number),
    so Q^T z selects coordinates and X Q keeps X's columns: never densified.
    """

    def __init__(self, X: np.ndarray | sparse.spmatrix | sparse.sparray) -> None:
        self.n, self.d = (int(s) for s in X.shape)
        self.columns: np.ndarray | None
        self.basis: np.ndarray | None
        if sparse.issparse(X):
            X = sparse.csr_matrix(X)
            self.columns = stored_columns(X)
            self.basis = None
            self.features: np.ndarray | sparse.csr_matrix = X[:, self.columns]
        else:
            Q, R = np.linalg.qr(np.asarray(X, dtype=np.float64).T)
            self.columns = None
            self.basis = Q
            self.features = np.ascontiguousarray(R.T)
        self.rank = int(self.features.shape[1])

    def project(self, Z: np.ndarray) -> np.ndarray:
        """Q^T Z: coordinates in the span of Z of shape (d,) or (d, B)."""
        if self.basis is None:
            return Z[self.columns]
        return self.basis.T @ Z

    def lift(self, V: np.ndarray) -> np.ndarray:
        """Q V: the point of R^d with span coordinates V of shape (r,) or (r, B)."""
        if self.basis is None:
            out = np.zeros((self.d, *V.shape[1:]))
            out[self.columns] = V
            return out
        return self.basis @ V


def stored_columns(X: sparse.csr_matrix) -> np.ndarray:
    """Sorted indices of the columns of a CSR matrix that hold a stored entry."""
    used = np.zeros(X.shape[1], dtype=bool)
    used[X.indices] = True
    return np.flatnonzero(used)


def span_reduction_pays(
    X: np.ndarray | sparse.spmatrix | sparse.sparray, iterations: int, draws: int = 1
) -> bool:
    """Whether :class:`FeatureSpan` shortens a run of ``iterations`` steps on ``draws``
    points: only when d > n, and then for sparse X when some column is empty (the sweep
    costs the same, the d - r vector coordinates are saved), for dense X when the QR
    (about 2 n^2 d flops) costs less than the per-step saving 4 n (d - n) B flops. Never
    for an engine such as Dask's, whose rows live elsewhere."""
    if not (isinstance(X, np.ndarray) or sparse.issparse(X)):
        return False  # an engine (Dask): its data are not at hand to factorise
    n, d = (int(s) for s in X.shape)
    if d <= n:
        return False
    if sparse.issparse(X):
        return len(stored_columns(sparse.csr_matrix(X))) < d
    return 2 * n * n * d < iterations * draws * 4 * n * (d - n)
