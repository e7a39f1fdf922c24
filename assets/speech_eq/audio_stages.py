"""SpeechEQ audio stages (paper §2.3): TTS clips, acoustic contrast scores with regeneration, and the
evaluation items that passed. One step per subscale produces all three tables, since whether a pair is
regenerated depends on its contrast score."""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, AssetOut, Output, multi_asset

from assets._output import now_utc, progress_logger, table_output
from assets.speech_eq.partitions import subscale_partitions
from eyt_dagster.speech_eq.build import build_item, contrast_row
from eyt_dagster.speech_eq.contrast import ContrastThresholds, contrast_score
from eyt_dagster.speech_eq.item_types import Line, Scenario
from eyt_dagster.speech_eq.release_format import clip_rows, item_rows
from eyt_dagster.speech_eq.vocabulary import TEST_TURNS
from resources.audio_features import clip_features
from resources.data_paths import relative_path_columns
from resources.model_access import ModelAccess
from resources.speech_release import import_released
from resources.speech_roles import SpeechRoles
from resources.tts import store_clip

LOGIC_VERSION = "1"


def _out(description: str) -> AssetOut:
    return AssetOut(
        key_prefix=["speech"],
        group_name="speech",
        description=description,
        metadata={"partition_expr": "subscale"},
        code_version=LOGIC_VERSION,
    )


@multi_asset(
    outs={
        "tts_clips": _out("Every synthesised clip, attempts included: turn, role, voice, instruction, strength, path."),
        "contrast_scores": _out("Every scored test-turn pair: the six feature gaps, points and total (0-8)."),
        "eq_items": _out("One row per item whose test turns both reached the pass score: its clips, texts, tones."),
    },
    ins={
        name: AssetIn(key=["speech", name])
        for name in ("scenarios", "dialogues", "tone_instructions", "tone_selection")
    },
    partitions_def=subscale_partitions,
)
def speech_audio(
    context: AssetExecutionContext,
    eyt: ModelAccess,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
    tone_selection: pd.DataFrame,
):
    """Synthesise, score and filter the items of one subscale."""
    slug, settings = context.partition_key, eyt.slate.speech
    thresholds, data_dir = settings.contrast, eyt.data_dir
    if settings.source == "released":
        yield from _import_subscale(context, Path(str(settings.released_path)), slug, thresholds)
        return
    tts = SpeechRoles(eyt).tts()
    context_tones = tone_instructions[tone_instructions["accepted"] & (tone_instructions["persona_kind"] == "context")]
    if "accepted" in dialogues.columns:  # rejected dialogue versions stay in the table as a record only
        dialogues = dialogues[dialogues["accepted"]]
    clips: list[dict] = []
    contrasts: list[dict] = []
    items: list[dict] = []
    skipped: list[str] = []
    report = progress_logger(
        context, lambda n, total: f"{slug}: {n} of {total} scenarios synthesised, {len(clips)} clips so far", every=5
    )
    for n, row in enumerate(scenarios.itertuples(), start=1):
        sid = row.scenario_id
        scenario = Scenario.model_validate_json(row.scenario_json)
        lines = [
            Line(turn=int(r.turn), speaker=int(r.speaker), text=r.text)
            for r in dialogues[dialogues["scenario_id"] == sid].sort_values("turn").itertuples()
        ]
        ctx = {int(r.turn): r.instruction for r in context_tones[context_tones["scenario_id"] == sid].itertuples()}
        picks = tone_selection[tone_selection["scenario_id"] == sid]
        tests = {int(r.turn): (r.resonant_instruction, r.dissonant_instruction) for r in picks.itertuples()}
        if len(lines) != 6 or set(ctx) != {1, 2, 3, 5} or set(tests) != {4, 6}:
            skipped.append(sid)  # an earlier stage failed for this scenario; its error is in that stage's metadata
            continue
        result = build_item(
            sid,
            scenario,
            lines,
            ctx,
            tests,
            synthesize=tts.synthesize,
            voice_for=tts.voice_for,
            store=lambda wav: store_clip(data_dir, wav),
            features=clip_features,
            thresholds=thresholds,
        )
        clips += result.clips
        contrasts += result.contrasts
        if result.item:
            items.append(
                {**item_rows(result.item), "turn4_contrast": result.composite[4], "turn6_contrast": result.composite[6]}
            )
        report(n, len(scenarios))
    now = now_utc()
    # clip paths are stored relative to the data directory, so it can be moved (docs/storage.md)
    frames = {
        name: relative_path_columns(pd.DataFrame(rows), data_dir).assign(subscale=slug, created_at=now)
        for name, rows in (("tts_clips", clips), ("contrast_scores", contrasts), ("eq_items", items))
    }
    regenerated = int((frames["contrast_scores"]["attempt"] > 0).sum()) if contrasts else 0
    yield Output(**_with_meta(frames["tts_clips"], "tts_clips", engine=getattr(tts, "name", "tts")))
    yield Output(**_with_meta(frames["contrast_scores"], "contrast_scores", regenerated_pairs=regenerated))
    if skipped:
        context.log.warning(f"{slug}: {len(skipped)} scenario(s) lack a dialogue or tones and were skipped: {skipped}")
    yield Output(
        **_with_meta(
            frames["eq_items"],
            "eq_items",
            discarded=len(scenarios) - len(items) - len(skipped),
            skipped_incomplete=len(skipped),
        )
    )


def _import_subscale(context: AssetExecutionContext, root: Path, slug: str, thresholds: ContrastThresholds):
    """The released layout's items of one subscale, as eq_items and tts_clips rows; their test-turn pairs are
    scored with the same contrast filter (recorded, not used to drop published items). Bad folders are
    reported and skipped, never half-imported."""
    report = import_released(root)
    items = [item for item in report.items if item.subscale == slug]
    skipped = [(folder, why) for folder, why in report.skipped if f"/{slug}/" in f"/{folder}/"]
    for folder, why in skipped:
        context.log.warning(f"skipped {folder}: {why}")
    clips, contrasts = [], []
    for item in items:
        for row in clip_rows(item):
            clips.append(
                {
                    "scenario_id": item.dataset_id,
                    "turn": row["turn"],
                    "role": row["role"],
                    "attempt": 0,
                    "speaker": row["speaker"],
                    "voice": None,
                    "text": row["text"],
                    "instruction": row["tone_description"],
                    "strength": None,
                    "engine": "imported",
                    "duration_s": None,
                    "path": row["path"],
                }
            )
        for turn in TEST_TURNS:
            score = contrast_score(
                clip_features(item.clip(turn, "high").path), clip_features(item.clip(turn, "low").path), thresholds
            )
            contrasts.append(contrast_row(item.dataset_id, turn, 0, None, score))
    totals = {(c["scenario_id"], c["turn"]): c["total"] for c in contrasts}
    rows = [
        {
            **item_rows(item),
            "turn4_contrast": totals[(item.dataset_id, 4)],
            "turn6_contrast": totals[(item.dataset_id, 6)],
        }
        for item in items
    ]
    now = now_utc()
    for name, data in (("tts_clips", clips), ("contrast_scores", contrasts), ("eq_items", rows)):
        extra = {"imported_from": str(root), "skipped_folders": len(skipped)} if name == "eq_items" else {}
        yield Output(**_with_meta(pd.DataFrame(data).assign(subscale=slug, created_at=now), name, **extra))


def _with_meta(df: pd.DataFrame, name: str, **metadata) -> dict:
    out = table_output(df, **metadata)
    return {"value": out.value, "output_name": name, "metadata": out.metadata, "data_version": out.data_version}
