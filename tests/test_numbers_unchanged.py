"""Every number of a run stays what it was: the warehouse the pipeline writes (the `warehouse` fixture: the default
slate's two text baselines on two pools, the judges, the reports, SpeechEQ on one subscale) is compared with the
fingerprint kept in tests/fixtures/numbers.json, table by table and row by row (tests/support/number_fingerprint.py
says which columns are left out and the float tolerance, and why).

A change meant to save time must leave this test green. A change meant to change numbers (a prompt, a metric, a
baseline) rewrites the fingerprint on purpose, and its diff shows what moved:

    EYT_WRITE_NUMBERS=1 HF_HUB_OFFLINE=1 pytest tests/test_numbers_unchanged.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.number_fingerprint import differences, fingerprint, read, write

pytestmark = pytest.mark.materialisation

NUMBERS = Path(__file__).resolve().parent / "fixtures" / "numbers.json"


def test_the_numbers_of_a_run_are_the_fingerprint(warehouse):
    con, _ = warehouse
    found = fingerprint(con)
    if os.environ.get("EYT_WRITE_NUMBERS"):
        write(NUMBERS, found)
        pytest.skip(f"wrote {NUMBERS} ({len(found)} tables); review its diff before committing it")
    assert NUMBERS.exists(), f"{NUMBERS} is missing: write it with EYT_WRITE_NUMBERS=1 (see this module's docstring)"
    expected = read(NUMBERS)
    assert len(expected) >= 20 and sum(len(t["rows"]) for t in expected.values()) > 500  # a real warehouse
    assert differences(expected, found) == []
