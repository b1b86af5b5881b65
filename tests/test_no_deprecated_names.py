"""Nothing was released under an older name, so the library keeps none: no module warns
DeprecationWarning, and former names are refused like any unknown name. Each removed name
is listed here, so that none comes back as an alias."""

from __future__ import annotations

from pathlib import Path

import pytest

from objpert import _losses as losses
from objpert._losses import get_loss
from objpert.certify._calibration import tight
from objpert.cli import build_parser
from objpert.exceptions import CliError, ModelFileError, ParameterError
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates import names
from objpert.mechanisms._certificates.noisy_gd import plan_noisy_gd
from objpert.persistence import FORMAT, VERSION, from_payload

SRC = Path(__file__).resolve().parents[1] / "src" / "objpert"
COMMON = dict(n=2000, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=300)


def test_no_module_warns_a_deprecation():
    warns = sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "DeprecationWarning" in p.read_text()
    )
    assert warns == []


def test_radius_is_not_a_name_of_comparator_norm():
    with pytest.raises(ParameterError, match="radius"):  # not a keyword: a loss parameter
        tight("logistic", radius=2.0, **COMMON)
    assert tight("logistic", comparator_norm=2.0, **COMMON).comparator_norm == 2.0


@pytest.mark.parametrize("old", ["wa", "lop-clip", "output", "noisy-gd"])
def test_former_mechanism_names_are_unknown(old):
    with pytest.raises(ParameterError, match="watkins_arora, lop"):
        registry.get(old)


@pytest.mark.parametrize("old", ["pseudo_huber", "pseudo-huber", "Pseudo-Huber", "Robust"])
def test_former_loss_names_are_unknown(old):
    assert not hasattr(losses, "_ALIASES")
    with pytest.raises(ParameterError, match="loss must be one of 'logistic', 'robust'"):
        get_loss(old)


@pytest.mark.parametrize("version", [1, VERSION + 1])
def test_only_the_current_model_file_version_is_read(version):
    """No reader of version 1 files: they get the error any unknown version gets."""
    with pytest.raises(ModelFileError, match=f"unsupported format version {version}"):
        from_payload({"format": FORMAT, "version": version})


def test_noisy_gd_has_no_pld_accountant():
    """'pld' certified noisy GD's discrete noise by the zCDP bound of 'rdp': one name per
    method, and no privacy-loss distribution of the discrete noise is computed."""
    assert names.ACCOUNTANTS == ("zcdp", "rdp")
    with pytest.raises(ParameterError, match="accountant must be one of"):
        plan_noisy_gd("logistic", n=1000, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, accountant="pld")


#: Former command-line spellings: (the subcommand and its required arguments, the flag).
CALIBRATE = ["calibrate", "--n", "1000", "--d", "3", "--epsilon", "1", "--delta", "1e-6"]
TRAIN = ["train", "--data", "x.csv", "--target", "y", "--epsilon", "1", "--delta", "1e-6"]
FORMER_FLAGS = [
    (CALIBRATE, "--max-iterations", "50"),  # --max-iter
    (["certify"], "--max-iterations", "50"),  # --max-iter
    (CALIBRATE, "--alpha", "0.1"),  # --mu
    (CALIBRATE, "--method", "tight"),  # --calibration
    (CALIBRATE, "--radius", "3"),  # --comparator-norm
    (CALIBRATE, "--comparator-radius", "3"),  # --comparator-norm
    (["certify"], "--target-delta", "1e-6"),  # --delta
    (TRAIN, "--threads", "1"),  # --n-jobs
    (TRAIN, "--intercept", None),  # --fit-intercept
    (TRAIN, "--no-intercept", None),  # --no-fit-intercept
    (TRAIN, "--alpha", "0.1"),  # --mu
    (["compare"], "--data", "breast_cancer"),  # --datasets
    (["bench"], "--json", "r.json"),  # --json-file
]


@pytest.mark.parametrize(("head", "flag", "value"), FORMER_FLAGS)
def test_former_flags_are_unknown(head, flag, value):
    argv = [*head, flag, *([value] if value is not None else [])]
    with pytest.raises(CliError, match=f"unrecognized arguments: {flag}"):
        build_parser().parse_args(argv)
