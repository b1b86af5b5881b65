"""The ``objpert`` command line: thin parsing and printing around the library.

Errors are one line on stderr with exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from rich.console import Console
from rich.table import Table

from objpert.certify import exact, theorem41
from objpert.certify.calibration import METHODS, Plan, calibrate
from objpert.certify.certificate import FORMS, Certificate
from objpert.certify.constants import problem
from objpert.certify.search import MAX_ITERATIONS, min_iterations
from objpert.certify.truncation import TRUNCATIONS
from objpert.errors import ObjpertError
from objpert.losses import LOSSES

__all__ = ["CliError", "build_parser", "main", "verify_payload"]

_KEY_ENV = "OBJPERT_MODEL_KEY"  # objpert.persistence.KEY_ENV (not imported: it loads sklearn)


class CliError(Exception):
    """A usage error to report in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(message)


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return str(value)
        return f"{value:.10g}" if 1e-4 <= abs(value) < 1e6 else f"{value:.6e}"
    return str(value)


def _kv_table(title: str, rows: dict[str, Any]) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for k, v in rows.items():
        if isinstance(v, dict | list | tuple):
            continue
        table.add_row(k, _fmt(v))
    return table


def _console() -> Console:
    """stdout console; wide enough for the tables when output goes to a pipe or file."""
    return Console() if sys.stdout.isatty() else Console(width=160)


def _emit(args: argparse.Namespace, payload: dict, tables: list[Table]) -> None:
    if args.json:
        print(json.dumps(payload, indent=2))
    else:
        console = _console()
        for t in tables:
            console.print(t)


