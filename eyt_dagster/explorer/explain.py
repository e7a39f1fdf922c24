"""The arithmetic the pages show beside their numbers (templates/explain.html): each explanation is computed by the
domain function whose value the warehouse stores (eyt_bench.dialogue_scoring, metrics, leaderboard, analysis;
speech_eq.seq_tables, seq), from the rows the stored number was made of. When the two differ, the rows changed
after the number was stored (a rerun that has not reached the later tables yet), and the page says so."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.core.errors import failures_line
from eyt_dagster.core.explained import Explained, Figure, Step, agrees, figure
from eyt_dagster.explorer.queries import Dialogue
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.eyt_bench import analysis, judge_correction, leaderboard, metrics
from eyt_dagster.eyt_bench.dialogue_scoring import (
    KEYS,
    answered_turns,
    explained_dimension_scores,
    explained_final_verdicts,
)
from eyt_dagster.eyt_bench.encoder_calibration import CALIBRATIONS
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.eyt_bench.unfinished import error_rows
from eyt_dagster.speech_eq import seq_tables
from eyt_dagster.speech_eq.seq import explained_seq
from resources.storage.warehouse_files import as_path

CELL = ["target", "pool"]


@dataclass(frozen=True)
class Line:
    """One step as a page writes it."""

    label: str
    arithmetic: str
    result: str  # empty for a step without a value


@dataclass(frozen=True)
class Shown:
    """An explanation beside the stored number it explains."""

    label: str
    value: str  # the explanation's value, written as the steps write numbers
    lines: tuple[Line, ...]
    notes: tuple[str, ...]
    stored: str  # the stored number, written the same way
    agrees: bool  # the stored number is the explanation's value


def shown(explained: Explained, stored: Any) -> Shown:
    lines = tuple(Line(s.label, s.arithmetic, "" if s.result is None else figure(s.result)) for s in explained.steps)
    return Shown(
        explained.label,
        figure(explained.value),
        lines,
        explained.notes,
        figure(stored),
        agrees(stored, explained.value),
    )


# -- one dialogue ------------------------------------------------------------------------------------------------


# The dialogue page's numbers that come with their arithmetic (`dialogue`'s keys, dialogue_scores columns).
DIALOGUE_NUMBERS = ("completed", "satisfaction", "empathy", "persona", "anthropomorphic", "drift")


def dialogue(d: Dialogue) -> dict[str, Shown]:
    """The dialogue page's numbers (its dialogue_scores row), each explained from the dialogue's own rows:
    completed and satisfaction from the final verdicts, drift from the turns' intent similarity, each dimension from
    the turn verdicts, with the alpha and judge_combine the row was computed with. Empty for a dialogue that did not
    finish (no dialogue_scores row)."""
    scores = d.scores
    if scores is None or not d.turns:
        return {}
    n_turns = max(int(t["turn"]) for t in d.turns)
    out = judged(scores, d.finals, [v for t in d.turns for v in t["verdicts"]], n_turns)
    similar = [t for t in d.turns if t.get("similarity")]
    if similar:
        model = str(similar[0]["similarity"].get("embedding_model") or "")
        calibration = CALIBRATIONS.get(model)
        drift = metrics.explained_intent_drift(
            pd.Series([float(t["similarity"]["cos_gold_pred"]) for t in similar]),
            calibration if calibration is not None and calibration.drift_scale != 1.0 else None,
            turns=[int(t["turn"]) for t in similar],
            texts=[(str(t.get("gold_intent_description")), str(t.get("pred_intent_description"))) for t in similar],
        )
        out["drift"] = shown(drift, scores.get("drift"))
    return out


def judged(
    scores: dict[str, Any], finals: list[dict[str, Any]], verdicts: list[dict[str, Any]], n_turns: int
) -> dict[str, Shown]:
    """A dialogue's numbers that its judges' verdicts make (its dialogue_scores row `scores`), each explained from
    its rows as score_dialogues computes them with the row's alpha and judge_combine: completed and satisfaction
    from its final verdicts, each dimension from its turn verdicts at T = `n_turns`."""
    alpha = scores.get("alpha")
    combine = str(scores.get("judge_combine") or "mean")
    out: dict[str, Shown] = {}
    final = _frame(finals, {"completed": "boolean", "satisfaction": "Int64"})
    if len(final):
        completed, satisfaction = explained_final_verdicts(final, combine)
        out["completed"] = shown(completed, scores.get("completed"))
        out["satisfaction"] = shown(satisfaction, scores.get("satisfaction"))
    turns = _frame(verdicts, {"turn": "int64", **dict.fromkeys(SUBSCORE_COLUMNS, "float64")})
    if alpha is not None and not pd.isna(alpha) and len(turns):
        for name, explained in explained_dimension_scores(turns, n_turns, float(alpha), combine).items():
            out[name] = shown(explained, scores.get(name))
    return out


def _frame(rows: list[dict[str, Any]], dtypes: dict[str, str]) -> pd.DataFrame:
    """Rows as the pipeline reads them (missing values as NaN / NA, numbers as numbers)."""
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    if "error" not in frame.columns:
        frame["error"] = None
    return frame.astype({c: t for c, t in dtypes.items() if c in frame.columns})


# -- the leaderboard ---------------------------------------------------------------------------------------------

BOARD_TABLES = (
    "dialogue.dialogue_scores",
    "dialogue.dialogue_turns",
    "dialogue.leaderboard_intervals",
    "dialogue.simulator_audit",
)


def leaderboard_cells(wh: Warehouse, rows: Iterable[dict[str, Any]], metrics_shown: Iterable[str]) -> dict[str, Shown]:
    """Each shown leaderboard number, keyed '<target>|<pool>|<metric>', explained from the cell's dialogue_scores rows
    by the function the leaderboard's value is (leaderboard.explained_metric; metrics.explained_macro_f1_by over the
    answered turns for emotion_macro_f1), followed by which dialogues were left out and why, how many the simulator
    audit flagged (they count), and how the cell's interval was drawn (dialogue.leaderboard_intervals)."""
    wanted = list(rows)
    if not wanted:
        return {}
    names = tuple(metrics_shown)
    explained = _board_explanations(wh, names)
    out: dict[str, Shown] = {}
    for row in wanted:
        for metric in names:
            found = explained.get((str(row["target"]), str(row["pool"]), metric))
            if found is not None:
                out[f"{row['target']}|{row['pool']}|{metric}"] = shown(found, row.get(metric))
    return out


