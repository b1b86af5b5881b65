"""Loading: every plan re-derived, the certificate recomputed, the model rebuilt and
checked against its parameters (see :mod:`objpert.persistence`)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import (
    ComposedCertificate,
    compose,
    split_budget,
)
from objpert.certify._multiclass import release_delta
from objpert.certify._plan import WatkinsAroraPlan, rederive_plan
from objpert.estimators import LABEL_SET, PrivateRobustRegression
from objpert.estimators._base import DATA_NORM, FitSettings, public_zeta
from objpert.estimators._planning import release_comparator_norm
from objpert.estimators._prior import match_prior
from objpert.exceptions import ModelFileError, ObjpertError, UnverifiedModelWarning
from objpert.persistence._amp_file import amp_iterations, is_amp, recertify_amp
from objpert.persistence._fileformat import (
    _CLASS_KINDS,
    _ESTIMATORS,
    _RTOL,
    MAX_BYTES,
    LoadedModel,
    _check_digest,
    _check_header,
    _check_model_certificate,
    _check_signature,
    _close,
    _normal,
    _not_public,
    _read,
    check_tree,
    plan_from_dict,
    quote_value,
    require_same,
    signing_key,
)
from objpert.persistence._ledger_file import LEDGER_FORMAT, ledger_from_payload
from objpert.persistence._multinomial import is_multinomial, recertify_multinomial
from objpert.persistence._selection_file import SELECTION_KEY, attach_selection
from objpert.persistence._unit_record import UNIT_KEY, multinomial_unit, unit_from_record

__all__ = [
    "from_payload",
    "load",
    "read",
]


def _brief(exc: BaseException) -> str:
    """An error's message on one line, cut to a short escaped prefix (it may quote a value
    of the file)."""
    return quote_value(" ".join(str(exc)[:400].split()), 200, quote=False)


def _decode_classes(data: Any) -> np.ndarray:
    if not isinstance(data, dict) or set(data) != {"values", "dtype"}:
        raise ModelFileError("classes must be an object with keys 'values' and 'dtype'")
    try:
        if not isinstance(data["dtype"], str):  # np.dtype(None) would be float64
            raise TypeError
        dtype = np.dtype(data["dtype"])
    except TypeError:
        raise ModelFileError(f"classes has an unknown dtype {quote_value(data['dtype'])}") from None
    if dtype.kind not in _CLASS_KINDS or not isinstance(data["values"], list):
        raise ModelFileError(f"classes cannot have dtype {dtype}")
    try:
        classes = np.array(data["values"], dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"classes do not fit dtype {dtype}: {_brief(exc)}") from None
    if classes.ndim != 1:
        raise ModelFileError(f"classes must be a list; got shape {classes.shape}")
    if not _same_labels(classes.tolist(), data["values"]):  # a cast that changed a value
        raise ModelFileError(
            f"classes {quote_value(data['values'])} are not values of dtype {dtype}"
        )
    return classes


def _same_labels(a: list[Any], b: list[Any]) -> bool:
    """Whether two label lists hold the same values, a boolean never the same as 0 or 1."""
    return len(a) == len(b) and all(
        x == y and isinstance(x, bool) == isinstance(y, bool) for x, y in zip(a, b, strict=True)
    )


def _array(name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelFileError(f"{name} must be numbers; got {quote_value(value)}") from None
    if not np.all(np.isfinite(arr)):
        raise ModelFileError(f"{name} has non-finite values")
    return arr


def _check_shapes(payload, cls) -> tuple[np.ndarray, Any, np.ndarray | None, int]:
    """coef, intercept, classes, number of releases, after checking they agree."""
    n_features = payload["n_features_in"]
    if not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1:
        raise ModelFileError(
            f"n_features_in must be a positive integer; got {quote_value(n_features)}"
        )
    names = payload["feature_names_in"]
    if names is not None and (
        not isinstance(names, list)
        or len(names) != n_features
        or not all(isinstance(s, str) for s in names)
    ):
        raise ModelFileError(f"inconsistent shapes: feature_names_in must list {n_features} names")
    coef = _array("coef", payload["coef"])
    if cls is PrivateRobustRegression:
        if payload["classes"] is not None:
            raise ModelFileError("a regression model has no classes")
        if coef.shape != (n_features,):
            raise ModelFileError(
                f"inconsistent shapes: coef has shape {coef.shape}, expected ({n_features},) "
                f"for n_features_in = {n_features}"
            )
        intercept = payload["intercept"]
        if isinstance(intercept, bool) or not isinstance(intercept, int | float):
            raise ModelFileError(f"intercept must be a number; got {quote_value(intercept)}")
        return coef, float(intercept), None, 1
    classes = _decode_classes(payload["classes"])
    k = len(classes)
    if k < 2 or len(np.unique(classes)) != k:
        raise ModelFileError(
            "inconsistent classes: need at least two distinct labels; got "
            f"{quote_value(classes.tolist())}"
        )
    rows = 1 if k == 2 else k
    if coef.shape != (rows, n_features):
        raise ModelFileError(
            f"inconsistent shapes: coef has shape {coef.shape}, expected ({rows}, {n_features}) "
            f"for {k} classes and n_features_in = {n_features}"
        )
    intercept = _array("intercept", payload["intercept"])
    if intercept.shape != (rows,):
        raise ModelFileError(
            f"inconsistent shapes: intercept has shape {intercept.shape}, expected ({rows},)"
        )
    return coef, intercept, classes, rows


def _rederive(i: int, data: Any) -> tuple[WatkinsAroraPlan, ReleaseCertificate]:
    """WatkinsAroraPlan ``i`` and its certificate re-derived from the loss registry and the plan's
    public inputs (:func:`rederive_plan`), checked against the stored certificate."""
    try:
        plan = plan_from_dict(data)
        cert = rederive_plan(plan)
    except ModelFileError as exc:
        raise ModelFileError(f"plan {i}: {exc}") from None
    except Exception as exc:  # PrivacyError or any garbage in the numbers: refuse, naming it
        raise ModelFileError(f"plan {i} is refused: {_brief(exc)}") from None
    if not cert.certified:
        raise ModelFileError(
            f"plan {i} does not certify when recomputed: {'; '.join(cert.reasons)}"
        )
    if cert.delta > plan.delta or cert.epsilon != plan.epsilon:
        raise ModelFileError(
            f"plan {i} recertifies to (epsilon={cert.epsilon:g}, delta={cert.delta:.3g}), "
            f"not its target (epsilon={plan.epsilon:g}, delta={plan.delta:.3g})"
        )
    stored = data["certificate"]
    cert = dataclasses.replace(cert, not_public=_not_public(stored, f"plan {i}"))
    require_same(cert, stored, f"plan {i}: the recomputed certificate differs from the stored one")
    return dataclasses.replace(plan, certificate=cert), cert


def _recertify(
    plans_data: Any, releases: int, model: Any, p: FitSettings, pld: bool = False
) -> tuple[list[WatkinsAroraPlan], list[ReleaseCertificate]]:
    """Re-derive each plan and check it against the model's parameters and the others."""
    if not isinstance(plans_data, list) or len(plans_data) != releases:
        raise ModelFileError(
            f"inconsistent shapes: expected {releases} plan(s), one per release; got "
            f"{len(plans_data) if isinstance(plans_data, list) else quote_value(plans_data)}"
        )
    d = model.n_features_in_ + (1 if p.fit_intercept else 0)
    zeta = public_zeta(p, model.n_features_in_)  # None: read from the data (not public)
    try:
        split = split_budget(p.epsilon, p.delta, releases)
    except ObjpertError as exc:
        raise ModelFileError(f"invalid params: {_brief(exc)}") from None
    plans, certs = [], []
    for i, data in enumerate(plans_data):
        plan, cert = _rederive(i, data)
        pc = plan.constants
        expected = {
            "loss": model._loss,
            "d": d,
            "calibration": p.calibration,
            "objective": "empirical" if p.calibration == "tight" else "population",
            "loss_params": [] if p.scale is None else [["scale", p.scale]],
        }
        found = {
            "loss": pc.loss,
            "d": pc.d,
            "calibration": plan.calibration,
            "objective": plan.objective,
            "loss_params": _normal(pc.loss_params),
        }
        for key, want in expected.items():
            if found[key] != want:
                raise ModelFileError(
                    f"plan {i} does not match the model: {key} = {quote_value(found[key])}, "
                    f"expected {quote_value(want)}"
                )
        checks = [
            ("zeta", pc.zeta, pc.zeta if zeta is None else zeta),
            ("plan n", plan.n, pc.n),
            ("plan d", plan.d, pc.d),
            ("plan zeta", plan.zeta, pc.zeta),
            ("plan mu", plan.mu, pc.mu),
            ("plan eta", plan.eta, pc.eta),
            ("plan sigma", plan.sigma, plan.certificate.sigma),
            # pld: the per-release epsilon came from a bisection; _certificate checks that
            # the K-fold PLD composition of the re-derived plans meets the target
            ("epsilon (per release)", plan.epsilon, plan.epsilon if pld else split.epsilon_i),
            (
                "delta (per release)",
                plan.delta,
                release_delta(p.delta, releases) if pld else split.delta_i,
            ),
            (
                "comparator_norm",
                plan.comparator_norm,
                release_comparator_norm(p.comparator_norm, plan.epsilon),
            ),
        ]
        if p.mu is not None:
            checks.append(("mu", pc.mu, p.mu))
        for key, got, want in checks:
            if not math.isclose(got, want, rel_tol=_RTOL):
                raise ModelFileError(
                    f"plan {i} does not match the model: {key} = {got!r}, expected {want!r}"
                )
        if plan.calibration == "tight" and plan.iterations > p.max_iter:
            raise ModelFileError(
                f"plan {i} does not match the model: {plan.iterations} iterations, more than "
                f"max_iter = {p.max_iter}"
            )
        plans.append(plan)
        certs.append(cert)
    first = _normal(plans[0].to_dict())
    for i, plan in enumerate(plans[1:], start=1):  # one fit: one plan for all its releases
        where = _close(_normal(plan.to_dict()), first)
        if where:
            raise ModelFileError(
                f"plan {i} differs from plan 0 at {quote_value(where, 200, quote=False)}: the "
                "releases of one fit share a plan"
            )
    return plans, certs


