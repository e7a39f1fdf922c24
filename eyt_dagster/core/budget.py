"""Spend caps: how much the models of a slate may cost, and whether a call may still be sent.

A cap is on what the call ledger says was paid: the network calls (never the cache hits) and their cost from the
slate's prices. The ledger is shared by every run and process of a data directory, so a cap holds across them as
the endpoint budgets do. Three caps can apply to one call (docs/cost.md#spend-caps):

* the slate's `budget` (every model of the slate together), counted over the whole ledger;
* a model's own `budget` (that model's calls alone), counted over the whole ledger;
* a command's `--max-cost` (this `eyt run` or `eyt refresh` may add at most that much), carried to its runs as a
  limit on the ledger's total: what the slate's models had spent when the command started, plus the amount.

Reaching a cap stops new calls; calls already sent finish. Pure logic: the ledger's figures are handed in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field


class SpendCap(BaseModel):
    """At most this much: USD from the slate's prices, and/or network calls (a failed call counts: it was sent)."""

    model_config = ConfigDict(extra="forbid")

    max_cost_usd: float | None = Field(default=None, gt=0, description="USD of network calls, from the prices.")
    max_calls: int | None = Field(default=None, gt=0, description="Network calls (cache hits are free).")

    @property
    def caps_cost(self) -> bool:
        return self.max_cost_usd is not None


@dataclass(frozen=True)
class Spent:
    """What the ledger says was paid: USD and network calls."""

    cost_usd: float = 0.0
    calls: int = 0

    def plus(self, other: Spent) -> Spent:
        return Spent(self.cost_usd + other.cost_usd, self.calls + other.calls)


def usd(value: float) -> str:
    """Dollars as the messages print them: cents, or four places below a dollar."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def cap_reached(spent: Spent, cap: SpendCap, name: str) -> str | None:
    """Why `cap` (called `name` in the message) allows no further call, or None while it does."""
    if cap.max_cost_usd is not None and spent.cost_usd >= cap.max_cost_usd:
        return f"{name}.max_cost_usd {usd(cap.max_cost_usd)} reached ({usd(spent.cost_usd)} spent)"
    if cap.max_calls is not None and spent.calls >= cap.max_calls:
        return f"{name}.max_calls {cap.max_calls} reached ({spent.calls} calls made)"
    return None


def check_cost_limit(value: float, flag: str = "--max-cost") -> float:
    """A command's USD limit, refused unless it is a positive number."""
    if not value > 0:  # also NaN
        raise ValueError(f"{flag} must be a positive amount in USD, got {value}; a cap of 0 or below allows no call")
    return value


@dataclass(frozen=True)
class Budget:
    """Every cap that applies to the calls of one slate: the slate-wide cap over the models it names, the per-model
    caps, and a command's limit on the ledger total of those models (`limit_usd`, absolute)."""

    slate_models: frozenset[str] = frozenset()
    slate_cap: SpendCap | None = None
    model_caps: Mapping[str, SpendCap] = field(default_factory=dict)
    limit_usd: float | None = None

    @property
    def active(self) -> bool:
        """True when some cap applies (else no call needs a check)."""
        return self.slate_cap is not None or bool(self.model_caps) or self.limit_usd is not None

    def with_limit(self, limit_usd: float | None) -> Budget:
        return Budget(self.slate_models, self.slate_cap, self.model_caps, limit_usd)

    def slate_spent(self, by_model: Mapping[str, Spent]) -> Spent:
        """What the slate's models spent together."""
        total = Spent()
        for model_id, spent in by_model.items():
            if model_id in self.slate_models:
                total = total.plus(spent)
        return total

    def refusal(self, model_id: str, by_model: Mapping[str, Spent]) -> str | None:
        """Why a new call of `model_id` may not be sent, given the ledger's spend per model id, or None."""
        own = self.model_caps.get(model_id)
        if own is not None:
            reason = cap_reached(by_model.get(model_id, Spent()), own, f"model '{model_id}' budget")
            if reason:
                return reason
        if model_id not in self.slate_models:
            return None
        together = self.slate_spent(by_model)
        if self.slate_cap is not None:
            reason = cap_reached(together, self.slate_cap, "the slate's budget")
            if reason:
                return reason
        if self.limit_usd is not None and together.cost_usd >= self.limit_usd:
            return f"the command's --max-cost reached (the slate's models at {usd(together.cost_usd)})"
        return None


def caps_lines(budget: Budget, by_model: Mapping[str, Spent]) -> list[str]:
    """One line per cap that applies: what it allows and what is spent against it."""
    lines = []
    together = budget.slate_spent(by_model)
    if budget.slate_cap is not None:
        lines.append(f"the slate's budget: {_cap_text(budget.slate_cap)}; spent {_spent_text(together)}")
    for model_id, cap in sorted(budget.model_caps.items()):
        lines.append(
            f"model '{model_id}' budget: {_cap_text(cap)}; spent {_spent_text(by_model.get(model_id, Spent()))}"
        )
    if budget.limit_usd is not None:
        lines.append(
            f"--max-cost: the slate's models stop at {usd(budget.limit_usd)} in the ledger "
            f"(now {usd(together.cost_usd)})"
        )
    return lines


def reached_lines(budget: Budget, by_model: Mapping[str, Spent]) -> list[str]:
    """For each model a cap already forbids to call: the model and why."""
    found = []
    for model_id in sorted(budget.slate_models | set(budget.model_caps)):
        reason = budget.refusal(model_id, by_model)
        if reason is not None:
            found.append(f"model '{model_id}': {reason}")
    return found


def _cap_text(cap: SpendCap) -> str:
    parts = [usd(cap.max_cost_usd)] if cap.max_cost_usd is not None else []
    parts += [f"{cap.max_calls} calls"] if cap.max_calls is not None else []
    return " and ".join(parts)


def _spent_text(spent: Spent) -> str:
    return f"{usd(spent.cost_usd)} in {spent.calls} call(s)"
