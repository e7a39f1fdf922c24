"""Where a cell's judges disagree: per judged turn, the spread (largest minus smallest score over the judges that
answered) of each of the 15 sub-indicators (0-1) and of each dimension's sum (0-5, paper §3.5.3), the turns with
the widest spread first. A turn counts when two or more judges answered it; a judge whose call failed is left
out, as the benchmark leaves it out. Beside the judges: their combination on that turn (turn_dimension_scores,
what the human alignment of Table 15 compares) and, when dialogue.human_annotations scores the turn, the mean
over its annotators (human_alignment.human_means)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.explorer.queries import PAGE_SIZE, plain
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.eyt_bench import human_alignment
from eyt_dagster.eyt_bench.dialogue_scoring import ok_rows, turn_dimension_scores
from eyt_dagster.eyt_bench.human_alignment import human_means
from eyt_dagster.eyt_bench.metrics import dimension_sums
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS

DIMENSIONS = human_alignment.DIMENSIONS  # the dimensions humans score, on the judge's 0-5 scale
LARGEST = "largest"  # the widest dimension spread, ties broken by the widest sub-indicator spread
SORTS = (LARGEST, *DIMENSIONS, *SUBSCORE_COLUMNS)
TABLES = ("dialogue.judge_verdicts", "dialogue.dialogue_scores", "dialogue.human_annotations")


@dataclass(frozen=True)
class JudgeTurns:
    judges: list[str]  # every judge with a verdict in the cell (failed ones too)
    combine: str  # how the cell's judges are combined (dialogue_scores.judge_combine)
    rows: list[dict[str, Any]]  # one page of turns, each with its spreads, verdicts, combination, human scores
    total: int  # turns two or more judges answered
    page: int
    pages: int
    has_human: bool  # dialogue.human_annotations holds rows of this cell


def disagreements(wh: Warehouse, target: str, pool: str, sort: str = LARGEST, page: int = 1) -> JudgeTurns:
    """The judged turns of one target x pool cell, widest spread first (by `sort`: LARGEST, a dimension or a
    sub-indicator), PAGE_SIZE a page. ValueError for an unknown sort."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort '{sort}'; the spreads are {', '.join(SORTS)}")
    params = {"target": target, "pool": pool}
    with wh.sql(TABLES, params) as con:
        verdicts = con.execute(
            "SELECT * FROM judge_verdicts WHERE target = $target AND pool = $pool ORDER BY seed_id, turn, judge", params
        ).df()
        how = con.execute(
            "SELECT any_value(judge_combine) FROM dialogue_scores WHERE target = $target AND pool = $pool", params
        ).fetchone()
        annotations = con.execute(
            "SELECT * FROM human_annotations WHERE target = $target AND pool = $pool", params
        ).df()
    combine = str(how[0]) if how and how[0] is not None else "mean"
    judges = sorted(map(str, verdicts["judge"].dropna().unique()))
    spreads = turn_spreads(verdicts)
    ordered = _order(spreads, sort)
    total = len(ordered)
    pages = max(1, -(-total // PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = ordered.iloc[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    rows = _rows(shown, verdicts, annotations, combine)
    return JudgeTurns(judges, combine, rows, total, page, pages, not annotations.empty)


def turn_spreads(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per (seed_id, turn) that two or more judges answered: n_judges, each sub-indicator's and each
    dimension's spread (max - min over those judges), the widest of each kind and the sub-indicator it is."""
    columns = ["seed_id", "turn", "n_judges", *DIMENSIONS, *SUBSCORE_COLUMNS]
    ok = ok_rows(verdicts)
    if ok.empty:
        return pd.DataFrame(columns=[*columns, "largest_dimension", "largest_subscore", "widest_subscore"])
    scores = pd.concat(
        [ok[["seed_id", "turn", "judge", *SUBSCORE_COLUMNS]], dimension_sums(ok)[list(DIMENSIONS)]], axis=1
    )
    grouped = scores.groupby(["seed_id", "turn"])
    values = [*DIMENSIONS, *SUBSCORE_COLUMNS]
    spread = (grouped[values].max() - grouped[values].min()).astype(float)
    spread.insert(0, "n_judges", grouped["judge"].nunique())
    spread = spread[spread["n_judges"] > 1].reset_index()
    spread["largest_dimension"] = spread[list(DIMENSIONS)].max(axis=1)
    spread["largest_subscore"] = spread[list(SUBSCORE_COLUMNS)].max(axis=1)
    spread["widest_subscore"] = (
        spread[list(SUBSCORE_COLUMNS)].fillna(-1.0).idxmax(axis=1) if len(spread) else pd.Series(dtype=str)
    )
    return spread


def _order(spreads: pd.DataFrame, sort: str) -> pd.DataFrame:
    by = ["largest_dimension", "largest_subscore"] if sort == LARGEST else [sort]
    return spreads.sort_values(
        [*by, "seed_id", "turn"], ascending=[False] * len(by) + [True, True], na_position="last", kind="stable"
    )


def _rows(shown: pd.DataFrame, verdicts: pd.DataFrame, annotations: pd.DataFrame, combine: str) -> list[dict[str, Any]]:
    """The page's turns with every judge's verdict (its dimension sums, rationale, error), the judges' combination
    and the human mean (the annotations are the cell's own)."""
    if shown.empty:
        return []
    wanted = verdicts.merge(shown[["seed_id", "turn"]], on=["seed_id", "turn"])
    ok = ok_rows(wanted)
    sums = pd.concat([ok[["seed_id", "turn", "judge"]], dimension_sums(ok)[list(DIMENSIONS)]], axis=1)
    by_judge = {(r["seed_id"], int(r["turn"]), r["judge"]): r for r in sums.to_dict("records")}
    combined = {(r["seed_id"], int(r["turn"])): r for r in turn_dimension_scores(wanted, combine).to_dict("records")}
    human: dict[tuple[str, int], dict[str, Any]] = {}
    if not annotations.empty:
        means = human_means(annotations).reset_index()
        human = {(r["seed_id"], int(r["turn"])): plain(r) for r in means.to_dict("records")}
    per_turn: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for v in map(plain, wanted.to_dict("records")):
        cell = (v["seed_id"], int(v["turn"]))
        judged = by_judge.get((*cell, v["judge"])) if v["error"] is None else None
        per_turn.setdefault(cell, []).append(
            {
                "judge": v["judge"],
                "dimensions": {d: None if judged is None else float(judged[d]) for d in DIMENSIONS},
                "rationale": v.get("rationale"),
                "error": v.get("error"),
            }
        )
    rows = []
    for r in map(plain, shown.to_dict("records")):
        cell = (r["seed_id"], int(r["turn"]))
        both = combined.get(cell)
        people = human.get(cell)
        rows.append(
            {
                **r,
                "verdicts": per_turn.get(cell, []),
                "combined": {d: None if both is None else float(both[d]) for d in DIMENSIONS},
                "human": None if people is None else {d: people[d] for d in DIMENSIONS},
            }
        )
    return rows
