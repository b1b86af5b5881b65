"""The privacy unit of a fit: one person of up to k rows (docs/privacy-unit.md).

``fit(X, y, privacy_unit=ids)`` with ``max_rows_per_unit=k`` certifies the release for
replacing one unit's rows, up to k of them:

1. **Contribution bounding.** Each unit keeps at most k of its rows, chosen by a keyed
   hash (BLAKE2b under a fresh random key of 16 bytes from the OS) of the unit's id and
   the row's rank among that unit's rows: independent of the rows' values, different at
   every fit (derived from ``random_state`` when a testing seed is given, so that a
   seeded fit is reproducible: :func:`unit_key`), and reading nothing of the other
   units (replacing one unit's rows changes no other unit's choice). How many rows were
   dropped is a statistic of the private data: it is shown to whoever runs ``fit``
   (:class:`~objpert.exceptions.ClippingNotice`), never stored.
2. **n = m k.** The m units (public, as the number of rows is for one row) each hold k
   rows: a unit with fewer rows is completed with zero rows, which add nothing to the
   objective's gradient or Hessian (x = 0, the intercept column included). So neighbours
   (one unit's rows replaced) have the same n = m k and, as multisets (the objective is
   a sum over rows, blind to their order), differ in at most k rows: the relation of the
   k-row theorem (:mod:`objpert.certify._unit_rows`).
3. **Certificate.** Each release is calibrated for k-row neighbours (the direct route);
   :class:`~objpert.accounting.UnitCertificate` names the unit and keeps, for a single
   release, the tighter of the direct route and group privacy of the same release's
   one-row profile.

``privacy_unit=ids`` without ``max_rows_per_unit``: the fit is for one row, and ids that
repeat are flagged (:class:`~objpert.exceptions.PrivacyLeakWarning`: the guarantee is
per row, not per person).
"""

from __future__ import annotations

import decimal
import hashlib
import numbers
import secrets
import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from objpert.accounting._unit import UnitCertificate
from objpert.exceptions import ClippingNotice, DataError, ParameterError, PrivacyLeakWarning

__all__ = [
    "UnitRows",
    "bound_contributions",
    "group_unit_certificate",
    "keep_rows",
    "pad_rows",
    "unit_certificate",
    "unit_codes",
    "unit_key",
]

_KEY_BYTES = 16
#: The most memory the zero rows of :func:`pad_rows` may take (public: n, d, the dtype).
MAX_PADDING_BYTES = 2**32


class UnitRows:
    """The rows a unit-level fit keeps (``keep``: row indices) and its public unit count."""

    def __init__(self, keep: np.ndarray, units: int, name: str) -> None:
        self.keep, self.units, self.name = keep, units, name


def unit_codes(ids: Any, n: int) -> tuple[np.ndarray, str, np.ndarray]:
    """One integer code per row for the unit ids, the ids' name (a pandas Series' name,
    else "") and the ids as text (DataError when they are not one id per row, or
    missing)."""
    name = getattr(ids, "name", None)
    name = "" if name is None else str(name)
    values = np.asarray(ids, dtype=object)
    if values.ndim != 1 or values.shape[0] != n:
        raise DataError(
            f"privacy_unit must hold one id per row of X ({n}); got shape {values.shape}"
        )
    missing = [i for i, v in enumerate(values) if _missing(v)]
    if missing:
        raise DataError(
            f"privacy_unit has {len(missing)} missing id(s) (None, NaN, NA or NaT), first at row "
            f"{missing[0]}: every row needs the id of its unit"
        )
    labels = np.array([_id_text(v) for v in values], dtype=str)
    _, codes = np.unique(labels, return_inverse=True)
    return codes.astype(np.int64), name, labels


def _missing(value: Any) -> bool:
    """A missing id: None, a NaN, pandas' NA or NaT, numpy's NaT."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(value, float | np.floating):
        return bool(value != value)
    return isinstance(value, np.datetime64 | np.timedelta64) and bool(np.isnat(value))


def _id_text(value: Any) -> str:
    """A unit id as text, one text per number: 1, 1.0, True, numpy's 1 and True and
    Decimal("1.0") are one unit (as the text "1" already is), so no representation splits
    one person's rows into several units of up to k rows each."""
    if isinstance(value, numbers.Integral | np.integer | np.bool_):  # True, np.True_: 1
        return str(int(value))
    if isinstance(value, numbers.Real | np.floating | decimal.Decimal):
        number = float(value)  # a Decimal, a Fraction, numpy's floats: the float they are
        return str(int(number)) if number.is_integer() else repr(number)
    return str(value)


