"""EYT-Bench metrics (paper §3.5; docs/eyt-metrics.md). Pure functions over pandas frames; no Dagster.

Scales: accuracies and FICR are shares in [0, 1]; a dimension's per-turn score is the sum of its five
sub-indicators (0-5) reported on 0-100 (x20); satisfaction 1-5 is reported on 0-100 as (s - 1) * 25.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core.bounds import clipped
from eyt_dagster.core.explained import Explained, Step, figure, sum_of, term
from eyt_dagster.eyt_bench.encoder_calibration import EncoderCalibration
from eyt_dagster.eyt_bench.taxonomy import DIMENSION_NAMES, RUBRIC, SATISFACTION_MIN


def warmup_weights(n_turns: int, alpha: float) -> np.ndarray:
    """Paper Eq. 4: w_1 = w_2 = alpha, w_t = (1 - 2 alpha) / (T - 2) for t >= 3, regenerated at the
    dialogue's own length T (paper §3.5.3, Table 2 and Appendix A). For T = 2 the weights are (0.5, 0.5)
    and for T = 1 (1.0). Sum is 1."""
    if n_turns < 1:
        raise ValueError("a dialogue has at least one turn")
    if n_turns == 1:
        return np.array([1.0])
    if n_turns == 2:
        return np.array([0.5, 0.5])
    rest = (1.0 - 2.0 * alpha) / (n_turns - 2)
    return np.array([alpha, alpha] + [rest] * (n_turns - 2))


def eq4_weights(turns: np.ndarray, n_turns: np.ndarray, alpha: float) -> np.ndarray:
    """warmup_weights(T, alpha)[t - 1] for many (turn t, dialogue length T) rows at once, not renormalised: 1 for
    T = 1, 0.5 for T = 2, alpha for turns 1-2 and (1 - 2 alpha) / (T - 2) after them for T >= 3."""
    t, n = np.asarray(turns, dtype=int), np.asarray(n_turns, dtype=int)
    outside = (t < 1) | (t > n)
    if outside.any():
        raise ValueError(f"turn numbers {sorted(set(t[outside].tolist()))} are outside 1..T of their dialogues")
    with np.errstate(divide="ignore", invalid="ignore"):
        rest = (1.0 - 2.0 * alpha) / (n - 2)
    return np.select([n == 1, n == 2, t <= 2], [1.0, 0.5, alpha], default=rest).astype(float)


def judged_turn_weights(turns: np.ndarray, n_turns: int, alpha: float) -> np.ndarray:
    """Eq. 4 weights of the judged turns `turns` (1-based turn numbers) of a dialogue of T = `n_turns` turns,
    renormalised to sum to 1 over those turns. Each turn keeps the weight its position gives it; a turn with
    no verdict drops out and the others share its weight in proportion (the paper is silent on missing
    verdicts; see docs/eyt-metrics.md). With every turn judged this is Eq. 4 unchanged."""
    turns = np.asarray(turns, dtype=int)
    if len(turns) == 0:
        return np.array([])
    if turns.min() < 1 or turns.max() > n_turns:
        raise ValueError(f"turn numbers {sorted(set(turns.tolist()))} are outside 1..{n_turns}")
    w = warmup_weights(n_turns, alpha)[turns - 1]
    return w / w.sum()


def macro_f1(gold: pd.Series, predicted: pd.Series) -> float:
    """Macro-F1 over the labels that occur in gold or predictions (sklearn's default label set), so a
    class no turn mentions does not count as an F1 of 0."""
    from sklearn.metrics import f1_score  # imported here: loading the code location stays light

    if len(gold) == 0:
        return float("nan")
    return float(f1_score(gold.astype(str), predicted.astype(str), average="macro", zero_division=0))


def macro_f1_counts(frame: pd.DataFrame, by: list[str], gold: str, predicted: str) -> pd.DataFrame:
    """Per group of `frame`'s rows and label (the labels as text, as macro_f1 sees them; indexed by the `by` values
    and `label`): the true positives `tp`, false positives `fp`, false negatives `fn` and the label's F1
    2tp / (2tp + fp + fn)."""
    g, p = frame[gold].astype(str).to_numpy(), frame[predicted].astype(str).to_numpy()
    keys = frame[by].reset_index(drop=True)
    hit = g == p
    counted = pd.concat(
        [
            keys[hit].assign(label=g[hit], tp=1, fp=0, fn=0),
            keys[~hit].assign(label=p[~hit], tp=0, fp=1, fn=0),
            keys[~hit].assign(label=g[~hit], tp=0, fp=0, fn=1),
        ]
    )
    c = counted.groupby([*by, "label"], sort=True)[["tp", "fp", "fn"]].sum()
    c["f1"] = 2 * c["tp"] / (2 * c["tp"] + c["fp"] + c["fn"])
    return c


def macro_f1_by(frame: pd.DataFrame, by: list[str], gold: str, predicted: str) -> pd.Series:
    """macro_f1 of every group of `frame`'s rows (indexed by the `by` values; a group with no rows is absent), all
    groups at once: the mean over each group's labels of macro_f1_counts' F1."""
    return _mean_f1(macro_f1_counts(frame, by, gold, predicted), by)


def _mean_f1(counts: pd.DataFrame, by: list[str]) -> pd.Series:
    return counts["f1"].groupby(level=by, sort=True).mean().rename(None)


def explained_macro_f1_by(
    frame: pd.DataFrame, by: list[str], gold: str, predicted: str
) -> dict[tuple[Any, ...], Explained]:
    """macro_f1_by of every group (keyed by its `by` values, as a tuple) with the arithmetic: each label's true
    positives, false positives and false negatives, its F1 2tp / (2tp + fp + fn), and their mean. The counts are
    computed once for every group, as macro_f1_by computes them (the leaderboard's emotion_macro_f1)."""
    if frame.empty:
        return {}
    counts = macro_f1_counts(frame, by, gold, predicted)
    values = _mean_f1(counts, by)
    labels = counts.index.get_level_values("label")
    keys = list(zip(*(counts.index.get_level_values(k) for k in by)))
    rows: dict[tuple[Any, ...], list[Step]] = {}
    for key, label, tp, fp, fn, f1 in zip(keys, labels, counts["tp"], counts["fp"], counts["fn"], counts["f1"]):
        rows.setdefault(key, []).append(
            Step(
                f"{label}: {int(tp)} right, {int(fp)} predicted wrongly, {int(fn)} missed",
                f"2 x {int(tp)} / (2 x {int(tp)} + {int(fp)} + {int(fn)})",
                float(f1),
                (float(tp), float(fp), float(fn)),
            )
        )
    notes = ("a label no turn mentions (in gold or predicted) adds no F1 of 0",)
    out = {}
    for key, steps in rows.items():
        value = float(values.loc[key if len(by) > 1 else key[0]])
        f1s = [float(s.result) for s in steps if isinstance(s.result, float)]
        mean = Step(f"mean over the {len(f1s)} label(s) in gold or predictions", f"({sum_of(f1s)}) / {len(f1s)}", value)
        out[key] = Explained("emotion macro-F1", value, (*steps, mean), notes)
    return out


def explained_macro_f1(frame: pd.DataFrame, by: list[str], gold: str, predicted: str) -> Explained:
    """explained_macro_f1_by of ONE group's rows (one cell's answered turns)."""
    found = explained_macro_f1_by(frame, by, gold, predicted)
    if not found:
        return Explained("emotion macro-F1", float("nan"), (Step("no answered turn: missing"),))
    (explained,) = found.values()
    return explained


def intent_drift(cosines: pd.Series) -> float:
    """Eq. 1 for one dialogue: mean over its turns of 1 - cos(v(gold description), v(predicted))."""
    return explained_intent_drift(cosines).number()


def calibrated_intent_drift(cosines: pd.Series, calibration: EncoderCalibration) -> float:
    """Eq. 1 on the encoder's drift scale (eyt_bench/encoder_calibration.py): mean over the dialogue's turns of
    drift_scale * (1 - cos). For all-MiniLM-L6-v2 (scale 1) it is `intent_drift` to the bit."""
    return explained_intent_drift(cosines, calibration).number()


def explained_intent_drift(
    cosines: pd.Series,
    calibration: EncoderCalibration | None = None,
    turns: Sequence[int] | None = None,
    texts: Sequence[tuple[str, str]] | None = None,
) -> Explained:
    """Eq. 1 for one dialogue with its arithmetic: per turn (numbered by `turns`, the gold and predicted intent texts
    from `texts` when given) drift_scale x (1 - cos(gold, predicted)), their mean, kept within [0, 2 x drift_scale].
    Without a `calibration` the scale is 1 (Eq. 1 as written); the dialogue_scores pipeline stores `.value`."""
    scale = 1.0 if calibration is None else calibration.drift_scale
    gaps = 1.0 - cosines
    per_turn = gaps if calibration is None else scale * gaps
    mean = float(per_turn.mean())
    value = clipped(mean, 0.0, 2.0 * scale)
    numbers = list(turns) if turns is not None else list(range(1, len(cosines) + 1))
    steps = []
    for k, (cos, drift) in enumerate(zip(cosines.tolist(), per_turn.tolist())):
        said = f": gold '{texts[k][0]}', predicted '{texts[k][1]}'" if texts is not None else ""
        written = f"1 - {term(cos)}" if calibration is None else f"{figure(scale)} x (1 - {term(cos)})"
        steps.append(Step(f"turn {numbers[k]}{said}", written, drift, (cos,) if calibration is None else (scale, cos)))
    steps.append(
        Step(f"mean over the {len(per_turn)} turn(s)", f"({sum_of(per_turn.tolist())}) / {len(per_turn)}", mean)
    )
    if value != mean and not np.isnan(mean):
        steps.append(Step(f"kept within [0, {figure(2.0 * scale)}] (rounding)", f"clip({figure(mean)})", value))
    notes = ["cos: cosine of the two descriptions' embeddings (dialogue.intent_similarity, cos_gold_pred)"]
    if calibration is not None and scale != 1.0:
        notes.append(
            f"drift scale {figure(scale)} of encoder {calibration.encoder}: its 1 - cos put on all-MiniLM-L6-v2's "
            "scale (docs/languages.md#per-encoder-calibration)"
        )
    return Explained("intent drift of the dialogue (Eq. 1)", value, tuple(steps), tuple(notes))


def dimension_sums(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per judged turn, each dimension's score 0-5: the sum of its five sub-indicators."""
    out = verdicts[["target", "pool", "seed_id", "turn"]].copy()
    for dim, subs in RUBRIC.items():
        out[DIMENSION_NAMES[dim]] = verdicts[[f"{dim}_{s}" for s in subs]].sum(axis=1)
    return out


def combine_judges(verdicts: pd.DataFrame, how: str = "mean") -> pd.DataFrame:
    """One row per (target, pool, seed_id, turn): the judges' sub-scores combined by mean or median."""
    keys = ["target", "pool", "seed_id", "turn"]
    value_cols = [c for c in verdicts.columns if c.split("_", 1)[0] in RUBRIC]
    return verdicts.groupby(keys, as_index=False)[value_cols].agg(how)


def final_verdict_votes(finals: pd.DataFrame, how: str = "mean") -> pd.DataFrame:
    """One row per dialogue with the working of its final verdict: `votes` (judges that say completed) of `judges`,
    `completed` by majority vote (a tie counts as not completed: the benchmark only credits a goal most judges saw
    reached) and `satisfaction` (1-5) combined by mean or median."""
    keys = ["target", "pool", "seed_id"]
    grouped = finals.groupby(keys, as_index=False).agg(
        votes=("completed", "sum"), judges=("completed", "size"), satisfaction=("satisfaction", how)
    )
    grouped["completed"] = grouped["votes"] * 2 > grouped["judges"]
    return grouped


def combine_final_verdicts(finals: pd.DataFrame, how: str = "mean") -> pd.DataFrame:
    """One row per dialogue: completion by majority vote of the judges and satisfaction (1-5) by mean or median
    (final_verdict_votes without its working)."""
    return final_verdict_votes(finals, how)[["target", "pool", "seed_id", "completed", "satisfaction"]]


def satisfaction_to_100(satisfaction: pd.Series) -> pd.Series:
    """Map the judge's 1-5 satisfaction linearly onto 0-100."""
    return (satisfaction - SATISFACTION_MIN) * 25.0