def _add_problem_args(p: argparse.ArgumentParser, mu: bool = True) -> None:
    p.add_argument("--loss", default="logistic", help=f"one of {', '.join(LOSSES)}")
    p.add_argument("--scale", type=float, default=None, help="pseudo-Huber scale c (robust)")
    p.add_argument("--n", type=float, required=True, help="number of rows (public)")
    p.add_argument("--d", type=float, required=True, help="number of features")
    p.add_argument("--zeta", type=float, default=1.0, help="row-norm bound (Assumption 1)")
    if mu:
        p.add_argument("--mu", type=float, required=True, help="ridge regularisation")
        p.add_argument("--eta", type=float, default=None, help="step size (default 1/L)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def _loss_params(args: argparse.Namespace) -> dict:
    return {} if args.scale is None else {"scale": args.scale}


def _certificate_payload(cert: Certificate) -> dict:
    out = cert.to_dict()
    out.pop("constants", None)
    return out


def cmd_certify(args: argparse.Namespace) -> int:
    pc = problem(
        args.loss,
        n=args.n,
        d=args.d,
        zeta=args.zeta,
        mu=args.mu,
        eta=args.eta,
        **_loss_params(args),
    )
    form, sigma, u = args.form, args.sigma, args.u
    if args.min_iterations:
        if form == "limit":
            raise CliError("--min-iterations needs --form theorem41 or c13")
        if args.target_delta is None or args.epsilon is None:
            raise CliError("--min-iterations needs --epsilon and --target-delta")
        cert = min_iterations(
            pc,
            sigma,
            args.epsilon,
            args.target_delta,
            u=u,
            form=form,
            truncation=args.truncation,
            n_max=args.max_iterations,
        )
    else:
        if form != "limit" and args.iterations is None:
            raise CliError("--iterations is required (or use --min-iterations)")
        epsilon = args.epsilon
        if epsilon is None:
            if args.target_delta is None:
                raise CliError("give --epsilon, or --target-delta to compute epsilon")
            epsilon = _epsilon_for(pc, args, args.target_delta)
            if not math.isfinite(epsilon):
                raise CliError(
                    f"no epsilon reaches delta = {args.target_delta:g} "
                    f"with the {form} form at these constants"
                )
        if form == "theorem41":
            cert = theorem41.certify(pc, sigma, u, args.iterations, epsilon, args.truncation)
        elif form == "c13":
            cert = exact.certify(
                pc, sigma, args.iterations, epsilon, u=u, truncation=args.truncation
            )
        else:
            cert = exact.certify_limit(pc, sigma, epsilon)
    payload = _certificate_payload(cert)
    if args.target_delta is not None:
        payload["target_delta"] = args.target_delta
        payload["certified"] = bool(cert.certified and cert.delta <= args.target_delta)
    if args.plot:
        from objpert.plots import plot_privacy_profiles

        payload["plot"] = plot_privacy_profiles(
            pc,
            sigma,
            u,
            cert.iterations or args.iterations or 1000,
            args.plot,
            epsilon=cert.epsilon,
            truncation=args.truncation,
        )
    title = f"Certificate ({form}) for {pc.loss}, n={pc.n}, d={pc.d}"
    _emit(args, payload, [_kv_table(title, payload)])
    return 0


def _epsilon_for(pc, args, target: float) -> float:
    if args.form == "theorem41":
        return float(
            theorem41.epsilon_for_delta(
                pc, args.sigma, args.u, args.iterations, target, args.truncation
            )
        )
    if args.form == "c13":
        r, r_outer = exact.paper_radii(pc, args.sigma, args.u)
        return float(
            exact.epsilon_for_delta(
                pc, args.sigma, r, r_outer, args.iterations, target, args.truncation
            )
        )
    return exact.limit_s(pc, args.sigma) + theorem41.slack_for_divergence(pc, args.sigma, target)


def plan_payload(plan: Plan) -> dict:
    out = plan.to_dict()
    out["certificate"].pop("constants", None)
    return out


def cmd_calibrate(args: argparse.Namespace) -> int:
    kwargs = dict(
        n=args.n,
        d=args.d,
        zeta=args.zeta,
        epsilon=args.epsilon,
        delta=args.delta,
        radius=args.radius,
        delta_sample=args.delta_sample,
        **_loss_params(args),
    )
    if args.method == "tight":
        kwargs["max_iterations"] = args.max_iterations
    plan = calibrate(args.loss, method=args.method, **kwargs)
    payload = plan_payload(plan)
    _emit(args, payload, [_kv_table(f"Plan ({plan.method})", payload)])
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.paper == "qop":
        return _reproduce_qop(args)
    from objpert import reproduce

    entries = reproduce.all_entries()
    rows = reproduce.mu_comparison()
    payload = {
        "entries": [e.to_dict() for e in entries],
        "mu_comparison": [r.__dict__ for r in rows],
    }
    table = Table(title="Watkins & Arora (2026): printed against computed")
    for col in ("section", "quantity", "printed", "computed", "agrees"):
        table.add_column(col, justify="right" if col in ("printed", "computed") else "left")
    for e in entries:
        mark = "yes" if e.matches else "[bold red]NO[/] " + e.note
        table.add_row(e.section, e.quantity, e.printed, _fmt(e.computed), mark)
    mu_table = Table(title="Section C.4 across mu: n=1e6, d=1e4, sigma/G=5, u=6, target (1, 1e-7)")
    for col in ("mu", "kappa", "Thm 4.1 threshold (7)", "first N, Thm 4.1", "first N, Thm C.13"):
        mu_table.add_column(col, justify="right")
    for r in rows:
        mu_table.add_row(
            _fmt(r.mu),
            _fmt(r.kappa),
            str(r.threshold_theorem41),
            str(r.first_theorem41),
            str(r.first_c13),
        )
    _emit(args, payload, [table, mu_table])
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from objpert import reproduce
    from objpert.report import calibration_markdown, calibration_table

    pc = reproduce.example_constants()
    sigma = reproduce.SIGMA_OVER_G * pc.G
    certs = [
        theorem41.certify(pc, sigma, reproduce.U, reproduce.N_RUN, 1.0),
        exact.certify(pc, sigma, reproduce.N_RUN, 1.0, u=reproduce.U),
        min_iterations(pc, sigma, *reproduce.TARGET, u=reproduce.U),
        exact.certify_limit(pc, sigma, 1.0),
    ]
    cert_table = Table(
        title="Example 4.8 (logistic, n=1e6, d=1e4, mu=0.01, sigma=1e-5, u=6): "
        "certificates at epsilon = 1"
    )
    for col in ("form", "N", "delta", "truncation", "divergence", "certified"):
        cert_table.add_column(col, justify="right")
    for c in certs:
        cert_table.add_row(
            c.form,
            str(c.iterations or "inf"),
            _fmt(c.delta),
            _fmt(c.truncation_mass),
            _fmt(c.divergence_term),
            str(c.certified),
        )
    console = Console(stderr=True)
    with console.status("calibrating (Corollary 4.13 against tight) ..."):
        rows = reproduce.calibration_comparison()
    payload = {
        "certificates": [_certificate_payload(c) for c in certs],
        "calibration": [
            {
                "n": r.n,
                "epsilon": r.epsilon,
                "tight": plan_payload(r.tight),
                "corollary413": plan_payload(r.corollary) if r.corollary else None,
            }
            for r in rows
        ],
    }
    if args.markdown:
        print(calibration_markdown(rows))
        return 0
    _emit(args, payload, [cert_table, calibration_table(rows)])
    return 0


def _read_table(path: str):
    import pandas as pd

    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".pq"):
        try:
            return pd.read_parquet(path)
        except ImportError as err:
            raise CliError(f"reading Parquet needs pyarrow: {err}") from None
    if lower.endswith(".csv") or lower.endswith(".csv.gz"):
        return pd.read_csv(path)
    raise CliError(f"--data must be a .csv or .parquet file; got {path!r}")


