"""The docstring parts the estimators share: the ridge parameter ``mu`` and the privacy
notes, filled into each estimator's docstring (``%(mu)s``, ``%(privacy)s``)."""

__all__ = ["COMMON_DOC"]

_PRIVACY = """
    Notes
    -----
    Privacy:

    - **n is public.** The number of training rows enters the certificate (the
      sensitivity is G = 2 L1 zeta / n) and is treated as public, as in Watkins & Arora
      (2026); the neighbouring relation is the replacement of one row.
    - **Rows are bounded by data_norm.** Rows of norm above ``data_norm`` are scaled down
      to it (their count, a statistic of the data that is *not* covered by the
      certificate, is shown at fit time only: :func:`objpert.estimators.fit_statistics`;
      the model keeps no statistic of the rows) unless ``clip=False``, in which case
      ``fit`` raises :class:`objpert.exceptions.DataError`. Choose ``data_norm`` (or
      ``feature_bounds``, or a bounded preprocessing step: docs/pipeline.md) from public
      knowledge. ``data_norm=None`` without ``feature_bounds`` reads the largest row norm
      from the training rows: :class:`objpert.PrivacyLeakWarning`, and ``"data norm"`` is
      recorded in ``certificate_.not_public``. When more than 1% of the rows are clipped,
      ``fit`` warns :class:`objpert.exceptions.ClippingNotice` (shown to whoever runs it,
      never stored in the model or its file).
    - **No silent iteration ceiling.** The calibration stops at the knee of its bound
      (docs/pipeline.md); when the knee lies beyond ``max_iter`` and twice the budget
      would lower the bound by more than 0.1 (computed from public constants,
      :func:`objpert.certify._budget.ceiling`), ``fit`` warns
      :class:`objpert.exceptions.IterationBudgetWarning` saying what to set.
    - **Each fit is a release.** Model selection on private data (``GridSearchCV``,
      ``cross_val_score``, refitting with other hyperparameters) spends privacy budget: every
      fit is a separate release on (part of) the same data, and the selection itself is not
      covered by the certificate of any one fit. Budget for all fits, or select on public data.
    - ``random_state=None`` (the default) draws the noise from OS entropy. A seed (int,
      ``Generator``, ``RandomState``) makes the release reproducible by anyone who knows it
      and warns :class:`objpert.exceptions.TestingSeedWarning`: for tests only.

    Dask: ``fit`` takes Dask arrays and DataFrames (e.g. from
    :func:`objpert._data.distributed.from_parquet`) and runs each gradient step as one
    map-reduce on the cluster; the plan, certificate and noise stay on the client. The
    prediction methods return lazy Dask arrays for Dask input (docs/dask.md).
"""

_MU = """mu : "auto" or float > 0, default="auto"
        The ridge coefficient mu of the objective (a public hyperparameter; ``Plan.mu``).
        ``"auto"`` chooses mu, jointly with the noise scale sigma and the iteration count
        N, to minimise the empirical excess-risk bound d sigma^2/(2 mu) + E_opt(N) +
        mu W^2/2 against comparators of norm <= W = ``comparator_norm``, subject to the
        Theorem C.13 certificate at (epsilon, delta) within ``max_iter`` steps. It uses
        public constants only. It targets accuracy, not the worst-case population bound of
        Theorem 4.7, whose 1/(mu n) sample term over-regularises. With
        ``calibration="corollary413"`` mu must be "auto" (Corollary 4.13 chooses mu). The
        plan of a fit is ``objpert.plan`` with these settings (docs/library.md)."""

#: The docstring parts shared by the estimators ("%(mu)s", "%(privacy)s").
COMMON_DOC = {"mu": _MU, "privacy": _PRIVACY.strip("\n").lstrip()}
