"""Judge calibration tables (paper §4.9, Tables 9, 14, 15): ensemble agreement, the cross-judge ablation
and alignment with human annotations."""

from importlib import resources as importlib_resources
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, Output, asset

from assets._asset_args import AssetPlace
from assets._output import now_utc, stats_metadata, table_output
from assets._progress import PROGRESS_EVERY, step_progress
from eyt_dagster.core.baseline_flags import baseline_note, flag_targets
from eyt_dagster.eyt_bench.annotation_import import combine_annotations, current_labels
from eyt_dagster.eyt_bench.annotation_sheet import DIGESTED_COLUMNS, dialogue_digests
from eyt_dagster.eyt_bench.calibration import ABLATION_COLUMNS, ablation_table, agreement_table, cross_judge_sample
from eyt_dagster.eyt_bench.dialogue_scoring import turn_dimension_scores
from eyt_dagster.eyt_bench.human_alignment import DIMENSIONS, alignment_table, read_annotations
from eyt_dagster.eyt_bench.judging import (
    FINAL_PROMPT_HASH,
    TURN_PROMPT_HASH,
    Dialogue,
    finished_dialogues,
    judge_stats,
    run_judges,
    verdict_calls,
)
from resources.models.model_access import ModelAccess, ReportAccess, SlateAccess
from resources.roles.eyt_roles import EytRoles
from resources.storage.annotation_labels import read_manifest, read_store
from resources.storage.warehouse import read_partition

LOGIC_VERSION = "1"
_REPORT: AssetPlace = dict(key_prefix=["dialogue"], group_name="reports")


def _ins(*names: str) -> dict[str, AssetIn]:
    return {name: AssetIn(key=["dialogue", name]) for name in names}


# .1: alpha from the cells' summed coincidence matrices (the same with two or three judges; with more, the last bits
# of a float can differ from one matrix over all units)
@asset(**_REPORT, ins=_ins("judge_verdicts", "final_intent_verdicts"), code_version=f"{LOGIC_VERSION}.1")
def judge_agreement(
    slate: SlateAccess, reports: ReportAccess, judge_verdicts: pd.DataFrame, final_intent_verdicts: pd.DataFrame
) -> Output[pd.DataFrame]:
    """How far the slate's judges agree: Krippendorff's alpha per dimension and the share of dialogues
    whose completion vote was unanimous (NaN with a single judge)."""
    df = agreement_table(judge_verdicts, final_intent_verdicts, store=reports.cache)
    df["judges"] = ", ".join(j.id for j in slate.slate.judges)
    df["created_at"] = now_utc()
    return table_output(df, judges=df["judges"].iloc[0] if len(df) else "")


def _sampled_dialogues(
    slate: SlateAccess, scores: pd.DataFrame, turns: pd.DataFrame, seeds: pd.DataFrame
) -> list[Dialogue]:
    sample = cross_judge_sample(scores, slate.slate.cross_judge_dialogues, slate.slate.seed)
    keep = sample.set_index(["target", "pool", "seed_id"]).index
    chosen = turns[turns.set_index(["target", "pool", "seed_id"]).index.isin(keep)]
    return finished_dialogues(chosen, seeds)


def _replacement_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    scores: pd.DataFrame,
    turns: pd.DataFrame,
    seeds: pd.DataFrame,
    *,
    final: bool,
) -> Output[pd.DataFrame]:
    named = slate.slate.replacement_judge is not None
    dialogues = _sampled_dialogues(slate, scores, turns, seeds) if named else []
    if not named:
        context.log.info("the slate names no replacement_judge; the cross-judge tables are empty")
    what = "final verdicts" if final else "turn verdicts"
    # the count is there before the judge is built (none without a replacement judge: no line of its own)
    progress = step_progress(
        context,
        models.data_dir,
        what,
        lambda done, total: f"replacement judge, {what}: {done} of {total} done",
        every=PROGRESS_EVERY * (1 if final else 10),
        total=verdict_calls(1 if named else 0, dialogues, final=final),
    )
    prompt = FINAL_PROMPT_HASH if final else TURN_PROMPT_HASH
    with progress as on_done:
        judge = EytRoles(slate.slate, models).replacement_judge(context.run_id)
        judges = [judge] if judge else []
        df = run_judges(slate.slate, judges, dialogues, final=final, prompt=prompt, on_done=on_done)
    df["created_at"] = now_utc()
    return table_output(
        df,
        replacement_judge=judge.model_id if judge else "none",
        sampled_dialogues=len(dialogues),
        **stats_metadata("judge", judge_stats(df)),
    )