def _certificate(
    data: Any, certs: list[ReleaseCertificate], p: FitSettings, releases: int
) -> ReleaseCertificate | ComposedCertificate:
    """The model's certificate recomputed from the re-derived plans, checked against the
    stored one and the target; its ``not_public`` items as stored."""
    if not isinstance(data, dict):
        raise ModelFileError("certificate must be a JSON object")
    not_public = _not_public(data, "certificate")
    split = split_budget(p.epsilon, p.delta, releases)
    if releases == 1:
        cert: ReleaseCertificate | ComposedCertificate = dataclasses.replace(
            certs[0], not_public=not_public
        )
    else:
        inner = data.get("certificates")
        if not isinstance(inner, list) or len(inner) != releases:
            raise ModelFileError(f"the certificate must compose {releases} certificates")
        if not all(isinstance(c, dict) for c in inner):
            raise ModelFileError("the composed certificates must be JSON objects")
        parts = [
            dataclasses.replace(c, not_public=_not_public(s, f"certificate {i}"))
            for i, (c, s) in enumerate(zip(certs, inner, strict=True))
        ]
        if data.get("method") == "pld":
            cert = _pld_certificate(data, parts, p, not_public)
        elif data.get("method") != split.method:
            raise ModelFileError(
                f"the certificate composes by {quote_value(data.get('method'))}, but the "
                f"model's budget "
                f"is split by {split.method!r}"
            )
        else:
            try:
                cert = compose(
                    parts, split.method, delta_slack=split.delta_slack or None,
                    not_public=not_public,
                )  # fmt: skip
            except ObjpertError as exc:
                raise ModelFileError(f"the certificates do not compose: {_brief(exc)}") from None
    _check_model_certificate(cert, data, p.epsilon, p.delta, "the plans")
    return cert


