"""One name per quantity on the command line: a quantity carries the same flag on every
subcommand that takes it, no option has a second spelling (nor an abbreviation), a flag
means one thing wherever it appears, and the former spellings are unknown."""

from __future__ import annotations

import argparse

import pytest

from objpert.cli import build_parser, main
from objpert.cli._common import cli_words
from objpert.cli._params import SPECIAL, flag_for
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


SUBCOMMANDS = subcommands()
ESTIMATOR_PARAMETERS = set(PrivateLogisticRegression().get_params()) | set(
    PrivateRobustRegression().get_params()
)

#: quantity -> (its one flag, the subcommands that take it)
QUANTITIES = {
    "the most gradient steps (a budget)": ("--max-iter", ("train", "calibrate", "certify")),
    "the ridge coefficient mu": ("--mu", ("train", "calibrate", "certify")),
    "the calibration (tight or corollary413)": ("--calibration", ("train", "calibrate")),
    "W, the norm of the comparators": ("--comparator-norm", ("train", "calibrate")),
    "how K releases share the budget": ("--composition", ("train", "calibrate")),
    "the loss": ("--loss", ("train", "calibrate", "certify")),
    "the pseudo-Huber scale c": ("--scale", ("train", "calibrate", "certify")),
    "an intercept column": ("--fit-intercept", ("train",)),
    "the threads of one fit": ("--n-jobs", ("train",)),
    "the threads of the whole run": ("--threads", ("demo", "compare", "bench")),
    "the target epsilon": ("--epsilon", ("train", "calibrate", "certify", "audit")),
    "the target delta": (
        "--delta",
        ("train", "calibrate", "certify", "audit", "demo", "compare"),
    ),
    "the epsilons of a sweep": ("--epsilons", ("demo", "compare")),
    "the built-in datasets": ("--datasets", ("demo", "compare")),
    "releases per epsilon": ("--seeds", ("demo", "compare")),
    "a seed": ("--seed", ("train", "demo", "audit")),
    "a model file to read": ("--model", ("certify", "predict")),
    "the signing key": ("--key-file", ("train", "certify", "verify", "predict", "report")),
    "the largest model file read": ("--max-bytes", ("certify", "verify", "predict", "report")),
    "a data file": ("--data", ("train", "predict")),
    "print JSON": (
        "--json",
        ("train", "calibrate", "certify", "verify", "predict", "reproduce", "compare", "audit"),
    ),
    "write the results as JSON to a file": ("--json-file", ("bench",)),
    "print a markdown table": ("--markdown", ("demo", "tables", "bench")),
}

#: Spellings no subcommand takes: the flag -> the one flag of its quantity.
FORMER = {
    "--max-iterations": "--max-iter",
    "--alpha": "--mu",
    "--method": "--calibration",
    "--radius": "--comparator-norm",
    "--comparator-radius": "--comparator-norm",
    "--intercept": "--fit-intercept",
    "--no-intercept": "--no-fit-intercept",
    "--target-delta": "--delta",
    "--n-threads": "--n-jobs",
}

#: Spellings some subcommands take for another quantity: (flag, subcommand) -> the flag
#: of the quantity meant there.
ELSEWHERE = {
    ("--threads", "train"): "--n-jobs",  # the threads of the fit: its n_jobs
    ("--data", "demo"): "--datasets",  # --data is a file
    ("--data", "compare"): "--datasets",
}


@pytest.mark.parametrize("quantity", sorted(QUANTITIES))
def test_each_quantity_has_one_flag_on_every_subcommand(quantity):
    flag, commands = QUANTITIES[quantity]
    for command in commands:
        assert flag in options(SUBCOMMANDS[command]), (quantity, command)


@pytest.mark.parametrize("flag", sorted(FORMER))
def test_former_spellings_are_gone(flag):
    takers = [name for name, p in SUBCOMMANDS.items() if flag in options(p)]
    assert takers == [], f"{flag} is back on {takers}: the flag is {FORMER[flag]}"


