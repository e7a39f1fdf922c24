"""The spend caps at the moment of a call: before a request goes to the network, the ledger says whether a cap
(eyt_dagster/core/budget.py) still allows it; once one is reached, the call is not sent (BudgetSpentError) and its
item stops, marked as stopped by budget.

Every process reads the same ledger (the call cache's, SQLite or Postgres), so the caps hold across runs and
processes. A guard keeps each model's running totals and reads only the ledger rows written since its last look
(a range scan of the ledger's primary key); every RECOUNT_S it counts the whole ledger again, which heals a row
another process committed out of id order (Postgres assigns ids before commit). Calls already sent when a cap is
reached finish and are paid: a cap can be passed by at most the calls in flight at that moment."""

from __future__ import annotations

import threading
import time

from eyt_dagster.core.budget import Budget, Spent
from eyt_dagster.core.errors import BudgetSpentError
from resources.models.call_cache import CallCache

RECOUNT_S = 10.0
# The run tag that carries a command's --max-cost to its runs: the ledger total (USD, of the slate's models) at which
# they stop calling (resources/models/model_access.py reads it when a run starts).
SPEND_LIMIT_TAG = "eyt/spend_limit_usd"


class SpendGuard:
    """The caps of one slate over one call cache, for every client of the process."""

    def __init__(self, cache: CallCache, budget: Budget) -> None:
        self.cache = cache
        self.budget = budget
        self._lock = threading.Lock()
        self._by_model: dict[str, Spent] = {}
        self._last_id = 0
        self._counted_at = float("-inf")

    def spent(self) -> dict[str, Spent]:
        """Each model id's network calls and USD so far, from the ledger as it is now."""
        with self._lock:
            if time.monotonic() - self._counted_at >= RECOUNT_S:
                self._by_model, self._last_id = {}, 0
                self._counted_at = time.monotonic()
            self._last_id, rows = self.cache.paid_since(self._last_id)
            for model_id, cost, calls in rows:
                self._by_model[model_id] = self._by_model.get(model_id, Spent()).plus(Spent(cost, calls))
            return dict(self._by_model)

    def admit(self, model_id: str, purpose: str) -> None:
        """Return when a new call of `model_id` may be sent; raise BudgetSpentError when a cap forbids it."""
        reason = self.budget.refusal(model_id, self.spent())
        if reason is not None:
            raise BudgetSpentError(model_id, purpose, reason)