def _pld_certificate(
    data: dict[str, Any],
    parts: list[ReleaseCertificate],
    p: FitSettings,
    not_public: tuple[str, ...],
) -> Any:
    """The PLD composition of the re-derived releases at the model's epsilon."""
    if p.composition == "split":
        raise ModelFileError(
            "the certificate composes by 'pld', but the model's composition is 'split'"
        )
    try:
        from objpert.accounting._accountant import _compose_certificates
        from objpert.accounting._pld import check_discretization

        step = check_discretization(data.get("discretization"))
        return _compose_certificates(parts, p.epsilon, discretization=step, not_public=not_public)
    except ObjpertError as exc:
        raise ModelFileError(f"the certificates do not compose by PLD: {_brief(exc)}") from None


def _check_labels(model: Any, classes: np.ndarray | None, not_public: tuple[str, ...]) -> None:
    """classes=None (labels read from the data) must be listed as not public; declared
    classes must be the model's classes_."""
    if classes is None:
        return
    try:
        ordered = np.array_equal(np.unique(classes), classes)
    except TypeError:  # labels of mixed kinds: no order
        ordered = False
    if not ordered:  # fit sorts them; the columns of coef_ and predict_proba follow
        raise ModelFileError(
            f"classes_ {quote_value(classes.tolist())} are not sorted and distinct, as a fit "
            "leaves them"
        )
    declared = getattr(model, "classes", None)
    if declared is None:
        if LABEL_SET not in not_public:
            raise ModelFileError(
                f"the label set was read from the training data (classes=None), but the "
                f"certificate does not list {LABEL_SET!r} as not public"
            )
        return
    try:
        listed = np.asarray(declared).ravel().tolist()
        found = classes.tolist()
        same = len(listed) == len(found) and all(
            any(_same_labels([v], [f]) for f in found) for v in listed
        )
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ModelFileError(
            f"classes_ {quote_value(classes.tolist())} are not the declared classes "
            f"{quote_value(declared)}"
        )