def _split_target(df, target: str, path: str):
    if target not in df.columns:
        cols = ", ".join(map(str, list(df.columns)[:10]))
        raise CliError(f"column {target!r} is not in {path} (columns: {cols})")
    return df.drop(columns=[target]), df[target]


def _warn_lines(caught) -> None:
    for w in caught:
        print(f"objpert: warning: {' '.join(str(w.message).split())}", file=sys.stderr)


def _read_key(path: str | None) -> bytes | None:
    """The raw bytes of ``--key-file`` (one trailing newline stripped); None without it
    (then ``OBJPERT_MODEL_KEY`` is used, when set)."""
    if path is None:
        return None
    from pathlib import Path

    key = Path(path).read_bytes()
    if key.endswith(b"\r\n"):
        key = key[:-2]
    elif key.endswith(b"\n"):
        key = key[:-1]
    if not key:
        raise CliError(f"--key-file {path} is empty")
    return key


def _check_writable(out: str) -> None:
    """Refuse an --out that cannot be written, before any training."""
    from pathlib import Path

    path = Path(out)
    parent = path.parent
    if not parent.is_dir():
        raise CliError(
            f"--out {out}: the directory {str(parent)!r} does not exist; nothing was trained"
        )
    if path.is_dir():
        raise CliError(f"--out {out} is a directory, not a file name; nothing was trained")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise CliError(
            f"--out {out} cannot be written ({exc.strerror or exc}); nothing was trained"
        ) from None
    if not existed:
        path.unlink(missing_ok=True)


def _parse_classes(text: str) -> list[int] | list[str]:
    """--classes: comma-separated labels; integers when all are integral, else strings."""
    items = [s.strip() for s in text.split(",")]
    if len(items) < 2 or not all(items):
        raise CliError(f"--classes must list at least two comma-separated labels; got {text!r}")
    try:
        numbers = [float(s) for s in items]
    except ValueError:
        return items
    if all(math.isfinite(v) and v.is_integer() for v in numbers):
        return [
            int(s) if s.lstrip("+-").isdigit() else int(v)
            for s, v in zip(items, numbers, strict=True)
        ]
    return items


DATA_STATISTICS_NOTE = (
    "statistics of the private training data: not covered by the certificate; do not publish"
)