# The leaderboard's explanations per version of the files they were read from: (metrics, each file's path, size,
# modification time and inode) -> (target, pool, metric) -> Explained. A file is written once and replaced by a rename,
# so a partition a run writes is a new key, and an unchanged warehouse is not read again for every page.
_BOARD: dict[tuple[Any, ...], dict[tuple[str, str, str], Explained]] = {}
_BOARD_MAX = 8


def _board_explanations(wh: Warehouse, names: tuple[str, ...]) -> dict[tuple[str, str, str], Explained]:
    versions = []
    for table in BOARD_TABLES:
        for name in wh.files(table):
            try:
                st = as_path(name).stat()
            except FileNotFoundError:  # replaced since it was listed: the next page reads it
                continue
            versions.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
    key = (names, tuple(versions))
    found = _BOARD.get(key)
    if found is None:
        found = _compute_board(wh, names)
        if len(_BOARD) >= _BOARD_MAX:
            _BOARD.clear()
        _BOARD[key] = found
    return found


def _compute_board(wh: Warehouse, names: tuple[str, ...]) -> dict[tuple[str, str, str], Explained]:
    columns = ", ".join(dict.fromkeys([*KEYS, *leaderboard.AGGREGATE_COLUMNS]))
    with wh.sql(BOARD_TABLES) as con:
        scores = con.execute(f"SELECT {columns} FROM dialogue_scores ORDER BY target, pool, seed_id").df()
        turns = con.execute(
            "SELECT target, pool, seed_id, turn, error, error_role, error_kind, complete, gold_emotion, pred_emotion "
            "FROM dialogue_turns ORDER BY target, pool, seed_id, turn"
        ).df()
        intervals = con.execute("SELECT * FROM leaderboard_intervals").df()
        flagged = con.execute(
            "SELECT target, pool, count(DISTINCT seed_id) AS n FROM simulator_audit WHERE flagged GROUP BY target, pool"
        ).df()
    by_cell = {key: cell for key, cell in scores.groupby(CELL, sort=False)}
    answered = answered_turns(turns)
    f1 = metrics.explained_macro_f1_by(answered, CELL, "gold_emotion", "pred_emotion") if len(answered) else {}
    errors = error_rows(turns)
    errors_by_cell = {key: cell for key, cell in errors.groupby(CELL, sort=False)}
    spans = {(r["target"], r["pool"], r["metric"]): r for r in intervals.to_dict("records")}
    flags = {(r["target"], r["pool"]): int(r["n"]) for r in flagged.to_dict("records")}
    out: dict[tuple[str, str, str], Explained] = {}
    for key in dict.fromkeys([*by_cell, *errors_by_cell]):
        target, pool = str(key[0]), str(key[1])
        cell = by_cell.get(key, scores.iloc[0:0])
        unfinished = errors_by_cell.get(key, errors.iloc[0:0])
        left = _left_out(unfinished, flags.get(key, 0))
        for metric in names:
            explained = _cell_number(metric, cell, f1.get(key), unfinished)
            if explained is None:
                continue
            span = spans.get((target, pool, metric))
            extra = _interval(metric, span) if span is not None else ()
            notes = left if metric not in ("n_dialogues", "n_errors") else ()
            out[(target, pool, metric)] = explained.then(*extra, notes=notes)
    return out