def _releases(data: Any, plans: list[WatkinsAroraPlan], p: FitSettings, params: dict) -> list[bool]:
    """The per-release records: iterations as planned; the seeded flags."""
    if not isinstance(data, list) or len(data) != len(plans):
        raise ModelFileError(f"releases must list {len(plans)} record(s), one per plan")
    seeded = []
    for i, (rec, plan) in enumerate(zip(data, plans, strict=True)):
        if not isinstance(rec, dict) or set(rec) != {"iterations", "seeded"}:
            raise ModelFileError(f"release {i} must be an object with 'iterations' and 'seeded'")
        if not isinstance(rec["seeded"], bool):
            raise ModelFileError(f"release {i}: seeded must be true or false")
        it = rec["iterations"]
        planned = amp_iterations(plan)
        if isinstance(it, bool) or not isinstance(it, int) or it != planned:
            raise ModelFileError(
                f"release {i} ran {quote_value(it)} iterations, not its plan's {planned}"
            )
        seeded.append(rec["seeded"])
    if params.get("random_state") is not None and not all(seeded):
        raise ModelFileError("random_state is a seed, but the releases are recorded as not seeded")
    return seeded


def _prior(p: FitSettings, n_features: int, releases: int) -> Any:
    """The saved public prior (``params["prior"]``) checked against the model's shape."""
    if p.prior is None:
        return None
    try:
        return match_prior(p.prior, n_features=n_features, releases=releases)
    except ObjpertError as exc:
        raise ModelFileError(f"invalid prior: {_brief(exc)}") from None


def _rebuild(payload: dict[str, Any]) -> Any:
    """A fitted estimator from a model file's content (header checked), checking it all."""
    try:
        model = _rebuild_checked(payload)
        if SELECTION_KEY in payload:  # chosen by a private search: its guarantee re-derived
            attach_selection(model, payload[SELECTION_KEY])
        return model
    except ModelFileError:
        raise
    except Exception as exc:  # malformed content we did not foresee: refuse, never crash
        raise ModelFileError(f"malformed model file: {type(exc).__name__}: {_brief(exc)}") from None


