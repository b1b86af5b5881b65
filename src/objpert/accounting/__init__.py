"""Privacy as a value that composes: privacy-loss distributions, a budget, certificates.

- :mod:`~objpert.accounting._profiles`: delta(epsilon) of one release (Watkins & Arora
  2026, Theorem C.13, minimised over the truncation radius; zCDP);
- :mod:`~objpert.accounting._pld`: each release as a pessimistic privacy-loss distribution
  (dp-accounting), composed and queried;
- :mod:`~objpert.accounting._accountant`: :class:`PrivacyAccountant`, a budget that refuses
  a release before it is made, and the composed certificates;
- :func:`group_privacy`: a release's privacy loss for k rows at once (one person's rows),
  computed from its privacy profile (:mod:`~objpert.accounting._group`), and
  :class:`UnitCertificate`, the guarantee for one person of up to k rows
  (:func:`group_certificate`: by group privacy);
- :func:`pipeline_certificate`: one certificate for the private steps of a fitted
  pipeline (basic composition, or their PLDs composed).

Needs the optional package dp-accounting (``pip install 'objpert[accounting]'``).
"""

from objpert.accounting._accountant import (
    AccountedCertificate,
    PLDComposedCertificate,
    PrivacyAccountant,
    Remaining,
    Step,
    as_losses,
    compose_certificates,
)
from objpert.accounting._certificate import Certificate
from objpert.accounting._group import group_privacy
from objpert.accounting._pipeline import pipeline_certificate
from objpert.accounting._plan import Plan, PublicConstants, Target
from objpert.accounting._pld import (
    DEFAULT_DISCRETIZATION,
    PrivacyLoss,
    available,
    compose,
    delta_for_epsilon,
    epsilon_for_delta,
    from_certificate,
    from_plan,
    gaussian,
    laplace,
    point,
    zcdp,
)
from objpert.accounting._unit import UnitCertificate, group_certificate

__all__ = [
    "DEFAULT_DISCRETIZATION",
    "AccountedCertificate",
    "Certificate",
    "PLDComposedCertificate",
    "Plan",
    "PrivacyAccountant",
    "PrivacyLoss",
    "PublicConstants",
    "Remaining",
    "Step",
    "Target",
    "UnitCertificate",
    "as_losses",
    "available",
    "compose",
    "compose_certificates",
    "delta_for_epsilon",
    "epsilon_for_delta",
    "from_certificate",
    "from_plan",
    "gaussian",
    "group_certificate",
    "group_privacy",
    "laplace",
    "pipeline_certificate",
    "point",
    "zcdp",
]