_CROSS_INS = _ins("dialogue_scores", "dialogue_turns", "chat_seeds")


@asset(**_REPORT, ins=_CROSS_INS, code_version=f"{LOGIC_VERSION}-{TURN_PROMPT_HASH}")
def cross_judge_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    dialogue_scores: pd.DataFrame,
    dialogue_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """The replacement judge's per-turn scores on a stratified, seeded subsample of dialogues (only the
    replacement judge is called; the primary verdicts are reused)."""
    return _replacement_verdicts(context, slate, models, dialogue_scores, dialogue_turns, chat_seeds, final=False)


@asset(**_REPORT, ins=_CROSS_INS, code_version=f"{LOGIC_VERSION}-{FINAL_PROMPT_HASH}")
def cross_judge_final_verdicts(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    dialogue_scores: pd.DataFrame,
    dialogue_turns: pd.DataFrame,
    chat_seeds: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """The replacement judge's final-intent verdicts on the same subsample."""
    return _replacement_verdicts(context, slate, models, dialogue_scores, dialogue_turns, chat_seeds, final=True)


@asset(
    **_REPORT,
    code_version=f"{LOGIC_VERSION}.1",  # .1: mean_abs_delta column
    ins=_ins(
        "dialogue_scores",
        "judge_verdicts",
        "final_intent_verdicts",
        "cross_judge_verdicts",
        "cross_judge_final_verdicts",
    ),
)
def cross_judge_ablation(
    slate: SlateAccess,
    dialogue_scores: pd.DataFrame,
    judge_verdicts: pd.DataFrame,
    final_intent_verdicts: pd.DataFrame,
    cross_judge_verdicts: pd.DataFrame,
    cross_judge_final_verdicts: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Paper Table 14: replacement minus primary judge per dimension and satisfaction (0-100) on the
    subsample, and whether each pool's target ranking survives (Kendall tau, Spearman rho)."""
    sample = cross_judge_sample(dialogue_scores, slate.slate.cross_judge_dialogues, slate.slate.seed)
    if cross_judge_verdicts.empty:
        df = pd.DataFrame(columns=ABLATION_COLUMNS)
    else:
        df = ablation_table(
            sample,
            (judge_verdicts, final_intent_verdicts),
            (cross_judge_verdicts, cross_judge_final_verdicts),
            slate.slate.judge_combine,
        )
    replacement = slate.slate.replacement_judge
    df["primary_judges"] = ", ".join(j.id for j in slate.slate.judges)
    df["replacement_judge"] = replacement.id if replacement else None
    df["created_at"] = now_utc()
    return table_output(df, sampled_dialogues=len(sample))


def current_imported(data_dir: str, warehouse: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The import store's labels whose dialogues are still the ones their sheets showed, and the others
    (annotation_import.current_labels, against the warehouse's dialogue_turns of the labelled dialogues)."""
    labels = read_store(data_dir)
    if labels.empty:
        return labels, labels
    manifests = {str(s): read_manifest(data_dir, str(s)) for s in labels["sheet"].dropna().unique()}
    keys = labels[["target", "pool", "seed_id"]].drop_duplicates().astype(str)
    # only the labelled cells' rows are read (the filter reaches the Parquet scan)
    turns = read_partition(
        "dialogue.dialogue_turns", {"target": sorted(set(keys["target"])), "pool": sorted(set(keys["pool"]))}, warehouse
    )
    if len(turns):
        turns = turns[list(DIGESTED_COLUMNS)].astype({"seed_id": str}).merge(keys, on=["target", "pool", "seed_id"])
    return current_labels(labels, manifests, dialogue_digests(turns))


def annotations_path(setting: str | None) -> Path | None:
    """The slate's `human_annotations`: a CSV path, 'example' for the shipped example, or None."""
    if setting == "example":
        return Path(str(importlib_resources.files("eyt_dagster") / "fixtures" / "human_annotations_example.csv"))
    return Path(setting) if setting else None


# .1: plus the labels imported with `eyt annotate import` (the data directory's label store) and their sheet
# .2: an imported label whose dialogue was played again since its sheet was drawn (or is gone) is left out
@asset(**_REPORT, code_version=f"{LOGIC_VERSION}.2", deps=[["dialogue", "dialogue_turns"]])
def human_annotations(
    context: AssetExecutionContext, slate: SlateAccess, reports: ReportAccess
) -> Output[pd.DataFrame]:
    """Human scores: the CSV the slate names (format: eyt_dagster/eyt_bench/human_alignment.py; rows with an empty
    score are kept as missing) and every label imported with `eyt annotate import` (docs/annotation.md). An
    imported label replaces a CSV row of the same annotator, turn-cell and field. An imported label counts only
    while its dialogue is the one its sheet showed (the sheet's manifest holds each dialogue's digest): a dialogue
    played again since, or gone, leaves its labels out, logged and counted. Empty when there are neither."""
    path = annotations_path(slate.slate.human_annotations)
    if path is None:
        context.log.info("the slate names no human_annotations file")
        csv = pd.DataFrame(columns=["annotator", "target", "pool", "seed_id", "turn", "dimension", "score"])
    else:
        csv = read_annotations(path)
    csv["sheet"] = None
    csv["source_file"] = str(path) if path else None
    imported, stale = current_imported(reports.data_dir, reports.warehouse)
    if len(stale):
        gone = stale[["target", "pool", "seed_id"]].drop_duplicates()
        context.log.warning(
            f"{len(stale)} imported label(s) of {len(gone)} dialogue(s) left out: the dialogues were played again "
            "since their sheet was drawn, or are gone (export a new sheet for them: docs/annotation.md)"
        )
    df, replaced = combine_annotations(csv, imported)
    if replaced:
        context.log.info(f"{replaced} row(s) of {path} replaced by imported labels of the same annotator and cell")
    df["created_at"] = now_utc()
    return table_output(
        df,
        annotations_file=str(path) if path else "none",
        imported_labels=len(imported),
        stale_imported_labels=len(stale),
        missing_scores=int(df["score"].isna().sum()),
    )


@asset(**_REPORT, ins=_ins("judge_verdicts", "human_annotations"), code_version=LOGIC_VERSION)
def human_alignment(
    context: AssetExecutionContext,
    slate: SlateAccess,
    reports: ReportAccess,
    judge_verdicts: pd.DataFrame,
    human_annotations: pd.DataFrame,
) -> Output[pd.DataFrame]:
    """Paper Table 15: judge vs human annotations per dimension (r, rho, bias, kappas, alpha, tolerance
    bands, early/late lenience) on the per-turn dimensions; the whole dialogue's fields are left out."""
    turns = human_annotations[human_annotations["dimension"].isin(DIMENSIONS)]  # not the whole dialogue's fields
    if turns.empty:
        df = pd.DataFrame(columns=["dimension", "n_cells"])
    else:
        annotated = turns.astype({"seed_id": str}).set_index(["target", "pool", "seed_id"]).index
        keep = judge_verdicts.astype({"seed_id": str}).set_index(["target", "pool", "seed_id"]).index.isin(annotated)
        judge = turn_dimension_scores(judge_verdicts[keep], slate.slate.judge_combine)  # the annotated dialogues'
        df = alignment_table(turns, judge, store=reports.cache)
        context.log.info(baseline_note(flag_targets(turns.drop_duplicates("target"), slate.slate)))
    df["judges"] = ", ".join(j.id for j in slate.slate.judges)
    df["created_at"] = now_utc()
    return table_output(df)
