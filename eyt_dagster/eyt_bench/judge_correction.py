"""Judge-made headline numbers corrected by human labels: per leaderboard cell (target x pool) and judge-made
metric, the prediction-powered (PPI++) estimate of what people would say (core/prediction_powered.py), beside the
judge's own figure (docs/eyt-metrics.md#judge-error-in-the-intervals-prediction-powered-estimates). Pure.

The inputs, per cell and metric:
- the judge's per-dialogue values: what the leaderboard's mean is taken over (analysis.per_dialogue of the cell's
  dialogue_scores rows; a dialogue without a value is not counted);
- the people's per-dialogue values, made by the same functions from dialogue.human_annotations: the annotators'
  scores averaged per turn x field, each dimension's turn scores weighted by Eq. 4 at the slate's alpha over the
  turns the judge judged (dialogue_scoring.weighting, renormalised exactly as the judge's), completion on FICR's
  0-1 scale and satisfaction 1-5 put on 0-100 (metrics.satisfaction_to_100), then analysis.per_dialogue.

A dialogue is labelled for a metric when it has both values; for a dimension that needs a human score on every
turn the judge judged. A dialogue with some human scores of the field but not all is *partly labelled*: it is not
used (its value would weigh the scored turns differently from the judge's) and is counted. The labelled dialogues
are assumed to be a uniform random sample of the cell's dialogues, which `eyt annotate export` draws; so only
labels imported from its sheets count (the slate's annotation CSV feeds the alignment table only).

PPI inputs: Y = the people's values of the labelled dialogues, Yhat = the judge's values of the same dialogues,
Yhat~ = the judge's values of the cell's other dialogues. A cell shows the corrected figure when it has at least
the slate's `min_human_labels` labelled dialogues, else the judge's figure, with why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eyt_dagster.core import stats
from eyt_dagster.core.explained import Explained, Step
from eyt_dagster.core.prediction_powered import PredictionPoweredMean, prediction_powered_mean
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.annotation_sheet import DIALOGUE_FIELDS, DIALOGUE_TURN
from eyt_dagster.eyt_bench.dialogue_scoring import DIMENSIONS, KEYS, judged_turns, weighting
from eyt_dagster.eyt_bench.metrics import satisfaction_to_100
from eyt_dagster.eyt_bench.table_contracts import JUDGE_CORRECTED_COLUMNS

CELL = ["target", "pool"]
# metric (the leaderboard's column) -> the field people score for it (dialogue.human_annotations `dimension`)
FIELDS: dict[str, str] = {**{d: d for d in DIMENSIONS}, "ficr": "completed", "satisfaction": "satisfaction"}
METRICS: tuple[str, ...] = tuple(FIELDS)
LEVEL = 0.95
CORRECTED, JUDGE_ONLY = "corrected", "judge only"
NO_LABELS = "no human labels"
# the table's columns without what the asset adds (the baseline flags and created_at)
COLUMNS = column_names(JUDGE_CORRECTED_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))


def _annotations(annotations: pd.DataFrame) -> pd.DataFrame:
    """The scored rows from drawn sheets (NaN scores dropped), keys as the pipeline keeps them. Only labels imported
    from a sheet of `eyt annotate export` (a `sheet` id) are used: those dialogues were drawn uniformly at random,
    the one thing the estimate assumes. Rows of the slate's annotation CSV (no sheet) were chosen by whoever made
    the file, so they feed the judge-human alignment table and not the corrections."""
    columns = ["annotator", *KEYS, "turn", "dimension", "score", "sheet"]
    if annotations.empty or "sheet" not in annotations.columns:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "score" else "object") for c in columns})
    scored = annotations[annotations["score"].notna() & annotations["sheet"].notna()][columns]
    return scored.astype({"seed_id": str, "turn": int, "score": float})


def human_dialogue_values(
    annotations: pd.DataFrame, judged: pd.DataFrame, lengths: pd.Series, alpha: float
) -> pd.DataFrame:
    """Per dialogue with a human score: KEYS and each metric's human value (NaN where not every needed score is
    there), computed as the judge's are. `annotations`: dialogue.human_annotations rows (several annotators are
    averaged per turn x field); `judged`: judged_turns; `lengths`: each dialogue's T (dialogue_scores.n_turns)
    indexed by KEYS; `alpha`: the slate's Eq. 4 alpha."""
    scored = _annotations(annotations)
    out = pd.DataFrame(columns=[*KEYS, *METRICS])
    if scored.empty:
        return out
    means = scored.groupby([*KEYS, "turn", "dimension"])["score"].mean().unstack("dimension")
    means = means.reindex(columns=[*DIMENSIONS, *DIALOGUE_FIELDS]).reset_index()
    dialogues = means[KEYS].drop_duplicates()
    # the dimensions: the human turn scores on exactly the judged turns (a judged turn without one is NaN, which
    # leaves the dialogue's weighted score NaN), weighted as the judge's are
    turns = judged.merge(dialogues, on=KEYS).merge(
        means.loc[means["turn"] != DIALOGUE_TURN, [*KEYS, "turn", *DIMENSIONS]], on=[*KEYS, "turn"], how="left"
    )
    weighted = weighting(turns.astype({d: float for d in DIMENSIONS}), lengths, alpha).scores[[*KEYS, *DIMENSIONS]]
    final = means.loc[means["turn"] == DIALOGUE_TURN, [*KEYS, *DIALOGUE_FIELDS]]
    scores = dialogues.merge(weighted, on=KEYS, how="left").merge(final, on=KEYS, how="left")
    scores["satisfaction"] = satisfaction_to_100(scores["satisfaction"].astype(float))
    for d in DIMENSIONS:
        scores[d] = scores[d].astype(float)
    values = scores[KEYS].copy()
    for metric in METRICS:
        values[metric] = per_dialogue(scores, metric).to_numpy(dtype=float)
    return values.sort_values(KEYS).reset_index(drop=True)


