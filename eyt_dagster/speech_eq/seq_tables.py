"""SpeechEQ result tables (paper §2.4-2.5, §4; docs/speecheq-evaluation.md) from speech.slm_choices: the SEQ
leaderboard, the per-subscale and per-composite breakdown, and the persona conditioning table. Pure, no I/O.

Vocabulary used below:
- A *cell* is one target under one persona condition.
- A *trajectory* of an item under inference mode m (for one cell and option order) is its round-1 row and
  its round-2 row stored with inference == m. Round 1 is stored once per mode (the copy for the second mode
  has shared_call true), so filtering on the mode gives both rounds.
- The *headline* of a cell is the seeded option order under sequential inference, the paper's protocol. A
  cell that ran only direct inference falls back to it, and `headline_inference` says so.
- An item *failed* when a row of its trajectory carries an error (the call failed; `correct` is NA). A reply
  that did not parse is not a failure: it is a wrong answer. Accuracies are over *clean* items: trajectory
  complete and not failed; failed items are counted in `n_error_items`.

Decisions where the paper is silent:
- Efficiency figures (cost, latency, tokens/s, parse-failure rate) describe the calls actually made
  (shared_call false) that were answered (no error); `queries` counts every call made, failed ones too.
- Position bias compares, per item and round, the position chosen in the seeded and the flipped order under
  the headline inference mode; a round-2 pair counts only when both orders had the same turn-4 clip in the
  history (the same question), and a pair with an unparsed reply is skipped.
- SEQ in the leaderboard is relative to the cohort of its own condition: the evaluated models (end-to-end
  `audio` and `cascaded-*` targets that are not baselines), or the ids a slate names, or, when neither
  exists, the embedded baselines (`seq_cohort_kind` says which). Baselines, oracle text checks, cells that
  fell back to direct inference and chance are placed on that cohort's scale but never move it. The
  conditioning table places every condition's Acc_traj on the default condition's cohort scale, so that a
  persona's effect on one model is comparable across conditions (the reading of paper Figure 4, where a
  single model is scored under each persona). See docs/speecheq-evaluation.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core import stats
from eyt_dagster.core.explained import Explained, Step, explained_difference
from eyt_dagster.speech_eq import seq
from eyt_dagster.speech_eq.conditions import CONDITIONS, DEFAULT_CONDITION
from eyt_dagster.speech_eq.protocol import position_bias_rate
from eyt_dagster.speech_eq.seq import seq_on_scale
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALE_NAMES, SUBSCALES

CHANCE_TARGET = "chance"
HEADLINE_ORDER = "seeded"
ACCURACIES = ("acc1", "acc2", "acc_traj")

REQUIRED_COLUMNS = (
    "target",
    "item_id",
    "subscale",
    "composite",
    "condition",
    "inference",
    "order",
    "round",
    "history_turn4",
    "selected_option",
    "correct",
    "parse_failed",
    "shared_call",
    "error",
    "latency_s",
    "tokens_out",
    "cost_usd",
    "is_baseline",
    "speech_input",
    "model",
    "reply_format",
)
LEADERBOARD_COLUMNS = (
    "target",
    "condition",
    "is_baseline",
    "speech_input",
    "model",
    "reply_format",
    "headline_inference",
    "n_items",
    "n_error_items",
    "acc1",
    "acc1_low",
    "acc1_high",
    "acc2",
    "acc2_low",
    "acc2_high",
    "acc_traj",
    "acc_traj_low",
    "acc_traj_high",
    "seq",
    "seq_cohort",
    "seq_cohort_kind",
    "in_seq_cohort",
    "contextual_amnesia",
    "acc2_direct",
    "acc_traj_direct",
    "sequential_direct_delta",
    "position_bias_rate",
    "parse_failure_rate",
    "cost_per_100_queries",
    "mean_latency_s",
    "tokens_per_s",
    "queries",
)
BREAKDOWN_COLUMNS = (
    "target",
    "condition",
    "is_baseline",
    "headline_inference",
    "level",
    "name",
    "display_name",
    "composite",
    "composite_name",
    "n_items",
    "acc1",
    "acc1_low",
    "acc1_high",
    "acc2",
    "acc2_low",
    "acc2_high",
    "acc_traj",
    "acc_traj_low",
    "acc_traj_high",
    "contextual_amnesia",
    "n_items_direct",
    "acc2_direct",
    "sequential_direct_delta",
)
NAN = float("nan")
# What a condition's SEQ cohort is made of (column seq_cohort_kind), and how the table's note reads it.
COHORT_KINDS = {
    "models": "the end-to-end and cascaded models evaluated",
    "named": "the targets named in speech.evaluation.seq_cohort",
    "baselines_only": "baselines only: no model evaluated",
    "none": "no cohort: neither a model nor a baseline has clean items",
}


# ---------------------------------------------------------------------------------------------- rows -> items


def _check(choices: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in choices.columns]
    if missing:
        raise ValueError(f"slm_choices lacks column(s) {', '.join(missing)}")
    if (choices["target"] == CHANCE_TARGET).any():
        raise ValueError(f"slm_choices has a target named '{CHANCE_TARGET}', the name of the tables' chance rows")
    key = ["target", "condition", "order", "inference", "round", "item_id"]
    dup = choices.duplicated(key, keep=False)
    if dup.any():
        first = choices.loc[dup, key].iloc[0].to_dict()
        raise ValueError(
            f"slm_choices has {int(dup.sum())} rows sharing a target x condition x order x inference "
            f"x round x item key, e.g. {first}"
        )


def _failed(rows: pd.DataFrame) -> pd.Series:
    """Rows whose call failed: an error text, or no verdict at all."""
    error = rows["error"]
    has_text = error.notna() & (error.astype(str).str.strip() != "")
    return has_text | rows["correct"].isna()


def _as_float(values: pd.Series) -> pd.Series:
    """Nullable booleans as 1.0 / 0.0 / NaN."""
    return values.map(lambda v: NAN if pd.isna(v) else float(bool(v))).astype(float)


def _items(rows: pd.DataFrame, inference: str) -> pd.DataFrame:
    """One row per item of the given rows (one cell and option order) under an inference mode: subscale,
    composite, c1 and c2 (round correctness, NaN when absent or failed), failed, clean."""
    sel = rows[rows["inference"] == inference]
    if sel.empty:  # typed, so that a mask by `clean` selects no row
        kinds = {"subscale": object, "composite": object, "c1": float, "c2": float, "failed": bool, "clean": bool}
        return pd.DataFrame({c: pd.Series(dtype=k) for c, k in kinds.items()}, index=pd.Index([], name="item_id"))
    sel = sel.assign(_c=_as_float(sel["correct"]), _failed=_failed(sel))
    out = sel.groupby("item_id").agg(
        subscale=("subscale", "first"), composite=("composite", "first"), failed=("_failed", "any")
    )
    by_round = sel.pivot(index="item_id", columns="round", values="_c").reindex(index=out.index, columns=[1, 2])
    present = sel.groupby(["item_id", "round"]).size().unstack().reindex(index=out.index, columns=[1, 2]).notna()
    out["c1"], out["c2"] = by_round[1], by_round[2]
    out["clean"] = present[1] & present[2] & ~out["failed"]
    return out


def _accuracy_cis(items: pd.DataFrame, *, resamples: int, seed: int) -> dict[str, float]:
    """Acc1, Acc2, Acc_traj over the clean items (`explained_accuracies`' values), each with a percentile interval
    from resampling items. The three use the same seed and item count, hence the same resampled item sets."""
    clean = items[items["clean"]]
    c1, c2 = clean["c1"].to_numpy(dtype=float), clean["c2"].to_numpy(dtype=float)
    explained = explained_accuracies(items)
    out: dict[str, float] = {"n_items": len(clean)}
    for name, values in (("acc1", c1), ("acc2", c2), ("acc_traj", c1 * c2)):
        _, low, high = stats.bootstrap_mean_ci(values, resamples=resamples, seed=seed)
        out.update({name: explained[name].number(), f"{name}_low": low, f"{name}_high": high})
    return out


def _share(values: np.ndarray) -> float:
    """The mean of the values that are there (bootstrap_mean_ci's estimate); NaN for none."""
    x = values[~np.isnan(values)]
    return float(x.mean()) if x.size else NAN


def explained_accuracies(items: pd.DataFrame) -> dict[str, Explained]:
    """Acc1, Acc2 and Acc_traj of one cell from its items (`cell_items`), with the arithmetic: how many items were
    scored and which were left out, and the share of them with round 1, round 2 and both rounds right."""
    clean = items[items["clean"]]
    c1, c2 = clean["c1"].to_numpy(dtype=float), clean["c2"].to_numpy(dtype=float)
    n, failed = len(clean), int(items["failed"].sum()) if len(items) else 0
    unfinished = len(items) - n - failed
    notes = ["a reply that did not parse counts as a wrong answer (parse_failure_rate counts those)"]
    if failed:
        notes.append(f"{failed} item(s) left out: a call never reached the model (n_error_items)")
    if unfinished:
        notes.append(f"{unfinished} item(s) left out: a round was not asked")
    scored = Step(f"items scored: both rounds answered, no failed call ({n} of {len(items)})", "", n)
    out = {}
    for name, values, what in (
        ("acc1", c1, "round 1 (turn 4) right"),
        ("acc2", c2, "round 2 (turn 6) right"),
        ("acc_traj", c1 * c2, "both rounds right"),
    ):
        value = _share(values)
        hits = int(np.nansum(values))
        share = Step(f"items with {what}, over the items scored", f"{hits} / {n}", value, (float(hits), float(n)))
        extra = (
            ("an item counts only when both of its rounds are right: not Acc1 x Acc2",) if name == "acc_traj" else ()
        )
        out[name] = Explained(name.replace("acc", "Acc"), value, (scored, share), (*notes, *extra))
    return out


def cell_items(cell: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The headline inference mode of one cell (a target under a condition) and its items under it, in the seeded
    option order: what the leaderboard's accuracies are computed from."""
    mode = headline_inference(cell)
    return mode, _items(cell[cell["order"] == HEADLINE_ORDER], mode)


def direct_items(cell: pd.DataFrame) -> pd.DataFrame:
    """One cell's items under direct inference, in the seeded option order: what its direct columns are computed
    from (none when the cell ran only sequential inference)."""
    return _items(cell[cell["order"] == HEADLINE_ORDER], "direct")


DIRECT_NOTE = "direct inference: the resonant turn-4 clip is always in the history, whatever round 1 chose"


def explained_checks(items: pd.DataFrame, direct: pd.DataFrame) -> dict[str, Explained]:
    """`explained_accuracies` of the headline items, and the checks beside them, each with its arithmetic: Acc2 and
    Acc_traj under direct inference (`direct`: `direct_items`), the contextual amnesia Acc1 - Acc2 and direct -
    sequential Acc2 (paper Figure 3: positive = direct inference helps). The tables store these values."""
    headline = explained_accuracies(items)
    found = explained_accuracies(direct)
    out = dict(headline)
    for name in ("acc2", "acc_traj"):
        e = found[name]
        out[f"{name}_direct"] = replace(e, label=f"{e.label}, direct", notes=(*e.notes, DIRECT_NOTE))
    out["contextual_amnesia"] = explained_difference(
        "contextual amnesia (Acc1 - Acc2)",
        headline["acc1"],
        headline["acc2"],
        ("positive: the choice of round 1 (turn 4) was right more often than that of round 2 (turn 6)",),
    )
    out["sequential_direct_delta"] = explained_difference(
        "direct - sequential Acc2", out["acc2_direct"], headline["acc2"]
    )
    return out


def _checks(items: pd.DataFrame, direct: pd.DataFrame) -> dict[str, float]:
    """The direct columns, the contextual amnesia and direct - sequential Acc2 of one cell (`explained_checks`)."""
    explained = explained_checks(items, direct)
    names = ("acc2_direct", "acc_traj_direct", "contextual_amnesia", "sequential_direct_delta")
    return {"n_items_direct": int(direct["clean"].sum()), **{name: explained[name].number() for name in names}}


def headline_inference(cell: pd.DataFrame) -> str:
    """'sequential' when the cell has sequential rows, else 'direct'."""
    return "sequential" if (cell["inference"] == "sequential").any() else "direct"


def _position_bias(cell: pd.DataFrame, inference: str) -> float:
    rows = cell[(cell["inference"] == inference) & cell["selected_option"].notna()]
    if not (rows["order"] == "flipped").any():
        return NAN
    second = rows[rows["round"] == 2]
    same_history = second.groupby("item_id")["history_turn4"].nunique(dropna=False) == 1
    keep = (rows["round"] == 1) | rows["item_id"].isin(same_history.index[same_history])
    return position_bias_rate(rows.loc[keep, ["item_id", "round", "selected_option"]])


def _efficiency(cell: pd.DataFrame) -> dict[str, float]:
    """Parse failures, cost, latency and throughput over the calls made and answered (module docstring)."""
    made = cell[~cell["shared_call"].astype(bool)]
    answered = made[~_failed(made)]
    if answered.empty:
        rates = {"parse_failure_rate": NAN, "cost_per_100_queries": NAN, "mean_latency_s": NAN}
    else:
        rates = {
            "parse_failure_rate": float(answered["parse_failed"].astype(bool).mean()),
            "cost_per_100_queries": 100.0 * float(answered["cost_usd"].astype(float).mean()),
            "mean_latency_s": float(answered["latency_s"].astype(float).mean()),
        }
    generated = answered[answered["tokens_out"].fillna(0).astype(float) > 0]
    seconds = float(generated["latency_s"].astype(float).sum())
    tokens_per_s = float(generated["tokens_out"].astype(float).sum()) / seconds if seconds > 0 else NAN
    return {**rates, "tokens_per_s": tokens_per_s, "queries": len(made)}


def _meta(cell: pd.DataFrame) -> dict[str, object]:
    def first(col: str) -> object:
        values = cell[col].dropna()
        return values.iloc[0] if len(values) else None

    formats = sorted({str(v) for v in cell["reply_format"].dropna()})
    return {
        "is_baseline": bool(cell["is_baseline"].fillna(False).astype(bool).any()),
        "speech_input": first("speech_input"),
        "model": first("model"),
        "reply_format": "+".join(formats) if formats else None,
    }


def _condition_order(conditions: Iterable[object]) -> list[str]:
    """Known conditions in their declared order (default first), then any others alphabetically."""
    present = {str(c) for c in conditions}
    return [c for c in CONDITIONS if c in present] + sorted(present - set(CONDITIONS))


# ------------------------------------------------------------------------------------------------------ SEQ


def is_model_kind(speech_input: object, is_baseline: bool) -> bool:
    """An evaluated model: an end-to-end (`audio`) or cascaded target that is not an embedded baseline. The
    oracle text check reads the tone instructions, so it measures the items, not a model's hearing."""
    kind = str(speech_input) if speech_input is not None and not pd.isna(speech_input) else ""
    return not is_baseline and (kind == "audio" or kind.startswith("cascaded"))


def choose_cohort(cells: Sequence[dict[str, object]], named: Sequence[str] | None = None) -> tuple[list[str], str]:
    """The SEQ cohort of one condition's leaderboard rows and its kind (COHORT_KINDS). Only cells with clean
    items under the condition's headline inference are eligible (sequential when any cell ran it), so a
    cell that fell back to direct inference never moves the scale."""
    mode = "sequential" if any(c["headline_inference"] == "sequential" for c in cells) else "direct"
    eligible = [c for c in cells if c["headline_inference"] == mode and not pd.isna(c["acc_traj"])]
    if named is not None:
        return sorted(str(c["target"]) for c in eligible if c["target"] in set(named)), "named"
    kinds: tuple[tuple[str, Callable[[dict[str, object]], bool]], ...] = (
        ("models", lambda c: is_model_kind(str(c["speech_input"]), bool(c["is_baseline"]))),
        # the choosers that stand in for a model (the coin, the valence-matched rule); the shortcut rules are
        # reference points placed on the scale, never its members
        ("baselines_only", lambda c: bool(c["is_baseline"]) and str(c.get("model", "")) not in SHORTCUT_MODELS),
    )
    for kind, keep in kinds:
        members = sorted(str(c["target"]) for c in eligible if keep(c))
        if members:
            return members, kind
    return [], "none"


def _cohort_values(rows: pd.DataFrame) -> list[float]:
    """Acc_traj of the cohort members among one condition's leaderboard rows."""
    return rows.loc[rows["in_seq_cohort"].astype(bool), "acc_traj"].astype(float).tolist()


def seq_cohort_note(leaderboard: pd.DataFrame) -> str:
    """One line per condition: what its SEQ cohort is and who is in it (for the table's metadata)."""
    if leaderboard.empty:
        return "no rows"
    rows = leaderboard.drop_duplicates("condition")
    return "\n".join(
        f"{c}: {COHORT_KINDS.get(str(k), str(k))} ({m or 'nobody'})"
        for c, k, m in zip(rows["condition"], rows["seq_cohort_kind"], rows["seq_cohort"])
    )


# The embedded rules that never read the scene: never members of a baselines-only SEQ cohort.
SHORTCUT_MODELS = frozenset({"calmer-chooser", "livelier-chooser"})
# A baseline that does not read a model's judgement of the scene (an acoustic rule) and beats chance's Acc1 by at
# least this much measures the items, not a model: the leaderboard's readers are told so (shortcut_notes).
SHORTCUT_MARGIN = 0.15


def shortcut_notes(leaderboard: pd.DataFrame) -> list[str]:
    """One line per embedded baseline row (chance and the random coin aside) whose Acc1 is at least SHORTCUT_MARGIN
    above chance: a simple rule that gets that far shows a regularity of how the items were made (for example the
    resonant reply being the calmer voice in most pairs), which a model can exploit without judging the scene."""
    if leaderboard.empty or "acc1" not in leaderboard.columns:
        return []
    rows = leaderboard[
        leaderboard["is_baseline"].astype(bool)
        & (leaderboard["target"] != CHANCE_TARGET)
        & ~leaderboard["model"].astype(str).str.startswith("random")
    ]
    notes = []
    chance = seq.CHANCE["acc1"]
    for row in rows.itertuples(index=False):
        acc1 = float(row.acc1) if not pd.isna(row.acc1) else float("nan")
        if acc1 - chance >= SHORTCUT_MARGIN:
            notes.append(
                f"{row.target} ({row.condition}): Acc1 {acc1:.2f} against chance {chance:.2f} with an acoustic rule, "
                f"no model: it measures how these items were made; a model's lead over chance on them is partly "
                f"this shortcut"
            )
    return notes


def _chance_row(condition: str, cohort: list[float], cohort_text: str, kind: str) -> dict[str, object]:
    chance = seq.CHANCE
    return {
        "target": CHANCE_TARGET,
        "condition": condition,
        "is_baseline": True,
        "speech_input": CHANCE_TARGET,
        "model": CHANCE_TARGET,
        "reply_format": None,
        "headline_inference": None,
        "n_items": 0,
        "n_error_items": 0,
        **{k: chance[k] for k in ACCURACIES},
        "seq": seq_on_scale(chance["acc_traj"], cohort),
        "seq_cohort": cohort_text,
        "seq_cohort_kind": kind,
        "in_seq_cohort": False,
        "contextual_amnesia": chance["acc1"] - chance["acc2"],
        "acc2_direct": chance["acc2"],
        "acc_traj_direct": chance["acc_traj"],
        "sequential_direct_delta": 0.0,
        "queries": 0,
    }


# -------------------------------------------------------------------------------------------------- tables


def seq_leaderboard(
    choices: pd.DataFrame, *, resamples: int, seed: int, cohort: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per target x condition with the headline accuracies and their item-bootstrap intervals, SEQ
    on the condition's cohort scale (`cohort` names its members, else `choose_cohort`'s rule), the
    sequential-vs-direct and position-bias checks and the efficiency figures of paper Table 3; plus one
    chance row per condition (Acc 0.5 / 0.5 / 0.25) placed on that scale. Sorted by condition (default
    first), SEQ descending, chance last."""
    _check(choices)
    rows: list[dict[str, Any]] = []  # table rows: column -> value of any column type
    for (target, condition), cell in choices.groupby(["target", "condition"], sort=True):
        mode, items = cell_items(cell)
        row: dict[str, Any] = {
            "target": str(target),
            "condition": str(condition),
            **_meta(cell),
            "headline_inference": mode,
            "n_error_items": int(items["failed"].sum()),
        }
        row.update(_accuracy_cis(items, resamples=resamples, seed=seed))
        checks = _checks(items, direct_items(cell))
        del checks["n_items_direct"]  # not a leaderboard column
        row.update(checks, position_bias_rate=_position_bias(cell, mode), **_efficiency(cell))
        rows.append(row)
    ordered: list[dict[str, Any]] = []
    for condition in _condition_order(r["condition"] for r in rows):
        part = [r for r in rows if r["condition"] == condition]
        members, kind = choose_cohort(part, cohort)
        values = [float(r["acc_traj"]) for r in part if r["target"] in members]
        cohort_text = ",".join(members)
        for r in part:
            r.update(
                seq=seq_on_scale(float(r["acc_traj"]), values),
                seq_cohort=cohort_text,
                seq_cohort_kind=kind,
                in_seq_cohort=r["target"] in members,
            )
        part.sort(key=lambda r: (np.isnan(r["seq"]), -r["seq"] if not np.isnan(r["seq"]) else 0.0, r["target"]))
        ordered.extend([*part, _chance_row(condition, values, cohort_text, kind)])
    table = pd.DataFrame(ordered, columns=list(LEADERBOARD_COLUMNS))
    text = {
        "target",
        "condition",
        "speech_input",
        "model",
        "reply_format",
        "headline_inference",
        "seq_cohort",
        "seq_cohort_kind",
    }
    kinds = {c: float for c in LEADERBOARD_COLUMNS if c not in text}
    return table.astype(
        {**kinds, "n_items": int, "n_error_items": int, "queries": int, "is_baseline": bool, "in_seq_cohort": bool}
    )


def _names(level: str, key: str) -> tuple[str, str, str]:
    """(display_name, composite key, composite display name) of a subscale slug or a composite key."""
    if level == "composite":
        return COMPOSITES.get(key, (key, ()))[0], key, COMPOSITES.get(key, (key, ()))[0]
    composite, sub = SUBSCALES.get(key, ("", key))
    return SUBSCALE_NAMES.get(sub, key), composite, COMPOSITES.get(composite, (composite, ()))[0]


def _eq_position(level: str, key: str) -> int:
    keys = list(COMPOSITES) if level == "composite" else list(SUBSCALES)
    return keys.index(key) if key in keys else len(keys)


def seq_breakdown(choices: pd.DataFrame, *, resamples: int, seed: int) -> pd.DataFrame:
    """Per target x condition x level ('subscale' | 'composite') x name: the headline accuracies with
    item-bootstrap intervals, contextual amnesia (Acc1 - Acc2), and Acc2 under direct inference with its
    difference from the headline Acc2 (paper Figure 3: positive = direct inference helps). Subscales and
    composites are in EQ-i order; `composite` / `composite_name` give each subscale's composite."""
    _check(choices)
    rows: list[dict[str, object]] = []
    for (target, condition), cell in choices.groupby(["target", "condition"], sort=True):
        mode, items = cell_items(cell)
        direct = direct_items(cell)
        base = {
            "target": str(target),
            "condition": str(condition),
            "is_baseline": _meta(cell)["is_baseline"],
            "headline_inference": mode,
        }
        for level in ("composite", "subscale"):
            keys = sorted(
                set(items[level].astype(str)) | set(direct[level].astype(str)),
                key=lambda k: (_eq_position(level, k), k),
            )  # sorted() calls it at once
            for key in keys:
                display, composite, composite_name = _names(level, key)
                row = {
                    **base,
                    "level": level,
                    "name": key,
                    "display_name": display,
                    "composite": composite,
                    "composite_name": composite_name,
                }
                mine, mine_direct = items[items[level].astype(str) == key], direct[direct[level].astype(str) == key]
                row.update(_accuracy_cis(mine, resamples=resamples, seed=seed))
                row.update(_checks(mine, mine_direct))
                rows.append(row)
    table = pd.DataFrame(rows, columns=list(BREAKDOWN_COLUMNS))
    if table.empty:
        return table
    order = {c: i for i, c in enumerate(_condition_order(table["condition"]))}
    table = table.sort_values(
        ["condition", "target"], key=lambda s: s.map(order) if s.name == "condition" else s, kind="stable"
    )
    return table.astype({"n_items": int, "n_items_direct": int, "is_baseline": bool}).reset_index(drop=True)


def conditioning_table(leaderboard: pd.DataFrame, *, reference_condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """Persona conditioning (paper Figure 4): one row per target, per condition `acc_traj_<condition>` and
    `seq_<condition>`, the condition's Acc_traj placed on the reference condition's cohort scale (module
    docstring), so that columns compare; `seq_scale_cohort` names that cohort. NaN where a target was not
    evaluated under a condition, or when the reference condition has no cohort. Chance is the last row."""
    if leaderboard.empty:
        return pd.DataFrame(columns=["target", "is_baseline", "seq_scale_cohort"])
    ref_rows = leaderboard[leaderboard["condition"] == reference_condition]
    reference = _cohort_values(ref_rows)
    members = ref_rows.loc[ref_rows["in_seq_cohort"].astype(bool), "target"].astype(str).tolist()
    conditions = _condition_order(leaderboard["condition"])
    targets = leaderboard.drop_duplicates("target").set_index("target")["is_baseline"].astype(bool)
    acc = leaderboard.pivot(index="target", columns="condition", values="acc_traj").reindex(columns=conditions)
    table = pd.DataFrame({"target": acc.index, "is_baseline": targets.reindex(acc.index).to_numpy()})
    for condition in conditions:
        values = acc[condition].to_numpy(dtype=float)
        table[f"acc_traj_{condition}"] = values
        table[f"seq_{condition}"] = [seq_on_scale(v, reference) for v in values]
    table["seq_scale_cohort"] = f"{reference_condition}: {','.join(sorted(members))}"
    ref_col = f"seq_{reference_condition}" if reference_condition in conditions else f"seq_{conditions[0]}"
    table = table.assign(_chance=table["target"] == CHANCE_TARGET).sort_values(
        ["_chance", ref_col, "target"], ascending=[True, False, True], na_position="last"
    )
    return table.drop(columns="_chance").reset_index(drop=True)


def conditioning_markdown(table: pd.DataFrame, *, digits: int = 1) -> str:
    """The conditioning table as markdown: one SEQ column per condition (Acc_traj in parentheses)."""
    if table.empty:
        return "_no rows_"
    conditions = [c[len("seq_") :] for c in table.columns if c.startswith("seq_") and c != "seq_scale_cohort"]
    shown = pd.DataFrame(
        {
            "target": [
                t + (" (baseline)" if b and t != CHANCE_TARGET else "")
                for t, b in zip(table["target"], table["is_baseline"])
            ]
        }
    )
    for c in conditions:
        shown[c] = [
            ("" if pd.isna(s) else f"{s:.{digits}f} ({a:.3f})")
            for s, a in zip(table[f"seq_{c}"], table[f"acc_traj_{c}"])
        ]
    note = f"\n\nSEQ on the cohort scale of {table['seq_scale_cohort'].iloc[0]}; Acc_traj in parentheses."
    return shown.to_markdown(index=False) + note
