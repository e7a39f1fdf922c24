"""Per-dialogue scores: every EYT-Bench metric broken down to one row per dialogue.

The leaderboard and the analysis tables aggregate these rows, and the bootstrap resamples them, so each
number has one definition (docs/eyt-metrics.md). Pure logic over the warehouse tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eyt_dagster.core.bounds import clipped
from eyt_dagster.core.explained import Explained, Step, figure, missing, sum_of
from eyt_dagster.core.stats import spearman_rho
from eyt_dagster.eyt_bench import metrics
from eyt_dagster.eyt_bench.encoder_calibration import EncoderCalibration
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, DIMENSION_TO_100, RUBRIC, SATISFACTION_MIN

KEYS = ["target", "pool", "seed_id"]
DIMENSIONS = tuple(DIMENSION_NAMES.values())
LABELS = {"explicit": "explicit_intent", "latent": "latent_intent", "emotion": "emotion"}
EARLY_TURNS = 2  # warm-up: turns 1-2 are early, 3+ late (paper §3.5.3, Table 8)
PER_DIALOGUE = [
    *DIMENSIONS,
    *(f"{d}_{part}" for d in DIMENSIONS for part in ("sum", "early", "late")),
    "n_judged_turns",
]


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows without an error (error rows are reported, never scored)."""
    return df[df["error"].isna()] if "error" in df.columns else df


def judged_turns(verdicts: pd.DataFrame) -> pd.DataFrame:
    """KEYS and turn of every turn a judge's call answered (the turns a dialogue's dimension scores weigh)."""
    ok = ok_rows(verdicts)
    if ok.empty:
        return pd.DataFrame(columns=[*KEYS, "turn"])
    return ok[[*KEYS, "turn"]].drop_duplicates().astype({"seed_id": str, "turn": int}).reset_index(drop=True)


def answered_turns(turns: pd.DataFrame) -> pd.DataFrame:
    """The answered turns of finished dialogues: the rows metrics and judges read. A dialogue whose call
    failed keeps its answered turns with complete = False: they are left out until a rerun finishes it.
    (A missing `complete` comes from a partition written before the column existed, when a failed dialogue
    kept no turns, so it counts as complete.)"""
    ok = ok_rows(turns)
    ok = ok[ok["turn"] > 0]
    if "complete" in ok.columns:
        ok = ok[ok["complete"].astype("boolean").fillna(True).astype(bool)]
    return ok


def incomplete_dialogues(turns: pd.DataFrame) -> pd.DataFrame:
    """One row per dialogue that did not finish (its error row), with the error."""
    failed = turns[turns["error"].notna()] if len(turns) else turns
    return failed[[*KEYS, "error"]].drop_duplicates(KEYS) if len(failed) else pd.DataFrame(columns=[*KEYS, "error"])


def dialogue_lengths(turns: pd.DataFrame) -> pd.Series:
    """T of each finished dialogue: its number of answered turns, indexed by KEYS."""
    answered = answered_turns(turns)
    if answered.empty:
        return pd.Series(dtype="int64", index=pd.MultiIndex.from_tuples([], names=KEYS), name="n_turns")
    return answered.groupby(KEYS)["turn"].max().astype("int64").rename("n_turns")


def directional_alignment(turn_index: pd.Series, cos_to_final: pd.Series) -> float:
    """Spearman correlation between turn index and cos(predicted intent, final intent) in one dialogue;
    undefined (NaN) for fewer than three turns, a constant similarity or a missing one (as scipy.stats.spearmanr
    propagates a NaN). `stats.spearman_rho` is spearmanr's float without importing scipy.stats in every worker."""
    if len(turn_index) < 3 or cos_to_final.nunique() < 2:
        return float("nan")
    x, y = np.asarray(turn_index, dtype=float), np.asarray(cos_to_final, dtype=float)
    if np.isnan(x).any() or np.isnan(y).any():
        return float("nan")
    return clipped(spearman_rho(x, y), -1.0, 1.0)


def combined_subscores(verdicts: pd.DataFrame, combine: str = "mean") -> pd.DataFrame:
    """Per judged turn, each sub-indicator combined over the judges whose call succeeded (mean or median)."""
    ok = ok_rows(verdicts)
    if ok.empty:
        return pd.DataFrame(columns=[*KEYS, "turn"])
    return metrics.combine_judges(ok, combine)


