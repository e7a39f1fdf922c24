"""Spend caps (eyt_dagster/core/budget.py): which cap forbids a call, checked against hand-made ledger totals."""

import math

import pytest
from pydantic import ValidationError

from eyt_dagster.core.budget import Budget, SpendCap, Spent, cap_reached, caps_lines, check_cost_limit, reached_lines

pytestmark = pytest.mark.unit

SLATE = frozenset({"sim", "target-a", "judge"})


def test_a_cap_is_reached_at_its_amount_or_its_calls_whichever_first():
    cap = SpendCap(max_cost_usd=1.0, max_calls=10)
    assert cap_reached(Spent(0.99, 9), cap, "x") is None
    assert "max_cost_usd $1.00 reached ($1.00 spent)" in cap_reached(Spent(1.0, 3), cap, "x")
    assert "max_calls 10 reached (10 calls made)" in cap_reached(Spent(0.1, 10), cap, "x")


@pytest.mark.parametrize("bad", [{"max_cost_usd": 0}, {"max_cost_usd": -2.5}, {"max_calls": 0}, {"max_call": 3}])
def test_a_cap_of_zero_or_below_or_an_unknown_field_is_refused(bad):
    with pytest.raises(ValidationError):
        SpendCap(**bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan])
def test_a_command_limit_must_be_positive(bad):
    with pytest.raises(ValueError, match="--max-cost must be a positive amount"):
        check_cost_limit(bad)
    assert check_cost_limit(0.01) == 0.01


def test_the_slate_cap_sums_the_slate_models_only_and_a_model_cap_holds_its_model_alone():
    budget = Budget(SLATE, SpendCap(max_cost_usd=2.0), {"judge": SpendCap(max_calls=5)})
    spent = {"sim": Spent(0.5, 40), "target-a": Spent(1.0, 20), "judge": Spent(0.2, 5), "other-slate": Spent(9.0, 1)}
    assert budget.slate_spent(spent) == Spent(1.7, 65)  # 0.5 + 1.0 + 0.2: another slate's model is not counted
    assert budget.refusal("sim", spent) is None
    assert "model 'judge' budget.max_calls 5 reached" in budget.refusal("judge", spent)
    assert budget.refusal("other-slate", spent) is None  # not this slate's
    spent["target-a"] = Spent(1.3, 21)  # 0.5 + 1.3 + 0.2 = 2.0
    assert "the slate's budget.max_cost_usd $2.00 reached ($2.00 spent)" in budget.refusal("sim", spent)


def test_a_command_limit_is_on_the_ledger_total_of_the_slate_models():
    budget = Budget(SLATE).with_limit(1.25)  # e.g. $1.00 spent when the command began, --max-cost 0.25
    assert budget.active and not Budget(SLATE).active
    assert budget.refusal("target-a", {"target-a": Spent(1.2, 3)}) is None
    assert "--max-cost reached" in budget.refusal("target-a", {"target-a": Spent(1.0, 3), "sim": Spent(0.25, 9)})


def test_the_lines_name_each_cap_and_what_is_spent_against_it():
    budget = Budget(SLATE, SpendCap(max_cost_usd=2.0, max_calls=100), {"judge": SpendCap(max_calls=5)}, 3.0)
    spent = {"judge": Spent(0.25, 5), "sim": Spent(0.5, 1)}
    assert caps_lines(budget, spent) == [
        "the slate's budget: $2.00 and 100 calls; spent $0.7500 in 6 call(s)",
        "model 'judge' budget: 5 calls; spent $0.2500 in 5 call(s)",
        "--max-cost: the slate's models stop at $3.00 in the ledger (now $0.7500)",
    ]
    assert reached_lines(budget, spent) == ["model 'judge': model 'judge' budget.max_calls 5 reached (5 calls made)"]
