"""The person-level certificate of every registered mechanism: group privacy of the
release's own privacy-loss events against group privacy of its (epsilon, delta) point and
the classical bound (k epsilon, k e^{(k-1) epsilon} delta).

Each mechanism is planned for one row at (epsilon_1, delta_1) = (1/3, 1e-7) on a public
problem (logistic loss; the multinomial release: softmax, 3 classes; n = 2,000, d = 5,
rows of norm <= 1) and certified for one person of k = 3 rows at epsilon = 1 and at 1.5:

- ``events``: ``objpert.accounting.group_certificate`` (its Gaussian, zCDP, subsampled
  Gaussian or exact-minimiser profile events, grouped: Gaussian at k times the
  sensitivity, zCDP at k^2 rho, the chain bound on a profile);
- ``point``: the chain bound on the tightest pair of its (epsilon_1, delta_1) point alone
  (with the classical bound where it applies);
- ``classical``: delta_1 sum_{i<k} e^{i epsilon_1} (at epsilon = k epsilon_1 only).

Run: ``python benchmarks/person_level_routes.py`` (writes
benchmarks/person_level_routes.json). Pure arithmetic on public constants: no data.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import objpert
from objpert.accounting import _pld as pld
from objpert.accounting import group_certificate, group_privacy
from objpert.accounting._events import certified_point
from objpert.mechanisms import _registry as registry

K = 3
EPS_1, DELTA_1 = 1.0 / K, 1e-7
PUBLIC = dict(n=2000, d=5, zeta=1.0)
EPSILONS = (1.0, 1.5)


def point_route(cert, epsilon: float) -> float:
    dist = pld.distribution(group_privacy(certified_point(cert), K))
    delta = pld.delta_for_epsilon(dist, epsilon)
    if epsilon >= K * cert.epsilon:
        delta = min(delta, classical(cert))
    return delta


def classical(cert) -> float:
    return cert.delta * sum(math.exp(i * cert.epsilon) for i in range(K))


def main() -> None:
    rows = []
    names = [*registry.names(), *registry.names(multiclass=True)]
    for name in names:
        if name == "qop":  # never certified: no person-level certificate
            continue
        kw = dict(loss="softmax", n_classes=3) if name == "multinomial" else dict(loss="logistic")
        cert = objpert.plan(name, **kw, **PUBLIC, epsilon=EPS_1, delta=DELTA_1).certificate
        (event,) = cert.privacy_losses()
        start = time.perf_counter()
        row = {"mechanism": name, "event": event.kind, "row_delta": cert.delta}
        for eps in EPSILONS:
            row[f"events@{eps:g}"] = group_certificate(cert, K, eps).delta
            row[f"point@{eps:g}"] = point_route(cert, eps)
        row["classical@1"] = classical(cert)
        row["seconds"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        print(
            f"{name:20s} {event.kind:20s} " + "  ".join(
                f"{k} {v:.4g}" for k, v in row.items() if "@" in k
            ),
            flush=True,
        )  # fmt: skip
    out = Path(__file__).with_suffix(".json")
    setting = {"k": K, "epsilon_1": EPS_1, "delta_1": DELTA_1, **PUBLIC}
    out.write_text(json.dumps({"setting": setting, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