def turn_dimension_scores(verdicts: pd.DataFrame, combine: str = "mean") -> pd.DataFrame:
    """Per judged turn, each dimension 0-5: each sub-indicator combined over the judges (mean or median),
    then summed per dimension."""
    combined = combined_subscores(verdicts, combine)
    if combined.empty:
        return pd.DataFrame(columns=[*KEYS, "turn", *DIMENSIONS])
    return metrics.dimension_sums(combined)


@dataclass(frozen=True)
class Weighting:
    """The weighted dimension scores of many dialogues and how they were reached."""

    scores: pd.DataFrame  # per dialogue: KEYS and PER_DIALOGUE (Eq. 3 on 0-100, raw sums, early / late, judged turns)
    turns: pd.DataFrame  # per judged turn: KEYS, turn, n_turns, each dimension's turn score (0-5), `weight` (Eq. 4 at
    # the dialogue's T) and `share` (the weight renormalised over the dialogue's judged turns)
    weighted: pd.DataFrame  # per dialogue: KEYS and each dimension's sum of share x score (0-5), missing as its score


def weighted_by_dialogue(dims: pd.DataFrame, lengths: pd.Series, alpha: float) -> pd.DataFrame:
    """Per dialogue: Eq. 3 weighted scores (0-100), the raw sums over its judged turns (for unweighted pooled
    means), early / late raw means (0-5) and how many turns were judged (`weighting`'s scores)."""
    return weighting(dims, lengths, alpha).scores


def weighting(dims: pd.DataFrame, lengths: pd.Series, alpha: float) -> Weighting:
    """Eq. 3 for many dialogues, with its working. The Eq. 4 weights come from each turn's number and the
    dialogue's own T (`lengths`, from dialogue_turns), renormalised over the judged turns when a verdict is missing
    (see metrics.judged_turn_weights). Dialogues without a length (not finished) are left out. Computed for all
    dialogues at once (group sums and means, no Python per dialogue); one dialogue's rows alone give it the same
    numbers, which is how its explanation is computed (explained_dimension_scores)."""
    empty = Weighting(
        pd.DataFrame(columns=[*KEYS, *PER_DIALOGUE]),
        pd.DataFrame(columns=[*KEYS, "turn", "n_turns", *DIMENSIONS, "weight", "share"]),
        pd.DataFrame(columns=[*KEYS, *DIMENSIONS]),
    )
    if dims.empty or lengths.empty:
        return empty
    with_t = dims.merge(lengths.reset_index(), on=KEYS, how="inner")
    beyond = with_t[with_t["turn"] > with_t["n_turns"]]
    if len(beyond):
        first = beyond.iloc[0]
        raise ValueError(
            f"judge verdicts for turn {first['turn']} of {first['target']} / {first['seed_id']}, which has only "
            f"{first['n_turns']} turn(s) in dialogue_turns: the verdicts are older than the dialogues; "
            "rematerialise judge_verdicts for this partition"
        )
    if with_t.empty:
        return empty
    rows = with_t.sort_values([*KEYS, "turn"], kind="stable")
    turns, n_turns = rows["turn"].to_numpy(dtype=int), rows["n_turns"].to_numpy(dtype=int)
    raw = metrics.eq4_weights(turns, n_turns, alpha)
    groups = rows[KEYS].copy()
    groups["_w"] = raw
    by = [groups[k] for k in KEYS]
    w = raw / groups.groupby(by, sort=True)["_w"].transform("sum").to_numpy()  # renormalised over judged turns
    early = turns <= EARLY_TURNS
    parts = {}
    for d in DIMENSIONS:
        x = rows[d].to_numpy(dtype=float)
        parts[f"{d}__w"] = w * x
        parts[f"{d}__nan"] = np.isnan(x)
        parts[f"{d}__x"] = x
        parts[f"{d}__early"] = np.where(early, x, np.nan)
        parts[f"{d}__late"] = np.where(early, np.nan, x)
    grouped = pd.DataFrame(parts, index=rows.index).groupby(by, sort=True)
    means = grouped[[f"{d}__{part}" for d in DIMENSIONS for part in ("early", "late")]].mean()
    sums = grouped[[f"{d}__{part}" for d in DIMENSIONS for part in ("w", "nan", "x")]].sum()  # NaN skipped, as before
    out = pd.DataFrame(index=sums.index)
    weighted = pd.DataFrame(index=sums.index)
    for d in DIMENSIONS:  # a NaN score leaves the weighted score NaN (np.dot), as it did
        out[d] = np.where(sums[f"{d}__nan"] > 0, np.nan, sums[f"{d}__w"] * DIMENSION_TO_100)
        weighted[d] = np.where(sums[f"{d}__nan"] > 0, np.nan, sums[f"{d}__w"])
    for d in DIMENSIONS:
        out[f"{d}_sum"] = sums[f"{d}__x"]
        out[f"{d}_early"] = means[f"{d}__early"]
        out[f"{d}_late"] = means[f"{d}__late"]
    out["n_judged_turns"] = grouped.size().astype(float)  # a float, as the per-dialogue Series made it
    working = rows[[*KEYS, "turn", "n_turns", *DIMENSIONS]].assign(weight=raw, share=w).reset_index(drop=True)
    return Weighting(out.reset_index()[[*KEYS, *PER_DIALOGUE]], working, weighted.reset_index())


