"""The command-line side of spend caps (eyt_dagster/ops/spend.py): the lines a command prints, on hand-made figures."""

import pytest

from eyt_dagster.core.budget import Budget, SpendCap, Spent
from eyt_dagster.ops.spend import CommandBudget
from resources.models.spend_guard import SPEND_LIMIT_TAG

pytestmark = pytest.mark.unit

SLATE = frozenset({"a", "b"})


def test_a_plan_fits_may_not_fit_or_does_not_fit_what_the_cap_leaves():
    spend = CommandBudget(
        Budget(SLATE, SpendCap(max_cost_usd=10.0)), {"a": Spent(3.0, 1), "b": Spent(1.0, 1)}
    )  # $6 left
    assert "$5.00 [$3.00-$5.50] fits in the $6.00" in spend.fit_line({"mid": 5.0, "low": 3.0, "high": 5.5})
    assert "may not fit in the $6.00" in spend.fit_line({"mid": 5.0, "low": 3.0, "high": 8.0})
    assert "does not fit in the $6.00" in spend.fit_line({"mid": 8.0, "low": 7.0, "high": 9.0})
    assert CommandBudget(Budget(SLATE, SpendCap(max_calls=5)), {}).fit_line({"mid": 1, "low": 1, "high": 1}) is None


def test_a_command_limit_travels_as_a_run_tag_and_the_end_line_says_what_the_command_added():
    spend = CommandBudget(Budget(SLATE).with_limit(4.5), {"a": Spent(4.0, 10), "other": Spent(9.0, 9)})
    assert spend.run_tags == {SPEND_LIMIT_TAG: "4.5"}
    assert CommandBudget(Budget(SLATE), {}).run_tags == {}
    line = spend.end_line({"a": Spent(4.25, 12), "b": Spent(0.25, 1), "other": Spent(99.0, 99)})
    assert line == "spent while this command ran: $0.5000 in 3 network call(s) (the slate's models in all: $4.50)"
    assert spend.start_lines() == ["spend cap: --max-cost: the slate's models stop at $4.50 in the ledger (now $4.00)"]
