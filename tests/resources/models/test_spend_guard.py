"""The spend guard (resources/models/spend_guard.py) over a real call cache file: it counts only network calls, sees
what another connection (another process) writes to the ledger, and refuses the call once a cap is reached."""

import pytest

from eyt_dagster.core.budget import Budget, SpendCap, Spent
from eyt_dagster.core.errors import BudgetSpentError, failure_kind
from resources.models import spend_guard
from resources.models.call_cache import CallCache
from resources.models.spend_guard import SpendGuard

pytestmark = pytest.mark.unit


def _call(cache, model_id, cost, cached=False):
    cache.record(role="target", model_id=model_id, purpose="respond", cached=cached, cost_usd=cost, tokens_in=10)


def test_the_guard_sees_other_writers_and_stops_at_the_cap(tmp_path):
    path = tmp_path / "calls.sqlite"
    with CallCache(path) as mine, CallCache(path) as other:  # two connections: as two processes
        guard = SpendGuard(mine, Budget(frozenset({"a", "b"}), SpendCap(max_cost_usd=1.0, max_calls=4)))
        _call(mine, "a", 0.25)
        _call(other, "b", 0.5)
        _call(other, "b", 9.0, cached=True)  # a cache hit costs nothing
        _call(other, "elsewhere", 5.0)  # a model of no cap
        assert guard.spent() == {"a": Spent(0.25, 1), "b": Spent(0.5, 1), "elsewhere": Spent(5.0, 1)}
        guard.admit("a", "respond")
        _call(other, "a", 0.25)  # 1.00 in all
        with pytest.raises(
            BudgetSpentError, match=r"stopped by budget, not sent: the slate's budget.max_cost_usd"
        ) as e:
            guard.admit("b", "perceive:1")
        assert failure_kind(e.value) == "budget" and "model 'b' (perceive:1)" in str(e.value)
        guard.admit("elsewhere", "x")  # not the slate's: no cap applies to it


def test_a_recount_reads_the_whole_ledger_again(tmp_path, monkeypatch):
    with CallCache(tmp_path / "calls.sqlite") as cache:
        guard = SpendGuard(cache, Budget(frozenset({"a"}), SpendCap(max_calls=3)))
        _call(cache, "a", 0.1)
        _call(cache, "a", 0.1)
        assert guard.spent()["a"].calls == 2
        guard._by_model["a"] = Spent(0.0, 0)  # as if a row had been missed
        assert guard.spent()["a"].calls == 0  # read since the last id only
        monkeypatch.setattr(spend_guard, "RECOUNT_S", 0.0)
        assert guard.spent()["a"].calls == 2