@pytest.mark.parametrize(("flag", "command"), sorted(ELSEWHERE))
def test_a_flag_of_another_quantity_is_not_taken(flag, command):
    assert flag not in options(SUBCOMMANDS[command]), ELSEWHERE[flag, command]
    assert ELSEWHERE[flag, command] in options(SUBCOMMANDS[command])


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_no_option_has_a_second_spelling(command):
    """One option string per option; a boolean's --no- form is its other half, and -h its
    help (argparse's)."""
    for action in SUBCOMMANDS[command]._actions:
        strings = list(action.option_strings)
        if not strings or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse.BooleanOptionalAction):
            assert len(strings) == 2 and strings[1] == "--no-" + strings[0][2:], strings
        else:
            assert len(strings) == 1 and strings[0].startswith("--"), strings


def test_a_flag_means_one_thing_everywhere():
    """The same flag on two subcommands is the same kind of option (a switch, or one value,
    or a repeated one): ``--json`` prints JSON wherever it appears."""
    kinds: dict[str, set] = {}
    for parser in SUBCOMMANDS.values():
        for flag, action in options(parser).items():
            kinds.setdefault(flag, set()).add((type(action).__name__, action.nargs))
    mixed = {flag: kind for flag, kind in kinds.items() if len(kind) > 1}
    assert mixed == {}
    for parser in SUBCOMMANDS.values():
        if "--json" in options(parser):
            assert isinstance(options(parser)["--json"], argparse._StoreTrueAction)


def test_estimator_parameters_keep_their_flag_on_every_subcommand():
    """Wherever a subcommand takes an estimator parameter (its dest names it), the flag is
    the one ``train`` gives it."""
    seen = set()
    for command, parser in SUBCOMMANDS.items():
        for action in parser._actions:
            name = action.dest.removeprefix("param_")
            if name in ESTIMATOR_PARAMETERS and action.option_strings:
                assert action.option_strings[0] == flag_for(name), (command, name)
                seen.add((command, name))
    for name in ("max_iter", "mu", "calibration", "comparator_norm", "composition"):
        assert ("calibrate", name) in seen and ("train", name) in seen, name
    assert ("certify", "max_iter") in seen and ("certify", "mu") in seen


def test_only_the_seed_flag_is_not_the_parameter_name():
    assert {name: flag for name, (flag, _, _) in SPECIAL.items()} == {
        "random_state": "--seed",  # every subcommand's seed
        "n_jobs": "--n-jobs",
        "feature_bounds": "--feature-bounds",
    }


@pytest.mark.parametrize(
    ("argv", "given"),
    [
        (["calibrate", "--n", "1000", "--d", "3", "--epsilon", "1", "--delta", "1e-6",
          "--max", "50"], "--max"),  # not --max-iter
        (["compare", "--data", "tv16"], "--data"),  # not --datasets
        (["bench", "--json", "r.json"], "--json"),  # not --json-file
    ],
)  # fmt: skip
def test_no_abbreviation_is_a_second_name(argv, given, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"unrecognized arguments: {given}" in err


def test_library_settings_in_messages_are_named_by_their_flags():
    assert cli_words("raise it: max_iter=20000") == "raise it: --max-iter 20000"
    assert cli_words("use mu='auto'") == "use --mu auto"
    for command in ("train", "calibrate", "certify"):  # the flags the messages name exist
        assert {"--max-iter", "--mu"} <= set(options(SUBCOMMANDS[command]))


def test_an_unknown_category_names_a_flag_that_exists_where_it_applies():
    """predict has no --categories: the message sends the user back to train's."""
    text = cli_words(
        "column 'c' has 1 value(s) outside its declared categories: add them to categories "
        "or set handle_unknown='ignore' (all-zero block)"
    )
    assert "train's --categories" in text
    assert "--categories" in set(options(SUBCOMMANDS["train"]))
    assert "--categories" not in set(options(SUBCOMMANDS["predict"]))
