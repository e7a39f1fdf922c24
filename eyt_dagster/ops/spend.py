"""Spend caps at the command line (docs/cost.md#spend-caps): `--max-cost` on `eyt run` and `eyt refresh`, the
lines that say which caps apply and what is spent, and what a command spent. The caps themselves are checked by
every run before each call (resources/models/spend_guard.py); this only reads the ledger and tags the runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from eyt_dagster.core.budget import Budget, Spent, caps_lines, check_cost_limit, reached_lines, usd
from eyt_dagster.core.model_ref import unpriced_under_cap
from eyt_dagster.slate import Slate
from resources.models.cache_backend import CacheBackend
from resources.models.call_reads import open_call_reads
from resources.models.spend_guard import SPEND_LIMIT_TAG


class SpendError(ValueError):
    """A cap given on the command line cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class CommandBudget:
    """The caps of one command: the slate's, with the command's --max-cost limit; the ledger's spend when it began."""

    budget: Budget
    before: dict[str, Spent]

    @property
    def run_tags(self) -> dict[str, str]:
        """The tags that carry the command's limit to every run it launches."""
        limit = self.budget.limit_usd
        return {SPEND_LIMIT_TAG: repr(limit)} if limit is not None else {}

    def start_lines(self) -> list[str]:
        """What the command prints before it runs anything: the caps, and any already reached."""
        lines = [f"spend cap: {line}" for line in caps_lines(self.budget, self.before)]
        reached = reached_lines(self.budget, self.before)
        if reached:
            lines.append(
                "budget spent, so no call of these models will be made (their work stops by budget; raise the cap "
                "to carry on):\n  " + "\n  ".join(reached)
            )
        return lines

    def fit_line(self, usd_figure: Mapping[str, float]) -> str | None:
        """Whether a plan's USD (mid, low, high) fits what the slate's USD cap leaves, or None without such a cap."""
        cap = self.budget.slate_cap
        if cap is None or cap.max_cost_usd is None:
            return None
        left = max(cap.max_cost_usd - self.budget.slate_spent(self.before).cost_usd, 0.0)
        low, high = usd_figure["low"], usd_figure["high"]
        verdict = "fits" if high <= left else "does not fit" if low > left else "may not fit"
        return (
            f"budget: the plan's {usd(usd_figure['mid'])} [{usd(low)}-{usd(high)}] {verdict} in the {usd(left)} the "
            "slate's budget.max_cost_usd leaves (unpriced models not counted); at the cap the run stops by budget"
        )

    def end_line(self, after: dict[str, Spent]) -> str:
        """What the command's runs (and any run beside them) added to the ledger for the slate's models."""
        before, now = self.budget.slate_spent(self.before), self.budget.slate_spent(after)
        return (
            f"spent while this command ran: {usd(now.cost_usd - before.cost_usd)} in {now.calls - before.calls} "
            f"network call(s) (the slate's models in all: {usd(now.cost_usd)})"
        )


def spent_by_model(data_dir: str, backend: CacheBackend) -> dict[str, Spent]:
    """Each model id's network calls in the ledger of `data_dir`."""
    with open_call_reads(data_dir, backend) as reads:
        return {model_id: Spent(cost, calls) for model_id, (cost, calls) in reads.paid_by_model().items()}


def command_budget(slate: Slate, max_cost: float | None, data_dir: str, backend: CacheBackend) -> CommandBudget:
    """The caps a command runs under: the slate's, and `--max-cost` as a limit on the ledger's total (what the slate's
    models had spent when the command began, plus the amount). A limit that is not a positive amount, or an unpriced
    remote model under it, is refused (SpendError)."""
    budget = slate.spend_budget()
    before = spent_by_model(data_dir, backend)
    if max_cost is None:
        return CommandBudget(budget, before)
    try:
        check_cost_limit(max_cost)
    except ValueError as exc:
        raise SpendError(str(exc)) from None
    for ref in slate.chat_models():
        if not ref.is_baseline and not ref.is_priced:
            raise SpendError(unpriced_under_cap(ref.id, "--max-cost"))
    limit = budget.slate_spent(before).cost_usd + max_cost
    return CommandBudget(budget.with_limit(limit), before)