def _cell_number(
    metric: str, cell: pd.DataFrame, macro_f1: Explained | None, unfinished: pd.DataFrame
) -> Explained | None:
    if metric in leaderboard.AGGREGATED:
        if cell.empty:
            return Explained(metric, float("nan"), (Step("no dialogue of this cell finished: missing"),))
        return leaderboard.explained_metric(cell, metric)
    if metric == "emotion_macro_f1":
        return macro_f1 or Explained("emotion macro-F1", float("nan"), (Step("no answered turn: missing"),))
    if metric == "n_dialogues":
        said = Step("finished dialogues: one dialogue_scores row each", "", len(cell))
        return Explained("finished dialogues", len(cell), (said,))
    if metric == "n_errors":
        why = failures_line(unfinished) or "none"
        said = Step(
            "dialogues a failed call stopped before they ended (their dialogue_turns error row)", why, len(unfinished)
        )
        return Explained("unfinished dialogues", len(unfinished), (said,))
    return None


def _left_out(unfinished: pd.DataFrame, flagged: int) -> tuple[str, ...]:
    notes = []
    if len(unfinished):
        notes.append(
            f"not counted: {len(unfinished)} unfinished dialogue(s) ({failures_line(unfinished)}): a call failed before "
            "the dialogue ended, so no metric reads it"
        )
    if flagged:
        notes.append(
            f"counted: {flagged} dialogue(s) the simulator audit flagged; dialogue.simulator_audit_effect gives the "
            "metrics without them"
        )
    return tuple(notes)


def _interval(metric: str, span: dict[str, Any]) -> tuple[Step, ...]:
    seed = span.get("seed")
    return analysis.explained_interval(
        metric,
        int(span["n_dialogues"]),
        int(span["resamples"]),
        None if seed is None or pd.isna(seed) else int(seed),
        float(span["ci_low"]) if not pd.isna(span["ci_low"]) else float("nan"),
        float(span["ci_high"]) if not pd.isna(span["ci_high"]) else float("nan"),
    )


# -- judge-made numbers corrected by human labels -----------------------------------------------------------------

CORRECTED_TABLES = (
    "dialogue.dialogue_scores",
    "dialogue.human_annotations",
    "dialogue.judge_verdicts",
    "dialogue.leaderboard_intervals",
    "dialogue.judge_corrected",
)


@dataclass(frozen=True)
class CorrectedCell:
    """One target x pool's dialogue.judge_corrected rows (by metric) and each corrected number explained."""

    rows: dict[str, dict[str, Any]]  # metric -> the stored row
    explained: dict[str, Shown]  # metric -> corrected_mean with its arithmetic


def corrected(wh: Warehouse, target: str, pool: str) -> CorrectedCell:
    """The corrected estimates of one cell (corrected_cells of that cell alone)."""
    return corrected_cells(wh, [(target, pool)])[(target, pool)]


