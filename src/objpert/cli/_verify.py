"""``objpert verify``: check a model file (re-derive its plans, verify its signature) and
print what is certified."""

from __future__ import annotations

import argparse
import json
from typing import Any

from objpert.accounting._pipeline import any_seeded, file_certificate
from objpert.cli._common import KEY_ENV, add_max_bytes_arg, final_estimator, read_key, read_model
from objpert.cli._output import console, fmt, kv_table, new_table

__all__ = ["add_parser", "cmd_verify", "verify_payload"]

_FORM_NAMES = {
    "c13": "Theorem C.13",
    "theorem41": "Theorem 4.1",
    "limit": "Theorem C.13 (limit)",
}
_COMPOSITION_NAMES = {
    "single": "one release (no composition)",
    "basic": "basic composition (Dwork & Roth 2014, Theorem 3.16)",
    "advanced": "advanced composition (Dwork, Rothblum & Vadhan 2010, Theorem III.3)",
    "pld": "the composition of the releases' privacy-loss distributions (objpert.accounting)",
}


def with_pipeline(payload: dict[str, Any], model: Any) -> dict[str, Any]:
    """``payload`` headed by the guarantee of everything a pipeline file released when a
    step before its model released privately too (private bounds; basic composition), the
    model's own kept as ``release_epsilon`` and ``release_delta``."""
    total = file_certificate(model)
    if total is None:
        return payload
    return {
        **payload,
        "release_epsilon": payload["epsilon"],
        "release_delta": payload["delta"],
        "epsilon": total.epsilon,
        "delta": total.delta,
        "composition": "basic",
        "certified": bool(payload["certified"]) and bool(total.certified),
        "not_public": list(total.not_public),
    }


def verify_payload(path: str, loaded: Any) -> dict[str, Any]:
    """What ``objpert verify`` reports about a loaded model file."""
    from objpert.persistence._amp_file import amp_iterations

    model = final_estimator(loaded.model)
    cert = model.certificate_
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    composition = getattr(getattr(cert, "release", cert), "method", "single")  # a unit's too
    forms = sorted({p.certificate.form for p in plans})
    mechanism = (
        "objective perturbation: gradient descent on the perturbed objective "
        f"(Watkins & Arora 2026), {getattr(plans[0], 'calibration', '')} calibration, certified by "
        f"{', '.join(_FORM_NAMES.get(f, f) for f in forms)}; "
        f"{_COMPOSITION_NAMES.get(composition, composition)}"
    )
    if plans[0].mechanism == "multinomial":
        mechanism = (
            "one multinomial release: the softmax objective minimised with objective and "
            "output noise (docs/multiclass.md), certified by its exact-minimiser profile"
        )
    elif plans[0].mechanism == "amp":
        mechanism = (
            "approximate minima perturbation (Iyengar et al. 2019, Algorithm 1): the perturbed "
            f"objective solved to gradient norm {plans[0].tolerance:.3g} within "
            f"{plans[0].max_iter} iterations, plus output noise; certified by the "
            f"{plans[0].accountant} accountant of its objective noise and the grid Gaussian "
            "of its output noise"
        )
    seeded = bool(model.seeded_) or any_seeded(loaded.model)  # a private step's seed too
    releases = [
        {
            "release": i,
            "mechanism": p.mechanism,
            "calibration": getattr(p, "calibration", None),
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
            "eta": getattr(p, "eta", None),  # a multinomial plan runs a solver, not steps
            "iterations": amp_iterations(p),  # AMP: the solver's public budget
            "truncation": getattr(p, "truncation", "none"),
        }
        for i, p in enumerate(plans)
    ]
    payload = {
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
        "privacy_unit": cert.to_dict().get("privacy_unit", "one row"),
        "releases": releases,
        "not_public": list(getattr(cert, "not_public", ())),
        "seeded": seeded,
    }
    return with_pipeline(payload, loaded.model)


def cmd_verify(args: argparse.Namespace) -> int:
    loaded = read_model(args.model, read_key(args.key_file), args.max_bytes)
    payload = verify_payload(args.model, loaded)
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    out = console()
    summary = {
        "model": payload["model"],
        "estimator": payload["estimator"],
        "signature": payload["signature"],
        "certified": payload["certified"],
        "epsilon": payload["epsilon"],
        "delta": payload["delta"],
        "composition": payload["composition"],
        "privacy unit": payload["privacy_unit"],
        "releases": len(payload["releases"]),
        "not public (not covered by the certificate)": ", ".join(payload["not_public"]) or "none",
        "seeded": (
            "yes: a testing seed drew the noise (reproducible by anyone who knows it): not private"
            if payload["seeded"]
            else "no (OS entropy)"
        ),
    }
    out.print(kv_table(f"Model file {args.model}", summary))
    out.print(f"mechanism: {payload['mechanism']}")
    table = new_table("Plans (re-derived from the loss and the public constants)")
    cols = ("release", "n", "d", "zeta", "epsilon", "delta", "sigma", "mu", "eta", "iterations")
    for col in cols:
        table.add_column(col, justify="right")
    for r in payload["releases"]:
        table.add_row(*(fmt(r[c]) for c in cols))
    out.print(table)
    out.print(f"signature: {payload['signature']}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``verify`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
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
        f"the value of {KEY_ENV}, if set",
    )
    add_max_bytes_arg(p)
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_verify)
    return p
