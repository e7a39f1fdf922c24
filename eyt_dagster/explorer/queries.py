"""The explorer's questions to the warehouse: the leaderboard, the dialogues of one cell (sorted, filtered and
paginated) and one dialogue with everything stored about it. Plain SQL over the views of `reads.Warehouse`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

from eyt_dagster.explorer.failures import FAILURES, HIGH_DRIFT_QUANTILE
from eyt_dagster.explorer.personas import LENGTH
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.eyt_bench import shown_figures
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from resources.storage.warehouse_files import SCHEMA_FILE

PAGE_SIZE = 50

# The leaderboard's headline columns, in the order shown, and the dialogue_scores column each cell's dialogues
# are sorted by when it is followed (the per-dialogue quantity its mean or share is made of).
HEADLINE: dict[str, str] = {
    "n_dialogues": "seed_id",
    "n_errors": "seed_id",
    "explicit_acc": "explicit_correct",
    "latent_acc": "latent_correct",
    "emotion_acc": "emotion_correct",
    "emotion_macro_f1": "emotion_correct",
    "drift": "drift",
    "ficr": "completed",
    "satisfaction": "satisfaction",
    "empathy": "empathy",
    "persona": "persona",
    "anthropomorphic": "anthropomorphic",
    "mean_turns": "n_turns",
}
# The dialogue list's columns from dialogue_scores, each one a sort key.
SCORE_COLUMNS = (
    "n_turns",
    "explicit_correct",
    "latent_correct",
    "emotion_correct",
    "drift",
    "directional_alignment",
    "completed",
    "satisfaction",
    "empathy",
    "persona",
    "anthropomorphic",
    "n_failed_verdicts",
    "n_failed_final_verdicts",
)
SORT_KEYS = ("seed_id", *SCORE_COLUMNS)
LABELS = ("explicit_intent", "latent_intent", "emotion")


def leaderboard(wh: Warehouse) -> pd.DataFrame:
    """dialogue.leaderboard, one row per target x pool."""
    return wh.query(["dialogue.leaderboard"], "SELECT * FROM leaderboard ORDER BY pool, target")


def judge_corrected(wh: Warehouse) -> pd.DataFrame:
    """dialogue.judge_corrected's rows (eyt_bench/shown_figures.py reads them); no rows when the warehouse has no
    such table (one written before it existed)."""
    if not any(not f.endswith(SCHEMA_FILE) for f in wh.files(shown_figures.TABLE)):
        return pd.DataFrame()
    return wh.query([shown_figures.TABLE], "SELECT * FROM judge_corrected ORDER BY pool, target, metric")


def baseline_flags(wh: Warehouse) -> dict[str, bool]:
    """target -> is_baseline, as the leaderboard stores it (targets it has no row of are left out)."""
    board = wh.query(["dialogue.leaderboard"], "SELECT DISTINCT target, is_baseline FROM leaderboard")
    return {str(t): bool(b) for t, b in zip(board["target"], board["is_baseline"])}


def targets(wh: Warehouse) -> list[str]:
    """Every target with dialogue turns, longest id first (so a path's target prefix is found unambiguously)."""
    found = wh.partition_values("dialogue.dialogue_turns", "target")  # the folder names, when they tell
    if found is None:
        rows = wh.query(["dialogue.dialogue_turns"], "SELECT DISTINCT target FROM dialogue_turns")
        found = set(map(str, rows["target"]))
    return sorted(found, key=lambda t: (-len(t), t))


@dataclass(frozen=True)
class DialoguePage:
    rows: pd.DataFrame  # one page of dialogues with their scores and failure flags
    total: int  # dialogues matching the filter
    page: int
    pages: int
    high_drift: float | None  # the cell's drift threshold of the "high intent drift" filter


_CELL_DIALOGUES = f"""
WITH turns AS (SELECT * FROM dialogue_turns WHERE target = $target AND pool = $pool),
scores AS (SELECT * FROM dialogue_scores WHERE target = $target AND pool = $pool),
verdicts AS (
    SELECT seed_id, count(*) FILTER (WHERE error IS NOT NULL) AS failed FROM judge_verdicts
    WHERE target = $target AND pool = $pool GROUP BY seed_id
    UNION ALL
    SELECT seed_id, count(*) FILTER (WHERE error IS NOT NULL) FROM final_intent_verdicts
    WHERE target = $target AND pool = $pool GROUP BY seed_id
),
per_dialogue AS (
    SELECT seed_id,
        bool_or(turn = 0 AND error IS NOT NULL) AS dialogue_error,
        bool_or(NOT complete) AS incomplete,
        bool_or(turn > 0 AND gold_emotion IS DISTINCT FROM pred_emotion) AS wrong_emotion,
        max(error_kind) AS error_kind,
        max(error_role) AS error_role
    FROM turns GROUP BY seed_id
),
audit AS (
    SELECT seed_id, bool_or(flagged) AS flagged, max(simulator_flags) AS simulator_flags FROM simulator_audit
    WHERE target = $target AND pool = $pool GROUP BY seed_id
),
threshold AS (SELECT quantile_cont(drift, {HIGH_DRIFT_QUANTILE}) AS high FROM scores)
SELECT d.seed_id, {", ".join(f"s.{c}" for c in SCORE_COLUMNS)},
    d.incomplete, d.wrong_emotion, d.error_kind, d.error_role,
    coalesce(s.completed = false, false) AS not_completed,
    coalesce(s.drift >= threshold.high, false) AS high_drift,
    d.dialogue_error OR coalesce((SELECT sum(failed) FROM verdicts v WHERE v.seed_id = d.seed_id), 0) > 0
        AS error_rows,
    threshold.high AS high_drift_threshold,
    coalesce(a.flagged, false) AS simulator_flagged, a.simulator_flags
FROM per_dialogue d LEFT JOIN scores s USING (seed_id) LEFT JOIN audit a USING (seed_id), threshold
"""
CELL_TABLES = (
    "dialogue.simulator_audit",
    "dialogue.chat_seeds",
    "dialogue.persona_pool",
    "dialogue.dialogue_turns",
    "dialogue.dialogue_scores",
    "dialogue.judge_verdicts",
    "dialogue.final_intent_verdicts",
)


def cell_dialogues(
    wh: Warehouse,
    target: str,
    pool: str,
    sort: str = "seed_id",
    descending: bool = False,
    failure: str = "",
    page: int = 1,
    persona: tuple[str, str] | None = None,
) -> DialoguePage:
    """The dialogues of one target x pool cell: every seed with a dialogue_turns row (finished or not), its
    dialogue_scores row (none for an unfinished dialogue) and which failure kinds it shows; `sort` is one of
    SORT_KEYS, `failure` a key of FAILURES or empty, `persona` a (key, value) of the ChatSEED's persona
    (explorer/personas.py: checked against the pool's values before it gets here); PAGE_SIZE per page."""
    if sort not in SORT_KEYS:
        raise ValueError(f"unknown sort column '{sort}'; the columns are {', '.join(SORT_KEYS)}")
    if failure and failure not in FAILURES:
        raise ValueError(f"unknown failure kind '{failure}'; the kinds are {', '.join(FAILURES)}")
    conditions = [failure] if failure else []
    order = f"{sort} {'DESC' if descending else 'ASC'} NULLS LAST, seed_id"
    params = {"target": target, "pool": pool}
    persons = ""
    if persona is not None:
        key, value = persona
        params["persona_value"] = value
        column = "p.length_bucket"
        if key != LENGTH:
            params["persona_path"] = "$." + json.dumps(key)
            column = "json_extract_string(p.attributes, $persona_path)"
        persons = (
            ", who AS (SELECT c.seed_id FROM chat_seeds c JOIN persona_pool p ON p.persona_id = c.persona_id "
            f"AND p.pool = c.pool WHERE c.pool = $pool AND {column} = $persona_value)"
        )
        conditions.append("seed_id IN (SELECT seed_id FROM who)")
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    with wh.sql(CELL_TABLES, {"target": target, "pool": pool}) as con:
        base = f"WITH cell AS ({_CELL_DIALOGUES}){persons} SELECT * FROM cell {where}"
        total = int(_one(con, f"SELECT count(*) FROM ({base})", params))
        pages = max(1, -(-total // PAGE_SIZE))
        page = min(max(1, page), pages)
        rows = con.execute(f"{base} ORDER BY {order} LIMIT {PAGE_SIZE} OFFSET {(page - 1) * PAGE_SIZE}", params).df()
        high = _one(
            con,
            f"SELECT quantile_cont(drift, {HIGH_DRIFT_QUANTILE}) FROM dialogue_scores "
            "WHERE target = $target AND pool = $pool",
            {"target": target, "pool": pool},
        )
    return DialoguePage(rows, total, page, pages, None if high is None or pd.isna(high) else float(high))


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, str]) -> Any:
    """The single value an aggregate query returns."""
    row = con.execute(sql, params).fetchone()
    assert row is not None  # an aggregate always returns one row
    return row[0]


@dataclass(frozen=True)
class Dialogue:
    target: str
    pool: str
    seed_id: str
    seed: dict[str, Any] | None  # the chat_seeds row: persona, topic, initial labels, final intent
    turns: list[dict[str, Any]]  # answered turns in order, each with its intent similarity and verdicts
    error: dict[str, Any] | None  # the turn-0 row of a dialogue that failed
    finals: list[dict[str, Any]]  # one final_intent_verdicts row per judge
    scores: dict[str, Any] | None  # the dialogue_scores row
    simulator_flags: str | None = None  # the simulator audit's flags ("" clean, None not audited)


DIALOGUE_TABLES = (
    "dialogue.simulator_audit",
    "dialogue.chat_seeds",
    "dialogue.dialogue_turns",
    "dialogue.intent_similarity",
    "dialogue.judge_verdicts",
    "dialogue.final_intent_verdicts",
    "dialogue.dialogue_scores",
)


def dialogue(wh: Warehouse, target: str, seed_id: str) -> Dialogue | None:
    """Everything the warehouse holds about one dialogue, or None when the target has no turns of that seed."""
    return dialogues(wh, [target], seed_id).get(target)


def dialogues(wh: Warehouse, targets: list[str], seed_id: str) -> dict[str, Dialogue]:
    """target -> its dialogue of `seed_id`, for each of `targets` that has one: one query per table over those
    targets' partitions, however many targets there are."""
    key = {"targets": list(targets), "seed_id": seed_id}
    with wh.sql(DIALOGUE_TABLES, {"target": targets}) as con:

        def rows(table: str, order: str) -> dict[str, list[dict[str, Any]]]:
            sql = f"SELECT * FROM {table} WHERE list_contains($targets, target) AND seed_id = $seed_id ORDER BY {order}"
            out: dict[str, list[dict[str, Any]]] = {}
            for r in con.execute(sql, key).df().to_dict("records"):
                out.setdefault(str(r["target"]), []).append(plain(r))
            return out

        turns = rows("dialogue_turns", "turn")
        if not turns:
            return {}
        seeds = [
            plain(r)
            for r in con.execute("SELECT * FROM chat_seeds WHERE seed_id = $seed_id", {"seed_id": seed_id})
            .df()
            .to_dict("records")
        ]
        similarity = rows("intent_similarity", "turn")
        verdicts = rows("judge_verdicts", "turn, judge")
        finals = rows("final_intent_verdicts", "judge")
        scores = rows("dialogue_scores", "seed_id")
        audits = rows("simulator_audit", "turn")
    found = {}
    for target in targets:
        if target not in turns:
            continue
        pool = str(turns[target][0]["pool"])
        seed = next((r for r in seeds if r["pool"] == pool), None)
        found[target] = _dialogue(
            target,
            pool,
            seed_id,
            seed,
            turns[target],
            similarity.get(target, []),
            verdicts.get(target, []),
            finals.get(target, []),
            scores.get(target, []),
            audits.get(target, []),
        )
    return found


def _dialogue(
    target: str,
    pool: str,
    seed_id: str,
    seed: dict[str, Any] | None,
    turns: list[dict[str, Any]],
    similarity: list[dict[str, Any]],
    verdicts: list[dict[str, Any]],
    finals: list[dict[str, Any]],
    scores: list[dict[str, Any]],
    audits: list[dict[str, Any]] | None = None,
) -> Dialogue:
    by_turn = {int(s["turn"]): s for s in similarity}
    audited = {int(a["turn"]): a for a in audits or []}
    answered = []
    for t in (t for t in turns if t["turn"] > 0):
        n = int(t["turn"])
        labels = [(f, t[f"gold_{f}"], t[f"pred_{f}"], t[f"gold_{f}"] == t[f"pred_{f}"]) for f in LABELS]
        judged = [v for v in verdicts if int(v["turn"]) == n]
        answered.append(
            {**t, "labels": labels, "similarity": by_turn.get(n), "verdicts": judged, "audit": audited.get(n)}
        )
    error = next((t for t in turns if t["turn"] == 0), None)
    flags = str((audits or [{}])[0].get("simulator_flags") or "") if audits else None
    return Dialogue(target, pool, seed_id, seed, answered, error, finals, scores[0] if scores else None, flags)


def subscores(verdict: dict[str, Any]) -> list[tuple[str, Any]]:
    """A judge_verdicts row's 15 sub-indicators in the rubric's order (paper §3.5.3)."""
    return [(c, verdict.get(c)) for c in SUBSCORE_COLUMNS]


def plain(row: dict[str, Any]) -> dict[str, Any]:
    """Missing values (NaN, NA, NaT) as None, so templates test them one way."""
    return {k: (None if _missing(v) else v) for k, v in row.items()}


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists and arrays
        return False
