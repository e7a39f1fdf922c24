"""EYT-Bench's table contracts (docs/method.md), pure functions over a table's rows: each says whether it holds
and a few facts for the UI. Dagster wiring: assets/eyt_bench/checks.py."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from eyt_dagster.core.table_checks import SHOW, Verdict
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.unfinished import allowed_unfinished, cell_completion, enough_finished


def dialogues_within_t_max(turns: pd.DataFrame, t_max: int) -> Verdict:
    """No dialogue runs beyond T_max turns (Algorithm 1's hard stop)."""
    over = turns[turns["turn"] > t_max] if len(turns) else turns
    ids = sorted(over["seed_id"].unique())[:SHOW] if len(over) else []
    longest = int(turns["turn"].max()) if len(turns) else 0
    return Verdict(
        over.empty,
        f"longest dialogue: {longest} turn(s); T_max = {t_max}",
        {"longest": longest, "t_max": t_max, "over_t_max": ", ".join(ids)},
    )


def enough_finished_dialogues(turns: pd.DataFrame, max_fraction: float) -> Verdict:
    """At least one dialogue of the cell finished and at most `max_fraction` of them (the slate's
    max_unfinished_fraction) did not; the description names the unfinished ones' failures by role and kind."""
    done = cell_completion(turns)
    allowed = allowed_unfinished(done.played, max_fraction)
    text = f"{done.finished} of {done.dialogues} dialogues finished"
    if done.dialogues == 0:
        text += " (no usable ChatSEED: see dialogue.chat_seeds.error)"
    if done.stopped_by_budget:
        text += (
            f"; {done.stopped_by_budget} stopped by budget (not played, not failed: a run under a higher cap "
            "plays them)"
        )
    text += f"; at most {allowed} may be unfinished (max_unfinished_fraction {max_fraction:g})"
    if done.failures:
        text += f"; unfinished: {done.failures}"
    passed = enough_finished(done, max_fraction)
    if not passed and done.dialogues:
        text += (
            "; see dialogue.dialogue_turns.error, fix the cause and rerun the partition (finished calls come "
            "from the call cache)"
        )
    return Verdict(
        passed,
        text,
        {
            "dialogues": done.dialogues,
            "finished": done.finished,
            "unfinished": done.unfinished,
            "stopped_by_budget": done.stopped_by_budget,
            "allowed_unfinished": allowed,
            "failures": done.failures,
        },
    )


CUT_REPLIES_WARN_SHARE = 0.05  # a cell whose share of target replies cut at max_tokens is above this warns


def few_cut_replies(turns: pd.DataFrame) -> Verdict:
    """At most CUT_REPLIES_WARN_SHARE of the target's replies in the cell were cut at max_tokens (a cut text reply is
    used as it is, so its scores judge a truncated answer)."""
    answered = turns[turns["turn"] > 0] if len(turns) else turns
    n = len(answered)
    cut = int(answered["target_cut_replies"].fillna(0).sum()) if n and "target_cut_replies" in answered else 0
    share = cut / n if n else 0.0
    passed = share <= CUT_REPLIES_WARN_SHARE
    text = f"{cut} of {n} target replies cut at max_tokens ({share:.0%}; warns above {CUT_REPLIES_WARN_SHARE:.0%})"
    if not passed:
        text += "; raise max_tokens for the target in the slate: a cut reply is used, and judged, as it is"
    return Verdict(passed, text, {"replies": n, "cut_replies": cut, "cut_share": share})


def subscores_in_scale(verdicts: pd.DataFrame, scale: Iterable[float]) -> Verdict:
    """Every judge sub-score is a value of the judge scale (missing only on error rows)."""
    allowed = sorted(set(scale))
    columns = [c for c in SUBSCORE_COLUMNS if c in verdicts.columns]
    scored = verdicts[verdicts["error"].isna()] if "error" in verdicts.columns else verdicts
    bad = {c: int((~scored[c].isin(allowed)).sum()) for c in columns}
    bad = {c: n for c, n in bad.items() if n}
    return Verdict(
        not bad,
        f"sub-scores outside {allowed}: {sum(bad.values())}",
        {"allowed": str(allowed), "columns_with_bad_values": ", ".join(sorted(bad))},
    )