def unit_key(random_state: Any) -> bytes | None:
    """The hash key of contribution bounding for a fit's ``random_state``: None (fresh OS
    bytes at every fit) without a seed; with a testing seed, bytes derived from it alone
    (BLAKE2b of its text: an int, a ``SeedSequence``'s entropy and spawn key, a
    generator's state), so the same seed keeps the same rows, and reading the seed
    consumes none of its noise. A seed already makes the release reproducible by whoever
    knows it (TestingSeedWarning); the key it gives is no more secret than the noise."""
    if random_state is None:
        return None
    if isinstance(random_state, numbers.Integral):
        text = f"int {int(random_state)}"
    elif isinstance(random_state, np.random.SeedSequence):
        text = f"seedsequence {random_state.entropy} {tuple(random_state.spawn_key)}"
    elif isinstance(random_state, np.random.Generator):
        text = f"generator {random_state.bit_generator.state!r}"
    elif isinstance(random_state, np.random.RandomState):
        text = f"randomstate {random_state.get_state(legacy=False)!r}"
    else:
        text = f"{type(random_state).__name__} {random_state!r}"
    return hashlib.blake2b(text.encode(), digest_size=_KEY_BYTES, person=b"objpert-unit").digest()


def keep_rows(labels: np.ndarray, k: int, key: bytes | None = None) -> np.ndarray:
    """The indices of the rows kept: per unit, the k whose keyed hash BLAKE2b_key(id, j)
    is smallest, j the row's rank among its unit's rows (in table order). The hash reads
    only the unit's own id and rows, so replacing one unit's rows leaves every other
    unit's choice as it was; ``key``: fresh random bytes unless given (for tests)."""
    key = secrets.token_bytes(_KEY_BYTES) if key is None else key
    labels = np.asarray(labels).astype(str)
    _, codes = np.unique(labels, return_inverse=True)
    order = np.argsort(codes, kind="stable")  # by unit, table order within each
    sorted_codes = codes[order]
    starts = np.searchsorted(sorted_codes, sorted_codes, side="left")
    within = np.empty(codes.size, dtype=np.int64)
    within[order] = np.arange(codes.size) - starts  # j: the row's rank in its unit
    hashes = np.fromiter(
        (
            int.from_bytes(
                hashlib.blake2b(f"{u}\x00{j}".encode(), digest_size=8, key=key).digest(),
                "big",
            )
            for u, j in zip(labels.tolist(), within.tolist(), strict=True)
        ),
        dtype=np.uint64,
        count=codes.size,
    )
    by_hash = np.lexsort((hashes, codes))  # by unit, then by hash
    ranked = codes[by_hash]
    rank = np.arange(codes.size) - np.searchsorted(ranked, ranked, side="left")
    return np.sort(by_hash[rank < k])


def bound_contributions(
    ids: Any, n: int, k: int | None, key: bytes | None = None
) -> UnitRows | None:
    """The unit-level rows for ``max_rows_per_unit = k`` (None: a row-level fit, the ids
    only checked for repeats, which are flagged), chosen under ``key`` (:func:`keep_rows`).
    The count of dropped rows is shown to whoever runs ``fit`` (ClippingNotice), never
    returned or stored."""
    if ids is None:
        if k is not None:
            raise ParameterError(
                f"max_rows_per_unit={k} needs the privacy unit of every row: "
                "fit(X, y, privacy_unit=ids)"
            )
        return None
    codes, name, labels = unit_codes(ids, n)
    units = int(codes.max()) + 1 if codes.size else 0
    if k is None:
        if units < n:
            warnings.warn(
                "privacy_unit holds ids with several rows, but max_rows_per_unit is None: the "
                "certificate is per row, not per person (one person's rows together are not "
                "covered); set max_rows_per_unit=k for a guarantee per person of up to k rows",
                PrivacyLeakWarning,
                stacklevel=4,
            )
        return None
    keep = keep_rows(labels, k, key)
    dropped = n - keep.size
    if dropped:
        warnings.warn(
            f"contribution bounding kept at most {k} rows per privacy unit and dropped "
            f"{dropped} of {n} rows (chosen by a keyed hash, not by their values); a "
            "statistic of the private data, shown here only",
            ClippingNotice,
            stacklevel=4,
        )
    return UnitRows(keep, units, name)


def pad_rows(prepared: Any, targets: list[Any], n: int) -> tuple[Any, list[Any]]:
    """``prepared`` and ``targets`` completed to ``n`` rows with zero rows (target 1.0):
    rows that add nothing to the gradient or Hessian of a GLM objective."""
    extra = n - prepared.n
    if extra < 0:
        raise DataError(f"{prepared.n} rows kept exceed the {n} the units allow")
    if extra == 0:
        return prepared, targets
    X = prepared.X
    per_row = 8 if sp.issparse(X) else X.shape[1] * X.dtype.itemsize  # CSR: its row pointer
    if extra * per_row > MAX_PADDING_BYTES:
        raise ParameterError(
            f"n = units x max_rows_per_unit = {n} rows takes {extra} zero rows "
            f"({extra * per_row / 2**30:.3g} GiB in memory, above {MAX_PADDING_BYTES / 2**30:g} "
            "GiB): declare a max_rows_per_unit near the most rows one person holds"
        )
    if sp.issparse(X):
        X = sp.vstack([X, sp.csr_matrix((extra, X.shape[1]), dtype=X.dtype)], format="csr")
    else:
        X = np.vstack([np.asarray(X), np.zeros((extra, X.shape[1]), dtype=X.dtype)])
    pad = np.ones(extra)
    y = prepared.y
    if isinstance(y, np.ndarray) and y.ndim == 1:
        y = np.concatenate([y, np.zeros(extra, dtype=y.dtype)])
    new_targets = [np.concatenate([np.asarray(t, dtype=np.float64), pad]) for t in targets]
    return replace(prepared, X=X, y=y), new_targets