def cmd_train(args: argparse.Namespace) -> int:
    import warnings

    from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
    from objpert.persistence import save

    key = _read_key(args.key_file)
    if args.out:
        _check_writable(args.out)
    alpha: float | str = args.alpha
    if alpha != "auto":
        try:
            alpha = float(alpha)
        except ValueError:
            raise CliError(f"--alpha must be a positive number or 'auto'; got {alpha!r}") from None
    extra: dict[str, Any] = {}
    if args.classes is not None:
        if args.loss != "logistic":
            raise CliError("--classes applies to --loss logistic only")
        extra["classes"] = _parse_classes(args.classes)
    df = _read_table(args.data)
    X, y = _split_target(df, args.target, args.data)
    if args.classes is not None and all(isinstance(c, str) for c in extra["classes"]):
        y = y.to_numpy(dtype=str)  # text labels (object dtype in pandas): declared strings
    cls = PrivateLogisticRegression if args.loss == "logistic" else PrivateRobustRegression
    model = cls(
        epsilon=args.epsilon,
        delta=args.delta,
        data_norm=args.data_norm,
        fit_intercept=not args.no_intercept,
        clip=not args.no_clip,
        alpha=alpha,
        calibration=args.calibration,
        max_iterations=args.max_iterations,
        random_state=args.seed,
        **extra,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    _warn_lines(caught)
    cert = model.certificate_
    certified = bool(cert.certified and cert.epsilon <= args.epsilon and cert.delta <= args.delta)
    if not certified:
        raise CliError(
            f"the fitted model is not certified at the target (epsilon={args.epsilon:g}, "
            f"delta={args.delta:g}): its certificate gives certified={cert.certified}, "
            f"epsilon={cert.epsilon:g}, delta={cert.delta:.3g}; nothing was written"
        )
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    payload: dict[str, Any] = {
        "epsilon": cert.epsilon,
        "delta": cert.delta,
        "certified": certified,
        "n": len(y),
        "n_features": int(model.n_features_in_),
        "iterations": [p.iterations for p in plans],
        "sigma": [p.sigma for p in plans],
        "mu": [p.mu for p in plans],
        "releases": len(plans),
        "not_public": list(getattr(cert, "not_public", ())),
        "seeded": bool(getattr(model, "seeded_", args.seed is not None)),
        "certificate": cert.to_dict(),
    }
    metric = "training_accuracy" if args.loss == "logistic" else "training_r2"
    statistics = {metric: float(model.score(X, y)), "rows_clipped": int(model.n_clipped_)}
    if args.out:
        save(model, args.out, key=key)
        payload["model"] = args.out
        payload["signed"] = key is not None or _env_key_set()
    # statistics of the private rows: the terminal only (stderr), labelled, unless asked for
    Console(stderr=True, width=None if sys.stderr.isatty() else 160).print(
        _kv_table(
            "Private data statistics: NOT covered by the certificate (do not publish)",
            {f"{k} (not covered by the certificate)": v for k, v in statistics.items()},
        )
    )
    if args.include_data_statistics:
        payload["data_statistics"] = {"note": DATA_STATISTICS_NOTE, **statistics}
    flat = {
        k: v
        for k, v in payload.items()
        if k not in ("certificate", "data_statistics", "not_public")
    }
    flat["not public (not covered)"] = ", ".join(payload["not_public"]) or "none"
    _emit(args, payload, [_kv_table(f"Private {args.loss} model on {args.data}", flat)])
    return 0


def _env_key_set() -> bool:
    from objpert.persistence import signing_key

    return signing_key(None) is not None


def _load_model(path: str, key: bytes | None):
    """Read and check a model file; an unverified one is reported as a one-line warning."""
    from objpert.persistence import read

    loaded = read(path, key)
    if not loaded.verified:
        print(f"objpert: warning: {path}: {loaded.warning}", file=sys.stderr)
    return loaded.model


def cmd_predict(args: argparse.Namespace) -> int:
    model = _load_model(args.model, _read_key(args.key_file))
    df = _read_table(args.data)
    y = None
    if args.target is not None:
        df, y = _split_target(df, args.target, args.data)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in df.columns]
        if missing:
            raise CliError(f"{args.data} lacks the model's feature columns {missing[:5]}")
        df = df[list(names)]
    pred = model.predict(df)
    payload: dict[str, Any] = {"n": len(pred)}
    if y is not None:
        payload["score"] = float(model.score(df, y))
    if args.out:
        import pandas as pd

        pd.DataFrame({"prediction": pred}).to_csv(args.out, index=False)
        payload["predictions_file"] = args.out
    elif not args.json:
        for p in pred:
            print(p)
    if args.json:
        payload["predictions"] = [p.item() if hasattr(p, "item") else p for p in pred]
        print(json.dumps(payload))
    elif args.out or y is not None:
        Console(stderr=True).print(_kv_table("prediction", payload))
    return 0


_FORM_NAMES = {
    "c13": "Theorem C.13",
    "theorem41": "Theorem 4.1",
    "limit": "Theorem C.13 (limit)",
}
_COMPOSITION_NAMES = {
    "single": "one release (no composition)",
    "basic": "basic composition (Dwork & Roth 2014, Theorem 3.16)",
    "advanced": "advanced composition (Dwork, Rothblum & Vadhan 2010, Theorem III.3)",
}


