"""Estimated against actual cost in words, the same in the HTML report and the explorer: each row of
reports.run_costs (docs/cost.md#estimated-against-actual) as the text a reader sees (an estimate with its range
beside the actual figure, "unpriced" for a model with no price, never $0, and whether the actual fell inside the
range), the totals over all rows, and the sentences that explain the table."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

DASH = "\u2013"
UNPRICED = "unpriced"
NO_ESTIMATE = "no estimate"
SHOWN = ("model", "role", "calls_est", "calls_actual", "calls_mark", "tokens_est", "tokens_actual")
SHOWN_USD = ("usd_est", "usd_actual", "usd_mark")
LABELS = {
    "calls_est": "estimated calls [low-high]",
    "calls_actual": "actual calls",
    "calls_mark": "calls in range",
    "tokens_est": "estimated tokens",
    "tokens_actual": "actual tokens",
    "usd_est": "estimated USD [low-high]",
    "usd_actual": "actual USD",
    "usd_mark": "USD in range",
}
ABOUT = (
    "What `eyt plan` estimated the latest `eyt run` would spend, kept before its runs, beside what the ledger "
    "recorded while it ran: per model and role, the network calls, their tokens (prompt and completion) and their "
    "USD; cache hits cost nothing and embedded baselines make no network call, so neither has a row. Each estimate "
    "has its range [lowest-highest], and the marks say whether the actual figure fell inside it. A model with no "
    "price in the slate is shown as unpriced, never as $0, and is left out of the USD totals."
)
UNFORESEEN = (
    "A row with no estimate holds calls the plan does not foresee: a role it does not estimate (a SpeechEQ item "
    "generator, say), or anything else that called the same models while the command ran."
)
SEQUENTIAL = (
    "The slate uses the sequential design: the estimate is the full design's (every target playing all N "
    "ChatSEEDs), an upper bound, and the design stopped earlier, so the actual figures fall below it by what "
    'stopping saved (see the "Stopped when settled" section).'
)
EMPTY = "No `eyt run` has kept an estimate in this data directory"


def count(value: object) -> str:
    """A whole number with thousands separated; an en dash when there is none."""
    number = _float(value)
    return DASH if number is None else f"{number:,.0f}"


def dollars(value: object) -> str:
    """'$12.34' from $1 up, '$0.0123' below (estimates of small runs are cents); an en dash when there is none."""
    number = _float(value)
    if number is None:
        return DASH
    return f"${number:,.2f}" if abs(number) >= 1 else f"${number:.4f}"


def ranged(mid: object, low: object, high: object, words: Callable[[object], str] = count) -> str:
    """'120 [100-140]' (an en dash between the ends)."""
    return f"{words(mid)} [{words(low)}{DASH}{words(high)}]"


def mark(actual: object, low: object, high: object) -> str:
    """'in range', 'above the range', 'below the range', or an en dash when there is no range."""
    value, lo, hi = _float(actual), _float(low), _float(high)
    if value is None or lo is None or hi is None:
        return DASH
    return "above the range" if value > hi else "below the range" if value < lo else "in range"


def row_words(row: Mapping[str, Any]) -> dict[str, str]:
    """One model and role as the reader sees it."""
    estimated = _float(row.get("est_calls")) is not None
    priced = _float(row.get("est_usd")) is not None
    if not estimated:
        usd_est, usd_actual = NO_ESTIMATE, dollars(row.get("actual_usd"))
    elif priced:
        usd_est = ranged(row.get("est_usd"), row.get("est_usd_low"), row.get("est_usd_high"), dollars)
        usd_actual = dollars(row.get("actual_usd"))
    else:
        usd_est = usd_actual = UNPRICED
    return {
        "model": str(row.get("model")),
        "role": str(row.get("role")),
        "calls_est": ranged(row.get("est_calls"), row.get("est_calls_low"), row.get("est_calls_high"))
        if estimated
        else NO_ESTIMATE,
        "calls_actual": count(row.get("actual_calls")),
        "calls_mark": mark(row.get("actual_calls"), row.get("est_calls_low"), row.get("est_calls_high")),
        "tokens_est": count(row.get("est_tokens")) if estimated else NO_ESTIMATE,
        "tokens_actual": count(row.get("actual_tokens")),
        "usd_est": usd_est,
        "usd_actual": usd_actual,
        "usd_mark": mark(row.get("actual_usd"), row.get("est_usd_low"), row.get("est_usd_high")) if priced else DASH,
    }


def total_words(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The totals: the estimates summed over the rows that have one (USD over the priced ones), the actual figures
    over every row (calls no estimate foresaw included; an unpriced model's USD left out)."""
    estimated = [r for r in rows if _float(r.get("est_calls")) is not None]
    priced = [r for r in estimated if _float(r.get("est_usd")) is not None]
    spent = [r for r in rows if _float(r.get("est_calls")) is None or _float(r.get("est_usd")) is not None]
    calls = [_sum(estimated, f"est_calls{s}") for s in ("", "_low", "_high")]
    usd = [_sum(priced, f"est_usd{s}") for s in ("", "_low", "_high")]
    actual_calls, actual_usd = _sum(rows, "actual_calls"), _sum(spent, "actual_usd")
    return {
        "model": "total",
        "role": "",
        "calls_est": ranged(calls[0], calls[1], calls[2]),
        "calls_actual": count(actual_calls),
        "calls_mark": mark(actual_calls, calls[1], calls[2]) if estimated else DASH,
        "tokens_est": count(_sum(estimated, "est_tokens")),
        "tokens_actual": count(_sum(rows, "actual_tokens")),
        "usd_est": ranged(usd[0], usd[1], usd[2], dollars) if priced else UNPRICED,
        "usd_actual": dollars(actual_usd) if spent else UNPRICED,
        "usd_mark": mark(actual_usd, usd[1], usd[2]) if priced else DASH,
    }


def unpriced_models(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The models with an estimate but no price, sorted."""
    return sorted(
        {
            str(r.get("model"))
            for r in rows
            if _float(r.get("est_calls")) is not None and _float(r.get("est_usd")) is None
        }
    )


def estimated_at(rows: Iterable[Mapping[str, Any]]) -> str:
    """When the estimate was made (the rows share it); an en dash when no row says."""
    found = sorted({str(r.get("estimated_at")) for r in rows if _has(r)})
    return ", ".join(found) or DASH


def sequential(rows: Iterable[Mapping[str, Any]]) -> bool:
    return any(r.get("sequential") is True or str(r.get("sequential")).lower() in {"true", "1"} for r in rows)


def _has(row: Mapping[str, Any]) -> bool:
    value = row.get("estimated_at")
    return value is not None and str(value) not in {"", "nan", "NaT", "<NA>", "None"}


def _sum(rows: Iterable[Mapping[str, Any]], column: str) -> float:
    return sum(_float(r.get(column)) or 0.0 for r in rows)


def _float(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value))
    except ValueError:
        return None
    return number if math.isfinite(number) else None