def _rebuild_checked(payload: dict[str, Any]) -> Any:
    cls = _ESTIMATORS.get(payload["estimator"])
    if cls is None:
        raise ModelFileError(
            f"unknown estimator {quote_value(payload['estimator'])}: expected one of "
            f"{sorted(_ESTIMATORS)}"
        )
    params = payload["params"]
    if not isinstance(params, dict):
        raise ModelFileError("params must be a JSON object")
    try:
        model = cls(**params)
        p = model._public_constants()
    except TypeError as exc:
        raise ModelFileError(f"params do not fit {cls.__name__}: {_brief(exc)}") from None
    except ObjpertError as exc:
        raise ModelFileError(f"invalid params: {_brief(exc)}") from None
    coef, intercept, classes, releases = _check_shapes(payload, cls)
    model.n_features_in_ = payload["n_features_in"]
    model.feature_bounds_ = p.feature_bounds  # the bounds the release was fitted with
    stored = payload["certificate"]
    multinomial = classes is not None and is_multinomial(payload["plans"])
    if multinomial:  # one softmax release for the K classes
        plans, certificate = multinomial_unit(
            payload.get(UNIT_KEY),
            p,
            lambda q: recertify_multinomial(payload["plans"], stored, model, q, releases),
        )
        releases = 1
    elif is_amp(payload["plans"]):  # one AMP release (objpert.spark's default)
        if releases != 1:
            raise ModelFileError(f"an AMP release is one weight vector; the file has {releases}")
        plans, certificate = multinomial_unit(
            payload.get(UNIT_KEY),
            p,
            lambda q: recertify_amp(payload["plans"], stored, model, q),
            "an AMP",
        )
    else:
        pld = isinstance(stored, dict) and stored.get("method") == "pld"
        plans, certs = _recertify(payload["plans"], releases, model, p, pld)
        certificate = _certificate(stored, certs, p, releases)
        k = model.max_rows_per_unit
        certificate = unit_from_record(payload.get(UNIT_KEY), certificate, plans, k)
    _check_labels(model, classes, certificate.not_public)
    if public_zeta(p, model.n_features_in_) is None and DATA_NORM not in certificate.not_public:
        raise ModelFileError(
            f"data_norm was read from the training data (data_norm=None), but the "
            f"certificate does not list {DATA_NORM!r} as not public"
        )
    n_iter = _array("n_iter", payload["n_iter"])
    if n_iter.shape != (releases,) or any(
        int(k) != amp_iterations(pl) for k, pl in zip(n_iter, plans, strict=True)
    ):
        raise ModelFileError(
            f"n_iter {quote_value(n_iter.tolist())} does not match the plans' iteration counts"
        )
    seeded = _releases(payload["releases"], plans, p, params)
    if payload["feature_names_in"] is not None:
        model.feature_names_in_ = np.asarray(payload["feature_names_in"], dtype=object)
    model.coef_ = coef
    model.intercept_ = intercept
    rows = len(classes) if multinomial else releases  # the prior's rows: one per class
    model._set_prior_attributes(_prior(p, model.n_features_in_, rows))
    if classes is not None:
        model.classes_ = classes
        model.multi_class_ = "multinomial" if multinomial else "ovr"
    model.n_iter_ = n_iter.astype(np.int64)
    model.plan_ = plans[0] if releases == 1 else plans
    model.certificate_ = certificate
    model.seeded_ = bool(any(seeded))
    if "preprocessing" in payload:  # a pipeline: its declared steps, then the estimator
        from objpert.persistence._pipeline_file import rebuild

        return rebuild(payload["preprocessing"], model)
    return model


def from_payload(payload: dict[str, Any], key: bytes | str | None = None) -> LoadedModel:
    """Check a model file's content (header, signature, digest, shapes, plans) and rebuild
    the fitted estimator."""
    if not isinstance(payload, dict):
        raise ModelFileError(
            f"a model file's content is a JSON object; got {type(payload).__name__}"
        )
    if payload.get("format") == LEDGER_FORMAT:
        return ledger_from_payload(payload, key)
    check_tree(payload)
    version = _check_header(payload)
    status = _check_signature(payload, signing_key(key))
    _check_digest(payload)
    return LoadedModel(_rebuild(payload), version, status)


def read(
    path: str | Path, key: bytes | str | None = None, *, max_bytes: int = MAX_BYTES
) -> LoadedModel:
    """Read and check a model file like :func:`load`, without warning: the model with
    whether its signature was verified (:class:`LoadedModel`)."""
    return from_payload(_read(path, max_bytes), key)


def load(path: str | Path, key: bytes | str | None = None, *, max_bytes: int = MAX_BYTES) -> Any:
    """Read a model written by :func:`save`, refusing (:class:`ModelFileError`) any file
    that is not JSON, has another format or version, misses keys, fails its signature or
    digest, has inconsistent shapes, or whose plans do not re-derive and match the model.

    ``key`` (bytes or str; None: ``OBJPERT_MODEL_KEY``) verifies the signature. An unsigned
    file, or a signed one without a key, loads with an :class:`UnverifiedModelWarning`.

    ``max_bytes`` (default :data:`~objpert.persistence.MAX_BYTES`, 64 MiB): a larger file
    is refused before it is read (its size from ``os.stat``; a saved model takes about 25
    bytes per weight, 54 KB for 10 classes of 100 features). Error messages quote at most
    a short, escaped prefix of any value of the file."""
    loaded = read(path, key, max_bytes=max_bytes)
    if not loaded.verified:
        warnings.warn(f"{path}: {loaded.warning}", UnverifiedModelWarning, stacklevel=2)
    return loaded.model