def verify_payload(path: str, loaded: Any) -> dict[str, Any]:
    """What ``objpert verify`` reports about a loaded model file."""
    model = loaded.model
    cert = model.certificate_
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    composition = getattr(cert, "method", "single")
    forms = sorted({p.certificate.form for p in plans})
    mechanism = (
        "objective perturbation: gradient descent on the perturbed objective "
        f"(Watkins & Arora 2026), {plans[0].method} calibration, certified by "
        f"{', '.join(_FORM_NAMES.get(f, f) for f in forms)}; "
        f"{_COMPOSITION_NAMES.get(composition, composition)}"
    )
    seeded = bool(model.seeded_)
    releases = [
        {
            "release": i,
            "method": p.method,
            "loss": p.loss,
            "form": p.certificate.form,
            "n": p.n,
            "d": p.d,
            "zeta": p.zeta,
            "epsilon": p.epsilon,
            "delta": p.delta,
            "certified_delta": p.certificate.delta,
            "sigma": p.sigma,
            "mu": p.mu,
            "eta": p.eta,
            "iterations": p.iterations,
            "truncation": p.truncation,
        }
        for i, p in enumerate(plans)
    ]
    return {
        "model": path,
        "estimator": type(model).__name__,
        "format_version": loaded.version,
        "signature": loaded.status,
        "signed": loaded.signature != "unsigned",
        "verified": loaded.verified,
        "mechanism": mechanism,
        "certified": bool(cert.certified),
        "epsilon": cert.epsilon,
        "delta": cert.delta,
        "composition": composition,
        "releases": releases,
        "not_public": list(getattr(cert, "not_public", ())),
        "seeded": seeded,
    }


def cmd_verify(args: argparse.Namespace) -> int:
    from objpert.persistence import read

    loaded = read(args.model, _read_key(args.key_file))
    payload = verify_payload(args.model, loaded)
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    console = _console()
    summary = {
        "model": payload["model"],
        "estimator": payload["estimator"],
        "signature": payload["signature"],
        "certified": payload["certified"],
        "epsilon": payload["epsilon"],
        "delta": payload["delta"],
        "composition": payload["composition"],
        "releases": len(payload["releases"]),
        "not public (not covered by the certificate)": ", ".join(payload["not_public"]) or "none",
        "seeded": (
            "yes: a testing seed drew the noise (reproducible by anyone who knows it): not private"
            if payload["seeded"]
            else "no (OS entropy)"
        ),
    }
    console.print(_kv_table(f"Model file {args.model}", summary))
    console.print(f"mechanism: {payload['mechanism']}")
    table = Table(title="Plans (re-derived from the loss and the public constants)")
    cols = ("release", "n", "d", "zeta", "epsilon", "delta", "sigma", "mu", "eta", "iterations")
    for col in cols:
        table.add_column(col, justify="right")
    for r in payload["releases"]:
        table.add_row(*(_fmt(r[c]) for c in cols))
    console.print(table)
    console.print(f"signature: {payload['signature']}")
    return 0


def _floats(text: str, flag: str) -> list[float]:
    try:
        return [float(e) for e in text.split(",") if e.strip()]
    except ValueError:
        raise CliError(f"{flag} must be comma-separated numbers; got {text!r}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.progress import Progress

    from objpert import compare

    names = [s.strip() for s in args.data.split(",") if s.strip()]
    eps = _floats(args.epsilons, "--epsilons")
    methods = (
        compare.DEFAULT_METHODS
        if args.methods is None
        else tuple(m.strip() for m in args.methods.split(",") if m.strip())
    )
    unknown = [m for m in methods if m not in compare.DEFAULT_METHODS]
    if unknown:
        raise CliError(
            f"unknown methods {unknown}; choose from {', '.join(compare.DEFAULT_METHODS)}"
        )
    total = len(names) * len(eps) * args.seeds * len(methods)
    with Progress(
        console=Console(stderr=True), transient=True, disable=args.json or not sys.stderr.isatty()
    ) as bar:
        task = bar.add_task("comparison", total=total)
        rows, meta = compare.run(
            names, eps, args.delta, args.seeds, methods, progress=lambda k: bar.advance(task, k)
        )
    payload = {
        "rows": [r.to_dict() for r in rows],
        "meta": meta,
        "command": "objpert " + " ".join(sys.argv[1:]),
    }
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "compare.json").write_text(json.dumps(payload, indent=2, default=float))
        (out / "compare.md").write_text(compare.markdown(rows) + "\n")
        payload["plot"] = compare.plot(rows, str(out / "compare.png"))
    if args.json:
        print(json.dumps(payload, indent=2, default=float))
    else:
        _console().print(compare.markdown(rows))
        if meta.get("diffprivlib"):
            _console().print(f"diffprivlib: {meta['diffprivlib']['versions']}")
    return 0


