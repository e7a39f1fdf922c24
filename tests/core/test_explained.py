"""core.explained: the difference of two explained numbers keeps both operands' arithmetic under their names, then
subtracts their values, the number a table stores as left - right, on hand-computed values."""

from __future__ import annotations

import math

import pytest

from eyt_dagster.core.explained import Explained, Step, explained_difference

pytestmark = pytest.mark.unit


def test_a_difference_shows_both_operands_then_the_subtraction():
    left = Explained("Acc1", 5 / 8, (Step("items right", "5 / 8", 5 / 8),), ("a shared note", "left's own"))
    right = Explained("Acc2", 1.0, (Step("items right", "8 / 8", 1.0),), ("a shared note",))
    found = explained_difference("amnesia", left, right, ("positive: round 1 better",))
    assert found.value == 5 / 8 - 1 == -0.375
    assert [(s.label, s.arithmetic, s.result) for s in found.steps] == [
        ("Acc1: items right", "5 / 8", 0.625),
        ("Acc2: items right", "8 / 8", 1.0),
        ("Acc1 - Acc2", "0.625 - 1", -0.375),
    ]
    assert found.notes == ("a shared note", "left's own", "positive: round 1 better")  # each once
    negative = explained_difference("d", Explained("a", 0.5), Explained("b", -0.25))
    assert negative.steps[-1].arithmetic == "0.5 - (-0.25)" and negative.value == 0.75
    missing = explained_difference("d", Explained("a", float("nan")), right)
    assert math.isnan(missing.number()) and missing.steps[-1].arithmetic == "missing - 1"
