"""Applications built on the objpert library; the library never imports them.

* :mod:`~objpert.apps.demo`: private logistic regression on real data against non-private;
* :mod:`~objpert.apps.compare`: every registered mechanism side by side on real data;
* :mod:`~objpert.apps.reproduce`, :mod:`~objpert.apps.reproduce_qop`: the papers' numbers
  and figures, recomputed; :mod:`~objpert.apps.calibration_tables`: their calibration tables;
* :mod:`~objpert.apps.plots`: privacy-profile figures;
* :mod:`~objpert.apps.datasets`: the bundled public datasets and their preprocessing;
* :mod:`~objpert.apps.external`: external peers (diffprivlib) in environments of their own;
* :mod:`~objpert.apps.bench`: the benchmarks behind ``objpert bench``;
* :mod:`~objpert.apps.pairwise_audit`: the measurements recorded in docs/audit-pairwise.md.
* :mod:`~objpert.apps.privacy_report`: the privacy report of a model file (docs/report.md).

The command line, :mod:`objpert.cli`, runs them.
"""

__all__: list[str] = []
