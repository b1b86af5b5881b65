"""The interactive examples (``>>>``) of the documentation run and print what they show."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if ">>> " in p.read_text(encoding="utf-8"))


def test_some_page_has_examples():
    assert PAGES  # the pages below are found: a rename would skip them silently


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_examples_of_a_page_print_what_it_shows(page):
    result = doctest.testfile(str(page), module_relative=False, verbose=False)
    assert result.attempted > 0 and result.failed == 0