def _reproduce_qop(args: argparse.Namespace) -> int:
    from objpert import reproduce_qop

    with Console(stderr=True).status("reproducing Cortild & Cartis, Figures 1 and 2 ..."):
        result = reproduce_qop.run(args.out, runs=args.runs)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    fig2 = result["figure2"]
    table = Table(
        title="QOP (Cortild & Cartis 2026), Figure 2: spread of the empirical risk "
        "across box radii (authors: LOP 3.8e4, LOP-Clip 45, QOP 0.073)"
    )
    for col in ("method", "spread (avg std)", "risk range over kappa"):
        table.add_column(col, justify="right")
    for method, value in fig2["spread"].items():
        lo, hi = fig2["risk_range"][method]
        table.add_row(str(method), _fmt(value), f"{_fmt(lo)} .. {_fmt(hi)}")
    _console().print(table)
    for name in ("figure1", "figure2"):
        _console().print(f"{name}: {result[name]['png']}, {result[name]['table']}")
    _console().print(f"summary: {result['summary']}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    from objpert import demo

    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    eps = _floats(args.epsilons, "--epsilons")
    total = len(names) * len(eps) * args.seeds
    with Progress(
        console=Console(stderr=True), transient=True, disable=args.json or not sys.stderr.isatty()
    ) as bar:
        task = bar.add_task("private fits", total=total)
        rows = demo.run(
            names, eps, args.seeds, args.delta, args.seed, progress=lambda: bar.advance(task)
        )
    path = demo.plot(rows, args.plot) if args.plot else None
    if args.json:
        print(json.dumps({"rows": [r.to_dict() for r in rows], "plot": path}, indent=2))
        return 0
    if args.markdown:
        print(demo.markdown(rows))
        return 0
    table = Table(
        title=f"Private logistic regression (Watkins & Arora release), delta = "
        f"{args.delta:g}, {args.seeds} releases per epsilon"
    )
    for col in (
        "dataset",
        "n_train",
        "epsilon",
        "test accuracy",
        "non-private",
        "gap",
        "majority",
        "N",
        "sigma",
        "mu",
        "s/fit",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r.dataset,
            str(r.n_train),
            f"{r.epsilon:g}",
            f"{r.accuracy_mean:.4f} +- {r.accuracy_std:.4f}",
            f"{r.nonprivate_accuracy:.4f}",
            f"{100 * r.gap:.2f} pts",
            f"{r.majority_rate:.4f}",
            str(r.iterations),
            f"{r.sigma:.3g}",
            f"{r.mu:.3g}",
            f"{r.seconds:.2f}",
        )
    _console().print(table)
    if path:
        _console().print(f"accuracy against epsilon: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="objpert",
        description="Differential privacy by objective "
        "perturbation: certificates, calibration, reproduction.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("certify", help="certify (epsilon, delta) for given public constants")
    _add_problem_args(p)
    p.add_argument("--sigma", type=float, required=True, help="noise scale of z")
    p.add_argument("--u", type=float, default=6.0, help="truncation parameter u >= 0")
    p.add_argument("--iterations", type=int, default=None, help="number of GD steps N")
    p.add_argument("--epsilon", type=float, default=None)
    p.add_argument("--form", choices=FORMS, default="theorem41")
    p.add_argument("--truncation", choices=TRUNCATIONS, default="paper")
    p.add_argument("--target-delta", type=float, default=None)
    p.add_argument(
        "--min-iterations",
        action="store_true",
        help="find the first N certifying (--epsilon, --target-delta)",
    )
    p.add_argument("--max-iterations", type=int, default=MAX_ITERATIONS)
    p.add_argument("--plot", default=None, metavar="FILE.png")
    p.set_defaults(func=cmd_certify)

    p = sub.add_parser("calibrate", help="choose sigma, mu, eta, N, u for a target budget")
    _add_problem_args(p, mu=False)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--radius", type=float, default=1.0, help="comparator norm bound W")
    p.add_argument("--delta-sample", type=float, default=0.01, help="delta_S of Theorem 4.7")
    p.add_argument("--method", choices=METHODS, default="tight")
    p.add_argument("--max-iterations", type=int, default=100_000)
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("reproduce", help="print the paper's numbers beside the computed ones")
    p.add_argument(
        "paper",
        nargs="?",
        choices=("watkins-arora", "qop"),
        default="watkins-arora",
        help="watkins-arora (default) or qop (Cortild & Cartis: Figures 1 and 2)",
    )
    p.add_argument(
        "--out",
        default="objpert-qop",
        metavar="DIR",
        help="where `reproduce qop` writes its PNG and CSV files",
    )
    p.add_argument("--runs", type=int, default=10, help="runs per box radius (qop)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("tables", help="certificates of Example 4.8 and the calibration table")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true", help="print the README calibration table")
    p.set_defaults(func=cmd_tables)

    p = sub.add_parser("demo", help="private logistic regression on real data, against non-private")
    p.add_argument(
        "--datasets", default="tv16,breast_cancer", help="comma-separated: tv16, breast_cancer"
    )
    p.add_argument("--epsilons", default="0.1,0.3,1,3")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seeds", type=int, default=10, help="releases per epsilon")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise (testing only; default: OS entropy)",
    )
    p.add_argument("--plot", default="objpert-demo.png", metavar="FILE.png")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("compare", help="the private training methods side by side on real data")
    p.add_argument(
        "--data",
        default="tv16,health_insurance",
        help="comma-separated datasets: tv16, health_insurance, breast_cancer",
    )
    p.add_argument("--epsilons", default="0.1,0.3,1,3")
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--methods", default=None, help="comma-separated; default: all")
    p.add_argument("--out", default=None, metavar="DIR", help="write table, JSON and PNG here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("train", help="train a private model on a CSV or Parquet file")
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)")
    p.add_argument("--target", required=True, metavar="COLUMN")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--loss", choices=("logistic", "robust"), default="logistic")
    p.add_argument(
        "--data-norm",
        type=float,
        default=1.0,
        help="public bound on the feature-row norms; larger rows are clipped",
    )
    p.add_argument("--no-clip", action="store_true", help="refuse rows above --data-norm")
    p.add_argument("--alpha", default="auto", help="ridge coefficient mu, or 'auto'")
    p.add_argument("--calibration", choices=METHODS, default="tight")
    p.add_argument("--max-iterations", type=int, default=5000)
    p.add_argument("--no-intercept", action="store_true")
    p.add_argument(
        "--classes",
        default=None,
        metavar="A,B,...",
        help="the public label set, comma-separated (integers when all are integral, else "
        "strings); without it the labels are read from the data, which the certificate "
        "does not cover",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="MODEL.json",
        help="write the model here (checked writable before training)",
    )
    p.add_argument(
        "--key-file",
        default=None,
        metavar="FILE",
        help="sign the model file with HMAC-SHA-256 under the raw bytes of FILE (one "
        f"trailing newline stripped); default: the value of {_KEY_ENV}, if set",
    )
    p.add_argument("--seed", type=int, default=None, help="reproducible noise (testing only)")
    p.add_argument(
        "--include-data-statistics",
        action="store_true",
        help="also put the statistics of the private training data (training accuracy or "
        "R^2, rows clipped) in the --json output; they are not covered by the certificate "
        "(do not publish them) and are never written to the model file. Without this flag "
        "they are printed to stderr only",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="predict with a saved model")
    p.add_argument("--model", required=True, metavar="MODEL.json")
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)")
    p.add_argument("--target", default=None, help="a label column to drop and score against")
    p.add_argument("--out", default=None, metavar="PREDICTIONS.csv")
    p.add_argument("--key-file", default=None, metavar="FILE", help="verify the model's signature")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "verify",
        help="check a model file: re-derive its plans, verify its signature, print what "
        "is certified",
    )
    p.add_argument("model", metavar="MODEL.json")
    p.add_argument(
        "--key-file",
        default=None,
        metavar="FILE",
        help="the signing key: raw bytes of FILE (one trailing newline stripped); default: "
        f"the value of {_KEY_ENV}, if set",
    )
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_verify)

    from objpert.bench.runner import register as register_bench

    register_bench(sub)

    from objpert.audit.cli_audit import add_parser as add_audit_parser

    add_audit_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (CliError, ObjpertError, OSError) as err:
        msg = " ".join(str(err).split())
        print(f"objpert: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("objpert: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