def unit_certificate(cert: Any, plans: list[Any], rows: int, name: str) -> UnitCertificate:
    """The fit's certificate for one unit of ``rows`` rows (direct route), with both
    routes' deltas for a single release (:func:`objpert.certify._unit_rows.unit_routes`),
    the group route kept where it is smaller."""
    from objpert.accounting._group import GROUP_GRID
    from objpert.certify._plan import WatkinsAroraPlan
    from objpert.certify._unit_rows import group_route_certificate, unit_routes

    routes: tuple[tuple[str, float], ...] = ()  # the group route's chain: GROUP_GRID rows
    if 1 < rows <= GROUP_GRID and len(plans) == 1 and isinstance(plans[0], WatkinsAroraPlan):
        found = unit_routes(plans[0])
        routes = tuple(sorted(found.items()))
        if found["group"] < found["direct"]:
            one = group_route_certificate(plans[0])
            return UnitCertificate(
                cert.epsilon, found["group"], cert.certified, rows, "group", one, name,
                routes, tuple(cert.not_public),
            )  # fmt: skip
    return UnitCertificate(
        cert.epsilon, cert.delta, cert.certified, rows, "direct", cert, name, routes,
        tuple(cert.not_public),
    )  # fmt: skip


def check_unit_settings(k: Any, calibration: str) -> int | None:
    """``max_rows_per_unit`` (None or an int >= 1); ParameterError for a calibration the
    k-row theorem does not cover."""
    if k is None:
        return None
    if k > 1 and calibration != "tight":
        raise ParameterError(
            f"max_rows_per_unit={k} needs calibration='tight' (Corollary 4.13 is stated for "
            f"one row); got calibration={calibration!r}"
        )
    return int(k)


def fit_multinomial_per_unit(
    model: Any, prepared: Any, codes: np.ndarray, classes: np.ndarray, p: Any, not_public: Any
) -> tuple[int, float]:
    """A multinomial release for one unit of k = ``p.rows_per_unit`` rows by the group
    route: the softmax release (certified for one row) calibrated at the classical
    one-row target (epsilon / k, delta / (k e^{(k-1) epsilon / k})) on the n = m k rows,
    and its certificate for k rows by group privacy at epsilon
    (:func:`objpert.accounting.group_certificate`, at most delta: its chain bound is at
    most the classical one)."""
    from objpert.accounting._group import crude_row_target
    from objpert.estimators._multinomial import fit_multinomial

    if model.accountant is not None:
        raise ParameterError(
            "a multinomial fit per privacy unit cannot charge an accountant yet: use "
            "multi_class='ovr', or charge its certificate_ after the fit"
        )
    k = p.rows_per_unit
    prepared, (padded,) = pad_rows(prepared, [codes], p.units * k)  # zero rows: class 1
    eps_1, delta_1 = crude_row_target(p.epsilon, p.delta, k)
    out = fit_multinomial(
        model, prepared, padded.astype(np.int64), classes,
        replace(p, epsilon=eps_1, delta=delta_1), not_public,
    )  # fmt: skip
    model.certificate_ = group_unit_certificate(model.certificate_, p)
    return out


def group_unit_certificate(cert: Any, p: Any) -> UnitCertificate:
    """The group route's certificate for one unit of k = ``p.rows_per_unit`` rows (named
    ``p.unit_name``) of a release certified for one row at the classical one-row target
    of (``p.epsilon``, ``p.delta``) (:func:`objpert.accounting._group.crude_row_target`):
    group privacy at ``p.epsilon`` (:func:`objpert.accounting.group_certificate`), at most
    ``p.delta`` (its chain bound is at most the classical one; PrivacyError otherwise)."""
    from objpert.accounting._unit import group_certificate
    from objpert.exceptions import PrivacyError

    out = group_certificate(cert, p.rows_per_unit, p.epsilon, unit=p.unit_name)
    if not (out.certified and out.delta <= p.delta):  # a bug guard: never happens
        raise PrivacyError(f"the group route does not certify the target: {out.delta:.3g}")
    return out
