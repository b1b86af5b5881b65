"""What the persistence tests share: a raw churn-like frame of numbers and text."""

from __future__ import annotations

import numpy as np
import pandas as pd


def churn_frame(n: int, categories: list[list[str]], seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """n rows of tenure, charges, contract and payment (the categories given), and a
    label that follows the contract and the tenure."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "tenure": rng.integers(0, 73, n),
            "charges": rng.uniform(18, 120, n),
            "contract": rng.choice(categories[0], n),
            "payment": rng.choice(categories[1], n),
        }
    )
    y = ((df["contract"] == "month") * 1.0 - df["tenure"] / 36 > 0).astype(int).to_numpy()
    return df, y
