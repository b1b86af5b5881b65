"""Run IBM diffprivlib's LogisticRegression in its own environment (no objpert import).

Usage: python diffprivlib_runner.py IN.npz ARGS.json OUT.json
IN.npz holds Xtr, ytr, Xte, yte; ARGS.json: epsilons, seeds (a count: seeds 0, 1, ...; or
the list of seeds), data_norm.
"""

import json
import sys
import time
import warnings

__all__ = ["main"]


def main() -> None:
    import diffprivlib
    import numpy as np
    import sklearn
    from diffprivlib.models import LogisticRegression

    data = np.load(sys.argv[1])
    with open(sys.argv[2]) as fh:
        args = json.load(fh)
    rows = []
    for eps in args["epsilons"]:
        seeds = args["seeds"]
        for seed in range(seeds) if isinstance(seeds, int) else seeds:
            model = LogisticRegression(
                epsilon=eps, data_norm=args["data_norm"], random_state=seed, max_iter=1000
            )
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data["Xtr"], data["ytr"])
            seconds = time.perf_counter() - t0
            rows.append(
                {
                    "epsilon": eps,
                    "seed": seed,
                    "accuracy": float(model.score(data["Xte"], data["yte"])),
                    "seconds": seconds,
                    "coef": model.coef_.ravel().tolist(),
                    "intercept": float(np.ravel(model.intercept_)[0]),
                }
            )
    out = {
        "rows": rows,
        "versions": {
            "diffprivlib": diffprivlib.__version__,
            "scikit-learn": sklearn.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
        },
        "privacy": "pure epsilon-DP (delta = 0): objective perturbation, Chaudhuri et al. 2011",
    }
    with open(sys.argv[3], "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
