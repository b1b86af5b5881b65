"""Applications built on the objpert library; the library never imports them.

* :mod:`~objpert.apps._demo`: private logistic regression on real data against non-private;
* :mod:`~objpert.apps._compare`: every registered mechanism side by side on real data;
* :mod:`~objpert.apps._reproduce`, :mod:`~objpert.apps._reproduce_qop`: the papers' numbers
  and figures, recomputed; :mod:`~objpert.apps._calibration_tables`: their calibration tables;
* :mod:`~objpert.apps._plots`: privacy-profile figures;
* :mod:`~objpert.apps.datasets`: the bundled public datasets and their preprocessing;
* :mod:`~objpert.apps._external`: external peers (diffprivlib) in environments of their own;
* :mod:`~objpert.apps._bench`: the benchmarks behind ``objpert bench``;
* :mod:`~objpert.apps._pairwise_audit`: the measurements recorded in docs/audit-pairwise.md.
* :mod:`~objpert.apps._privacy_report`: the privacy report of a model file (docs/report.md).

The command line, :mod:`objpert.cli`, runs them.
"""

__all__: list[str] = []