def _one_dialogue_lengths(rows: pd.DataFrame, n_turns: int) -> pd.Series:
    """`dialogue_lengths` for the one dialogue `rows` belong to (no rows: an empty Series)."""
    keys = [tuple(rows[KEYS].iloc[0])] if len(rows) else []
    index = pd.MultiIndex.from_tuples(keys, names=KEYS) if keys else pd.MultiIndex.from_tuples([], names=KEYS)
    return pd.Series([n_turns] * len(keys), index=index, dtype="int64", name="n_turns")


def explained_dimension_scores(
    verdicts: pd.DataFrame, n_turns: int, alpha: float, combine: str = "mean"
) -> dict[str, Explained]:
    """Each dimension's weighted score (Eq. 3, 0-100) of ONE dialogue of T = `n_turns` turns, from its
    judge_verdicts rows (failed calls included), with the arithmetic: the judges' sub-indicators per turn, how
    they combine (`combine`: mean or median), the dimension's turn sums, the Eq. 4 weights (renormalised when a turn
    has no verdict) and the weighted sum on 0-100. It runs what score_dialogues runs (turn_dimension_scores,
    weighting) on this dialogue's rows, so each `.value` is the number dialogue_scores stores for it."""
    combined = combined_subscores(verdicts, combine)
    dims = turn_dimension_scores(verdicts, combine)
    result = weighting(dims, _one_dialogue_lengths(verdicts, n_turns), alpha)
    ok, failed = ok_rows(verdicts), verdicts[~verdicts.index.isin(ok_rows(verdicts).index)]
    judges = sorted({str(j) for j in verdicts["judge"]}) if "judge" in verdicts.columns else []
    weights = metrics.warmup_weights(n_turns, alpha) if n_turns >= 1 else np.array([])
    if n_turns >= 3:
        eq4 = f"w1 = w2 = {figure(alpha)}; w3..w{n_turns} = (1 - 2 x {figure(alpha)}) / ({n_turns} - 2)"
    else:
        eq4 = f"T = {n_turns}: every turn weighs 1 / {n_turns} (Eq. 4 needs T >= 3)"
    judged = [int(t) for t in result.turns["turn"]]
    out = {}
    for dim, subs in RUBRIC.items():
        name = DIMENSION_NAMES[dim]
        columns = [f"{dim}_{sub}" for sub in subs]
        steps = [
            Step(
                f"Eq. 4 warm-up weights at T = {n_turns}, alpha = {figure(alpha)}",
                eq4,
                ", ".join(figure(x) for x in weights),
                tuple(weights.tolist()),
            )
        ]
        for turn in range(1, n_turns + 1):
            mine = ok[ok["turn"] == turn].sort_values("judge") if len(ok) else ok
            lost = sorted(str(j) for j in failed.loc[failed["turn"] == turn, "judge"]) if len(failed) else []
            if mine.empty:
                steps.append(Step(f"turn {turn}: no verdict (every judge call failed); its weight drops out"))
                continue
            row = combined[combined["turn"] == turn].iloc[0]
            subscores = [row[c] for c in columns]
            per_judge = "; ".join(
                f"{v['judge']} ({', '.join(figure(v[c]) for c in columns)})" for _, v in mine.iterrows()
            )
            if len(mine) > 1:
                said = f"{per_judge}; {combine} per sub-indicator ({', '.join(figure(x) for x in subscores)}); sum "
            else:
                said = f"{per_judge}: "
            score = dims.loc[dims["turn"] == turn, name].iloc[0]
            label = f"turn {turn}: {name} sub-indicators ({', '.join(subs)}), summed"
            if lost:
                label += f" ({', '.join(lost)}: call failed, not counted)"
            steps.append(Step(label, said + sum_of(subscores), score, tuple(float(x) for x in subscores)))
        value: float = float("nan")
        if len(result.scores):
            shares = result.turns["share"].tolist()
            scores = result.turns[name].tolist()
            if len(judged) < n_turns:
                kept = [weights[t - 1] for t in judged]
                steps.append(
                    Step(
                        f"weights renormalised over the judged turns {', '.join(map(str, judged))}",
                        ", ".join(f"{figure(k)} / {figure(sum(kept))}" for k in kept),
                        ", ".join(figure(x) for x in shares),
                        tuple(shares),
                    )
                )
            weighted = result.weighted[name].iloc[0]
            steps.append(
                Step(
                    "Eq. 3: the turn sums weighted",
                    " + ".join(f"{figure(a)} x {figure(b)}" for a, b in zip(shares, scores)),
                    weighted,
                    tuple(x for pair in zip(shares, scores) for x in pair),
                )
            )
            value = float(result.scores[name].iloc[0])
            steps.append(Step("on 0-100", f"{figure(weighted)} x {figure(DIMENSION_TO_100)}", value))
        else:
            steps.append(Step("no turn of this dialogue has a verdict: the score is missing"))
        notes = [
            "each sub-indicator is scored 0, 0.5 or 1 per turn (0 or 1 on the binary scale); a turn's "
            f"{name} is the sum of its five (0-5)"
        ]
        if len(judges) > 1:
            notes.append(
                f"{len(judges)} judges: each sub-indicator combined across them by the {combine} (the slate's "
                "judge_combine), then summed"
            )
        if len(judged) < n_turns:
            notes.append(
                "a turn without a verdict drops out and the judged turns keep the weight their position gives them, "
                "renormalised to sum to 1 (docs/eyt-metrics.md#missing-verdicts-and-the-warm-up-weights)"
            )
        label = f"{name} of this dialogue (Eq. 3, 0-100)"
        out[name] = Explained(label, value, tuple(steps), tuple(notes))
    return out