def corrected_cells(wh: Warehouse, cells: Iterable[tuple[str, str]]) -> dict[tuple[str, str], CorrectedCell]:
    """Each (target, pool) cell's corrected estimates (dialogue.judge_corrected), each explained from the cell's rows
    by the function the table is made with (judge_correction.cell_corrections: the human and judge per-dialogue
    values, then PredictionPoweredMean.explained), at the alpha the cell's dialogue_scores rows were computed with.
    Which figure the table shows, and why, is read from the stored row. A cell with no dialogue_scores row has its
    stored rows and no explanation. The tables are read once for all the cells."""
    wanted = sorted(set(cells))
    if not wanted:
        return {}
    params = {"targets": sorted({t for t, _ in wanted}), "pools": sorted({p for _, p in wanted})}
    where = "WHERE target IN $targets AND pool IN $pools"
    with wh.sql(CORRECTED_TABLES, {"target": params["targets"], "pool": params["pools"]}) as con:
        scores = con.execute(f"SELECT * FROM dialogue_scores {where} ORDER BY seed_id", params).df()
        annotations = con.execute(f"SELECT * FROM human_annotations {where}", params).df()
        verdicts = con.execute(f"SELECT target, pool, seed_id, turn, error FROM judge_verdicts {where}", params).df()
        intervals = con.execute(f"SELECT * FROM leaderboard_intervals {where}", params).df()
        stored = con.execute(f"SELECT * FROM judge_corrected {where}", params).df()

    def of(frame: pd.DataFrame, target: str, pool: str) -> pd.DataFrame:
        return frame[(frame["target"] == target) & (frame["pool"] == pool)]

    out = {}
    for target, pool in wanted:
        rows = {str(r["metric"]): r for r in of(stored, target, pool).to_dict("records")}
        mine = of(scores, target, pool)
        alphas = mine["alpha"].dropna() if "alpha" in mine.columns else pd.Series(dtype=float)
        if mine.empty or alphas.empty:
            out[(target, pool)] = CorrectedCell(rows, {})
            continue
        found = judge_correction.cell_corrections(
            mine,
            of(annotations, target, pool),
            of(verdicts, target, pool),
            of(intervals, target, pool),
            alpha=float(alphas.iloc[0]),
            min_human_labels=None,
        )
        explained = {}
        for cell in found:
            row = rows.get(cell.metric)
            if row is None:
                note = "dialogue.judge_corrected has no row of this cell and metric yet (the reports run writes it)"
            else:
                why = str(row.get("why") or "")
                note = f"shown: {row.get('shown')}" + (f" ({why})" if why else "")
            explained[cell.metric] = shown(cell.explained().then(notes=(note,)), (row or {}).get("corrected_mean"))
        out[(target, pool)] = CorrectedCell(rows, explained)
    return out


# -- SpeechEQ ----------------------------------------------------------------------------------------------------

SPEECH_TABLES = ("speech.slm_choices", "speech.seq_leaderboard")
SPEECH_NUMBERS = ("acc1", "acc2", "acc_traj", "seq")


@dataclass(frozen=True)
class SpeechCell:
    """A target's SEQ leaderboard row under one persona condition, each number explained."""

    condition: str
    stored: dict[str, Figure]
    explained: dict[str, Shown]


def speech(wh: Warehouse, target: str) -> list[SpeechCell]:
    """`target`'s rows of speech.seq_leaderboard, one per condition: Acc1, Acc2 and Acc_traj (and the contextual
    amnesia and the direct columns) explained from its slm_choices rows (seq_tables.cell_items, direct_items,
    explained_checks), SEQ from its Acc_traj and the cohort members' (seq.explained_seq), as the table was computed.
    Empty when the table has no row of the target."""
    with wh.sql(SPEECH_TABLES, {"target": target}) as con:
        choices = con.execute("SELECT * FROM slm_choices WHERE target = $target", {"target": target}).df()
    return _speech_cells(_seq_board(wh), choices, target)


def speech_board(wh: Warehouse, targets: Sequence[str], condition: str) -> dict[str, dict[str, Shown]]:
    """`speech` for every target of the SEQ leaderboard under one condition, the tables read once: per target,
    its explained numbers."""
    with wh.sql(SPEECH_TABLES) as con:
        choices = con.execute("SELECT * FROM slm_choices WHERE condition = $c", {"c": condition}).df()
    board = _seq_board(wh)
    return {
        target: cell.explained
        for target in targets
        for cell in _speech_cells(board, choices[choices["target"] == target], target)
        if cell.condition == condition
    }


# The slm_choices columns a cell's accuracies are computed from (seq_tables.cell_items, direct_items).
ACCURACY_COLUMNS = ("target", "item_id", "subscale", "composite", "condition", "inference", "order", "round")
_ACCURACY_SELECT = ", ".join(f'"{c}"' for c in (*ACCURACY_COLUMNS, "correct", "error"))


