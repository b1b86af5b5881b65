"""Former module paths of the certificates keep working for one release.

``objpert.certify.exact`` (now :mod:`objpert.certify.theorem_c13`) and
``objpert.certify.lop`` (now :mod:`objpert.certify.peers.kifer`) import, warn
(DeprecationWarning) and expose the same objects; ``from objpert.certify import exact``
is the new module itself, without a warning.
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings

import pytest

import objpert.certify
from objpert.certify import theorem_c13
from objpert.certify.peers import kifer

MOVED = {
    "objpert.certify.exact": "objpert.certify.theorem_c13",
    "objpert.certify.lop": "objpert.certify.peers.kifer",
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_path_warns_and_exposes_the_same_objects(old, new, monkeypatch):
    moved = importlib.import_module(new)
    monkeypatch.delitem(sys.modules, old, raising=False)
    monkeypatch.setattr(objpert.certify, "exact", objpert.certify.exact)  # put back after
    with pytest.warns(DeprecationWarning, match=re.escape(f"{old} is deprecated")):
        shim = importlib.import_module(old)
    assert (shim.__doc__ or "").startswith("Deprecated")
    assert list(shim.__all__) == list(moved.__all__)
    for name, value in vars(moved).items():
        if not name.startswith("__"):
            assert getattr(shim, name) is value, name


def test_the_exact_attribute_is_theorem_c13_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from objpert.certify import exact

    assert exact is theorem_c13
    assert "theorem_c13" in objpert.certify.__all__


def test_the_kifer_constants_are_reexported_by_the_peers():
    from objpert.certify import peers

    for name in kifer.__all__:
        assert getattr(peers, name) is getattr(kifer, name)