def annotator_dialogue_values(
    annotations: pd.DataFrame, judged: pd.DataFrame, lengths: pd.Series, alpha: float
) -> pd.DataFrame:
    """human_dialogue_values of each annotator alone: KEYS, annotator and each metric (for their agreement)."""
    scored = _annotations(annotations)
    parts = [
        human_dialogue_values(rows, judged, lengths, alpha).assign(annotator=str(name))
        for name, rows in scored.groupby("annotator", sort=True)
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*KEYS, "annotator", *METRICS])


@dataclass(frozen=True)
class CellCorrection:
    """One cell x metric: the judge's figure, the people's, the corrected one and which is shown."""

    target: str
    pool: str
    metric: str
    n_dialogues: int  # dialogues with a judge value
    n_labelled: int
    n_partly_labelled: int  # dialogues with some human scores of the field, not all: not used
    n_annotators: int
    annotator_alpha: float
    judge_mean: float
    judge_low: float
    judge_high: float
    people_mean: float
    people_low: float
    people_high: float
    min_human_labels: int | None  # None: not known (the explorer, which reads the stored row's `shown` instead)
    ppi: PredictionPoweredMean | None = field(default=None)  # None with fewer than 2 labelled dialogues

    @property
    def shown(self) -> str:
        enough = self.min_human_labels is not None and self.n_labelled >= self.min_human_labels
        return CORRECTED if self.ppi is not None and enough else JUDGE_ONLY

    @property
    def why(self) -> str:
        if self.shown == CORRECTED:
            return ""
        if self.n_labelled == 0:
            return NO_LABELS
        noun = "dialogue" if self.n_labelled == 1 else "dialogues"
        return f"{self.n_labelled} labelled {noun}, fewer than min_human_labels ({self.min_human_labels})"

    def row(self) -> dict[str, object]:
        p = self.ppi
        nan = math.nan
        corrected = {
            "ppi_lambda": p.lam if p else nan,
            "corrected_mean": p.estimate if p else nan,
            "corrected_se": p.se if p else nan,
            "corrected_low": p.low if p else nan,
            "corrected_high": p.high if p else nan,
            "effective_n": p.effective_n if p else nan,
        }
        shown = self.shown
        figures = (
            (corrected["corrected_mean"], corrected["corrected_low"], corrected["corrected_high"])
            if shown == CORRECTED
            else (self.judge_mean, self.judge_low, self.judge_high)
        )
        return {
            "target": self.target,
            "pool": self.pool,
            "metric": self.metric,
            "n_dialogues": self.n_dialogues,
            "n_labelled": self.n_labelled,
            "n_annotators": self.n_annotators,
            "annotator_alpha": self.annotator_alpha,
            "judge_mean": self.judge_mean,
            "judge_low": self.judge_low,
            "judge_high": self.judge_high,
            "people_mean": self.people_mean,
            "people_low": self.people_low,
            "people_high": self.people_high,
            **corrected,
            "shown": shown,
            "shown_mean": figures[0],
            "shown_low": figures[1],
            "shown_high": figures[2],
            "why": self.why,
        }

    def explained(self) -> Explained:
        """The corrected estimate with its arithmetic (PredictionPoweredMean.explained), or why there is none; with
        how the people's values were made and which figure is shown."""
        label = f"{self.metric} of {self.target} on {self.pool}, corrected by human labels"
        notes = [
            f"human values: the annotators' scores averaged per turn and field, then computed as the judge's "
            f"({_HOW[self.metric]}); a dialogue counts as labelled only when every score it needs is there"
        ]
        if self.min_human_labels is not None:
            notes.append(f"shown: {self.shown}" + (f" ({self.why})" if self.why else ""))
        if self.n_partly_labelled:
            notes.append(f"{self.n_partly_labelled} partly labelled dialogue(s) not used: a needed score is missing")
        if not math.isnan(self.annotator_alpha):
            notes.append(
                f"agreement between the annotators: Krippendorff's alpha (interval) {self.annotator_alpha:.3g}"
            )
        if self.ppi is None:
            steps = (
                Step(f"dialogues with a judge value: {self.n_dialogues}; with a human value too: {self.n_labelled}"),
                Step("fewer than 2 labelled dialogues: no corrected estimate (a variance needs two)"),
            )
            return Explained(label, math.nan, steps, tuple(notes))
        return self.ppi.explained(label).then(notes=tuple(notes))


