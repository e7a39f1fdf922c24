"""The comparison behind tests/test_numbers_unchanged.py: what it leaves out, and that it names what moved."""

from __future__ import annotations

import duckdb
import pytest

from support.number_fingerprint import FLOAT_TOLERANCE, VOLATILE, differences, fingerprint

pytestmark = pytest.mark.unit


def _prints(value: float, label: str = "a", created: str = "2026-01-01") -> dict:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA dialogue")
    con.execute("CREATE TABLE dialogue.t (label VARCHAR, score DOUBLE, created_at VARCHAR, source_file VARCHAR)")
    con.execute(
        "INSERT INTO dialogue.t VALUES (?, ?, ?, ?), ('b', NULL, ?, '/tmp/y')", [label, value, created, "/x", created]
    )
    return fingerprint(con)


def test_clocks_and_paths_are_left_out_and_rows_are_sorted() -> None:
    prints = _prints(0.5)
    assert prints["dialogue.t"]["columns"] == ["label", "score"]
    assert prints["dialogue.t"]["rows"] == [["a", 0.5], ["b", None]]
    assert differences(prints, _prints(0.5, created="2027-02-02")) == []
    assert {c for c in ("created_at", "run_id", "latency_s", "source_file", "wall_seconds") if VOLATILE.search(c)} == {
        "created_at",
        "run_id",
        "latency_s",
        "source_file",
        "wall_seconds",
    }
    assert not any(VOLATILE.search(c) for c in ("empathy", "cos_gold_pred", "seq", "satisfaction", "terms"))


def test_a_moved_number_is_named_and_the_tolerance_is_the_stated_one() -> None:
    base = _prints(0.5)
    assert differences(base, _prints(0.5 + FLOAT_TOLERANCE / 2)) == []
    assert differences(base, _prints(0.5 + 3 * FLOAT_TOLERANCE)) == [
        f"dialogue.t, sorted row 0, column score: 0.5 became {0.5 + 3 * FLOAT_TOLERANCE!r}"
    ]
    assert differences(base, _prints(0.5, label="c")) == [  # the rows sort anew: 'b' first now
        "dialogue.t, sorted row 0, column label: 'a' became 'b'",
        "dialogue.t, sorted row 1, column label: 'b' became 'c'",
    ]
    assert differences(base, {}) == ["dialogue.t: missing from the warehouse"]