def speech_subscale(
    wh: Warehouse, slug: str, condition: str, rows: Iterable[dict[str, Any]]
) -> dict[str, dict[str, Shown]]:
    """The numbers of each target's speech.seq_breakdown row of one subscale (`rows`) under one condition, explained
    from the target's slm_choices rows as seq_tables.seq_breakdown computes them: the cell's items under its
    headline inference mode (seq_tables.cell_items, which reads all the cell's rows to choose the mode) and under
    direct inference, those of the subscale kept, then explained_checks (Acc1, Acc2, Acc_traj, the contextual
    amnesia, Acc2 under direct inference and its difference from the headline Acc2). Per target, its explained
    numbers."""
    found = _subscale_cells(wh, condition, {(slug, str(r["target"])): r for r in rows})
    return {target: numbers for (_, target), numbers in found.items()}


def speech_subscales(
    wh: Warehouse, condition: str, subscales: Iterable[dict[str, Any]]
) -> dict[str, dict[str, dict[str, Shown]]]:
    """`speech_subscale` for every subscale row of the SEQ leaderboard's per-subscale table (seq.Board.subscales:
    each with its targets' seq_breakdown rows), the choices read once: per subscale, per target, its numbers."""
    stored = {(str(s["slug"]), target): row for s in subscales for target, row in s["targets"].items()}
    out: dict[str, dict[str, dict[str, Shown]]] = {}
    for (slug, target), numbers in _subscale_cells(wh, condition, stored).items():
        out.setdefault(slug, {})[target] = numbers
    return out


def _subscale_cells(
    wh: Warehouse, condition: str, stored: dict[tuple[str, str], dict[str, Any]]
) -> dict[tuple[str, str], dict[str, Shown]]:
    """Per (subscale, target) of `stored` (its seq_breakdown row, or the columns of it a page shows), each stored
    number that explained_checks gives, explained from the target's choices under `condition`."""
    targets = sorted({target for _, target in stored})
    if not targets:
        return {}
    with wh.sql(["speech.slm_choices"], {"target": targets}) as con:
        choices = con.execute(f"SELECT {_ACCURACY_SELECT} FROM slm_choices WHERE condition = $c", {"c": condition}).df()
    out: dict[tuple[str, str], dict[str, Shown]] = {}
    for target, cell in choices.groupby("target", sort=False):
        slugs = [slug for slug, t in stored if t == str(target)]
        if not slugs:
            continue
        _, items = seq_tables.cell_items(cell)
        direct = seq_tables.direct_items(cell)
        for slug in slugs:
            mine = items[items["subscale"].astype(str) == slug]
            mine_direct = direct[direct["subscale"].astype(str) == slug]
            if not len(mine) and not len(mine_direct):
                continue
            row = stored[(slug, str(target))]
            explained = seq_tables.explained_checks(mine, mine_direct)
            out[(slug, str(target))] = {name: shown(e, row[name]) for name, e in explained.items() if name in row}
    return out


def _seq_board(wh: Warehouse) -> pd.DataFrame:
    with wh.sql(["speech.seq_leaderboard"]) as con:
        return con.execute("SELECT * FROM seq_leaderboard ORDER BY condition, target").df()


def _speech_cells(board: pd.DataFrame, choices: pd.DataFrame, target: str) -> list[SpeechCell]:
    """`speech`'s cells of `target` from the SEQ leaderboard and the target's slm_choices rows."""
    out = []
    for row in board[board["target"] == target].to_dict("records"):
        condition = str(row["condition"])
        cell = choices[choices["condition"] == condition]
        explained: dict[str, Shown] = {}
        if len(cell):
            _, items = seq_tables.cell_items(cell)
            for name, value in seq_tables.explained_checks(items, seq_tables.direct_items(cell)).items():
                explained[name] = shown(value, row.get(name))
        cohort = board[(board["condition"] == condition) & board["in_seq_cohort"].astype(bool)]
        members = [str(t) for t in cohort["target"]]
        stored = [m for m in str(row.get("seq_cohort") or "").split(",") if m]
        if set(stored) - set(members):  # a member's row is not read (a static export's selection): no SEQ to redo
            out.append(SpeechCell(condition, {k: row.get(k) for k in SPEECH_NUMBERS}, explained))
            continue
        seq = explained_seq(float(row["acc_traj"]), cohort["acc_traj"].astype(float).tolist(), members)
        kind = str(row.get("seq_cohort_kind") or "")
        where = "a member of the cohort" if target in members else "placed on the cohort's scale, not a member"
        seq = seq.then(notes=(f"cohort: {kind or 'unknown'} ({', '.join(members) or 'nobody'}); {target} is {where}",))
        explained["seq"] = shown(seq, row.get("seq"))
        out.append(SpeechCell(condition, {k: row.get(k) for k in SPEECH_NUMBERS}, explained))
    return out