_HOW = {
    **{d: "Eq. 4 weights at the slate's alpha over the judged turns, on 0-100" for d in DIMENSIONS},
    "ficr": "completion, 1 or 0, on FICR's 0-1 scale",
    "satisfaction": "satisfaction 1-5 put on 0-100",
}


def _alpha(values: pd.DataFrame, labelled: pd.Index, metric: str) -> float:
    """Krippendorff's alpha (interval) between the annotators on the labelled dialogues' values of `metric`."""
    if values.empty or not len(labelled):
        return math.nan
    mine = values[values.set_index(KEYS).index.isin(labelled)]
    matrix = mine.pivot_table(index="annotator", columns=KEYS, values=metric, aggfunc="first", dropna=False)
    return stats.krippendorff_alpha(matrix.to_numpy(dtype=float), "interval")


def cell_corrections(
    scores: pd.DataFrame,
    annotations: pd.DataFrame,
    verdicts: pd.DataFrame,
    intervals: pd.DataFrame,
    *,
    alpha: float,
    min_human_labels: int | None,
) -> list[CellCorrection]:
    """Every cell of `scores` (dialogue.dialogue_scores) x METRICS, in (pool, target, metric) order. `annotations`:
    dialogue.human_annotations; `verdicts`: dialogue.judge_verdicts of the annotated dialogues at least (which turns
    were judged); `intervals`: dialogue.leaderboard_intervals (the judge's figure and interval)."""
    scores = scores.astype({"seed_id": str})
    lengths = scores.set_index(KEYS)["n_turns"].astype("int64")
    judged = judged_turns(verdicts)
    human = human_dialogue_values(annotations, judged, lengths, alpha).set_index(KEYS)
    by_annotator = annotator_dialogue_values(annotations, judged, lengths, alpha)
    scored = _annotations(annotations)
    spans = {
        (str(r["target"]), str(r["pool"]), str(r["metric"])): r
        for r in intervals.to_dict("records")
        if str(r["metric"]) in FIELDS
    }
    out = []
    cells = sorted({(str(t), str(p)) for t, p in scores[CELL].drop_duplicates().itertuples(index=False)}, key=_order)
    for target, pool in cells:
        cell = scores[(scores["target"] == target) & (scores["pool"] == pool)].set_index(KEYS).sort_index()
        for metric in METRICS:
            judge = per_dialogue(cell, metric).dropna()
            mine = human.reindex(judge.index)[metric] if len(human) else pd.Series(np.nan, index=judge.index)
            labelled = mine.dropna().index
            y, yhat = mine[labelled].to_numpy(float), judge[labelled].to_numpy(float)
            rest = judge[~judge.index.isin(labelled)].to_numpy(float)
            touched = scored[
                (scored["target"] == target) & (scored["pool"] == pool) & (scored["dimension"] == FIELDS[metric])
            ]
            touched_keys = pd.MultiIndex.from_frame(touched[KEYS]).unique() if len(touched) else pd.Index([])
            partly = int(touched_keys.isin(judge.index).sum()) - len(labelled) if len(touched_keys) else 0
            annotators = touched[pd.MultiIndex.from_frame(touched[KEYS]).isin(labelled)]["annotator"].nunique()
            ppi = prediction_powered_mean(y, yhat, rest, level=LEVEL) if len(y) >= 2 else None
            span = spans.get((target, pool, metric), {})
            out.append(
                CellCorrection(
                    target=target,
                    pool=pool,
                    metric=metric,
                    n_dialogues=len(judge),
                    n_labelled=len(labelled),
                    n_partly_labelled=max(partly, 0),
                    n_annotators=int(annotators) if len(touched) else 0,
                    annotator_alpha=_alpha(by_annotator, labelled, metric),
                    judge_mean=_number(span.get("value")),
                    judge_low=_number(span.get("ci_low")),
                    judge_high=_number(span.get("ci_high")),
                    people_mean=ppi.people_mean if ppi else (float(y[0]) if len(y) else math.nan),
                    people_low=ppi.people_low if ppi else math.nan,
                    people_high=ppi.people_high if ppi else math.nan,
                    min_human_labels=min_human_labels,
                    ppi=ppi,
                )
            )
    return out


def _order(cell: tuple[str, str]) -> tuple[str, str]:
    return cell[1], cell[0]


def _number(value: object) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)  # type: ignore[arg-type]


def corrected_table(corrections: list[CellCorrection]) -> pd.DataFrame:
    """The dialogue.judge_corrected rows (COLUMNS) of `cell_corrections`."""
    return pd.DataFrame([c.row() for c in corrections], columns=list(COLUMNS))