def final_verdicts(finals: pd.DataFrame, combine: str = "mean") -> pd.DataFrame:
    """Per dialogue with a final verdict: `completed` (the judges' majority) and `satisfaction` on 0-100, with the
    working: `votes` of `judges`, `satisfaction_1_5` (the judges' satisfaction combined by `combine`). Failed calls are
    not counted."""
    ok = ok_rows(finals)
    if ok.empty:
        return pd.DataFrame(columns=[*KEYS, "votes", "judges", "satisfaction_1_5", "completed", "satisfaction"])
    votes = metrics.final_verdict_votes(ok, combine)
    votes["satisfaction_1_5"] = votes["satisfaction"]
    votes["satisfaction"] = metrics.satisfaction_to_100(votes["satisfaction"])
    return votes


def explained_final_verdicts(finals: pd.DataFrame, combine: str = "mean") -> tuple[Explained, Explained]:
    """ONE dialogue's completion and satisfaction (0-100) from its final_intent_verdicts rows (failed calls
    included), with the arithmetic: each judge's verdict, the majority vote (a tie is not completed) and the
    satisfaction combined by `combine` and put on 0-100. It runs `final_verdicts`, what score_dialogues stores."""
    ok = ok_rows(finals).sort_values("judge") if len(finals) else finals
    lost = sorted(str(j) for j in finals.loc[~finals.index.isin(ok.index), "judge"]) if len(finals) else []
    notes = [f"{j}: its call failed, not counted" for j in lost]
    rows = final_verdicts(finals, combine)
    if rows.empty:
        nothing = (Step("no judge gave a final verdict on this dialogue: missing"),)
        return (
            Explained("final intent completed (majority of the judges)", None, nothing, tuple(notes)),
            Explained("satisfaction of this dialogue (0-100)", float("nan"), nothing, tuple(notes)),
        )
    row = rows.iloc[0]
    votes, judges, completed = int(row["votes"]), int(row["judges"]), bool(row["completed"])
    said = [
        Step(str(judge), "", "missing" if missing(c) else "completed" if c else "not completed")
        for judge, c in zip(ok["judge"], ok["completed"])
    ]
    vote = Step(
        "majority vote: completed when more than half of the judges say so",
        f"{votes} of {judges}: {votes} x 2 > {judges}",
        completed,
        (float(votes), float(judges)),
    )
    completion = Explained(
        "final intent completed (majority of the judges)",
        completed,
        (*said, vote),
        (*notes, "a tie counts as not completed: only a goal most judges saw reached is credited"),
    )
    given = [float("nan") if missing(v["satisfaction"]) else float(v["satisfaction"]) for _, v in ok.iterrows()]
    steps = [Step(f"{judge}: satisfaction (1-5)", "", s) for judge, s in zip(ok["judge"], given)]
    combined = float(row["satisfaction_1_5"])
    if judges > 1:
        written = f"({sum_of(given)}) / {judges}" if combine == "mean" else f"median({', '.join(map(figure, given))})"
        steps.append(Step(f"the judges' {combine} (the slate's judge_combine)", written, combined, tuple(given)))
    value = float(row["satisfaction"])
    steps.append(Step("on 0-100", f"({figure(combined)} - {SATISFACTION_MIN}) x 25", value, (combined,)))
    satisfaction = Explained("satisfaction of this dialogue (0-100)", value, tuple(steps), tuple(notes))
    return completion, satisfaction


