"""Estimated against actual cost: what `eyt plan` said a command would spend, per model and role, beside what the
ledger recorded while it ran (its network calls; cache hits cost nothing). Pure logic over the plan's JSON lines and
ledger rows (docs/cost.md#estimated-against-actual)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

# Where `eyt run` keeps the estimate it made before its runs, under the data directory (reports/run_costs reads it).
ESTIMATE_FILE = PurePosixPath("cost") / "estimate.json"

COMPARISON_COLUMNS = (
    "model",
    "role",
    "est_calls",
    "est_calls_low",
    "est_calls_high",
    "actual_calls",
    "est_tokens",
    "actual_tokens",
    "est_usd",
    "est_usd_low",
    "est_usd_high",
    "actual_usd",
    "calls_in_range",
    "usd_in_range",
)


def actual_by_role(ledger: Iterable[Mapping[str, Any]], after_id: int) -> dict[tuple[str, str], dict[str, float]]:
    """Per (model id, role): the network calls, tokens (prompt + completion) and USD of the ledger rows after
    `after_id` (what happened since the estimate was made)."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in ledger:
        if int(row["id"]) <= after_id or row["cached"]:
            continue
        got = out.setdefault((str(row["model_id"]), str(row["role"])), {"calls": 0.0, "tokens": 0.0, "usd": 0.0})
        got["calls"] += 1
        got["tokens"] += float(row["tokens_in"] or 0) + float(row["tokens_out"] or 0)
        got["usd"] += float(row["cost_usd"] or 0.0)
    return out


def comparison_rows(
    lines: Sequence[Mapping[str, Any]],
    actual: Mapping[tuple[str, str], Mapping[str, float]],
    priced: Collection[str] = (),
) -> list[dict[str, Any]]:
    """One row per model and role the plan named or the ledger recorded: the estimate (mid, low, high) beside the
    actual figures, and whether the actual calls and USD fell inside the estimate's range. An embedded baseline's line
    is left out (it makes no network call); an unpriced model's USD is missing (None), never 0 (a row the plan did not
    foresee has USD only for a model of `priced`)."""
    rows = []
    seen = set()
    for line in lines:
        if line.get("embedded"):
            continue
        key = (str(line["model"]), str(line["role"]))
        seen.add(key)
        got = actual.get(key, {"calls": 0.0, "tokens": 0.0, "usd": 0.0})
        calls = line["calls"]
        usd = line["usd"] if isinstance(line["usd"], Mapping) else None
        rows.append(
            {
                "model": key[0],
                "role": key[1],
                "est_calls": calls["mid"],
                "est_calls_low": calls["low"],
                "est_calls_high": calls["high"],
                "actual_calls": got["calls"],
                "est_tokens": line["tokens_in"]["mid"] + line["tokens_out"]["mid"],
                "actual_tokens": got["tokens"],
                "est_usd": usd["mid"] if usd else None,
                "est_usd_low": usd["low"] if usd else None,
                "est_usd_high": usd["high"] if usd else None,
                "actual_usd": got["usd"] if usd else None,
                "calls_in_range": calls["low"] <= got["calls"] <= calls["high"],
                "usd_in_range": (usd["low"] <= got["usd"] <= usd["high"]) if usd else None,
            }
        )
    for key, got in sorted(actual.items()):
        if key in seen:
            continue
        rows.append(  # calls the plan did not foresee (a role it does not estimate, e.g. SpeechEQ's item build)
            {
                "model": key[0],
                "role": key[1],
                **dict.fromkeys(("est_calls", "est_calls_low", "est_calls_high", "est_tokens"), None),
                **dict.fromkeys(("est_usd", "est_usd_low", "est_usd_high"), None),
                "actual_calls": got["calls"],
                "actual_tokens": got["tokens"],
                "actual_usd": got["usd"] if key[0] in priced else None,  # an unpriced model's calls are not $0
                "calls_in_range": None,
                "usd_in_range": None,
            }
        )
    return rows


# The table contract of reports.run_costs (eyt_dagster/table_registry.py): the comparison, then when the estimate was
# made and whether the sequential design played (its estimate is the full design's, an upper bound).
RUN_COSTS_COLUMNS: dict[str, str] = {
    "model": "string",
    "role": "string",
    **{c: "float64" for c in COMPARISON_COLUMNS if c.startswith(("est_", "actual_"))},
    "calls_in_range": "boolean",
    "usd_in_range": "boolean",
    "estimated_at": "string",
    "sequential": "bool",
    "created_at": "datetime64[ns]",
}
