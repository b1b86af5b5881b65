"""The worked examples of docs/pipeline.md run as written (so they cannot rot)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from objpert.exceptions import PrivacyLeakWarning

DOC = Path(__file__).resolve().parents[2] / "docs" / "pipeline.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_pipeline_examples_run_and_certify(capsys):
    blocks = _blocks()
    assert len(blocks) == 3
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing read from the data
        exec(compile(blocks[0], str(DOC), "exec"), namespace)
        public_model, public_cert = namespace["model"], namespace["certificate"]
        exec(compile(blocks[1], str(DOC), "exec"), namespace)
        exec(compile(blocks[2], str(DOC), "exec"), namespace)  # the search of the pipeline
    assert public_cert.epsilon == 1.0 and public_cert.delta <= 1e-6
    assert public_cert.not_public == ()
    assert public_model[-1].pipeline_data_norm_ == pytest.approx(2.0)
    cert = namespace["certificate"]
    assert cert.method == "basic" and cert.epsilon == pytest.approx(1.0) and cert.epsilon <= 1.0
    frame, churned = namespace["frame"], namespace["churned"]
    majority = max(np.mean(churned), 1 - np.mean(churned))
    assert public_model.score(frame, churned) > majority
    printed = capsys.readouterr().out.split("\n")
    assert printed[0] == "2.0"
    assert "True" in printed  # the chosen pipeline's certificate is the search's