def failed_verdicts(verdicts: pd.DataFrame) -> pd.Series:
    """Error rows (failed judge calls) per dialogue, indexed by KEYS."""
    if verdicts.empty or "error" not in verdicts.columns:
        return pd.Series(dtype="int64", index=pd.MultiIndex.from_tuples([], names=KEYS))
    return verdicts["error"].notna().groupby([verdicts[k] for k in KEYS]).sum().astype("int64")


def score_dialogues(
    turns: pd.DataFrame,
    verdicts: pd.DataFrame,
    finals: pd.DataFrame,
    similarity: pd.DataFrame,
    alpha: float,
    combine: str = "mean",
    calibration: EncoderCalibration | None = None,
) -> pd.DataFrame:
    """One row per finished dialogue with its label hits, drift (Eq. 1, on the `calibration`'s drift scale:
    encoder_calibration.py; none, or all-MiniLM-L6-v2's, is Eq. 1 as written), alignment, the judges' verdicts combined by
    `combine` (mean or median; completion is always a majority vote), dimension scores, and how many turns
    were judged and how many judge calls failed. Unjudged values are missing, never a crash."""
    answered = answered_turns(turns)
    out = dialogue_lengths(turns).reset_index()
    for short, col in LABELS.items():
        hits = (answered[f"gold_{col}"] == answered[f"pred_{col}"]).groupby([answered[k] for k in KEYS]).sum()
        out = out.merge(hits.rename(f"{short}_correct").reset_index(), on=KEYS, how="left")
    if len(similarity):
        by_dialogue = similarity.groupby(KEYS)
        per_dialogue = by_dialogue["cos_gold_pred"]
        drift = per_dialogue.apply(lambda c: metrics.explained_intent_drift(c, calibration).number()).rename("drift")
        align = by_dialogue.apply(
            lambda g: directional_alignment(g["turn"], g["cos_pred_final"]), include_groups=False
        ).rename("directional_alignment")
        out = out.merge(drift.reset_index(), on=KEYS, how="left").merge(align.reset_index(), on=KEYS, how="left")
    else:
        out["drift"], out["directional_alignment"] = np.nan, np.nan
    if len(ok_rows(finals)):
        out = out.merge(final_verdicts(finals, combine)[[*KEYS, "completed", "satisfaction"]], on=KEYS, how="left")
    else:
        out["completed"], out["satisfaction"] = None, np.nan
    dims = turn_dimension_scores(verdicts, combine)
    out = out.merge(weighted_by_dialogue(dims, dialogue_lengths(turns), alpha), on=KEYS, how="left")
    out["n_judged_turns"] = pd.to_numeric(out["n_judged_turns"]).fillna(0).astype("int64")
    for column, frame in (("n_failed_verdicts", verdicts), ("n_failed_final_verdicts", finals)):
        counts = failed_verdicts(frame).rename(column).reset_index()
        out = out.merge(counts, on=KEYS, how="left") if len(counts) else out.assign(**{column: 0})
        out[column] = out[column].fillna(0).astype("int64")
    return out
