"""SpeechEQ audio stages (paper §2.3): TTS clips, acoustic contrast scores with regeneration, and the
evaluation items that passed. One step per subscale produces all three tables, since whether a pair is
regenerated depends on its contrast score."""

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, AssetOut, Failure, Output, multi_asset

from assets._output import explorer_link, now_utc, table_output
from assets._progress import step_progress
from assets.speech_eq.partitions import subscale_partitions
from eyt_dagster.core import explorer_links
from eyt_dagster.speech_eq.audio_tables import AudioRows, imported_subscale, synthesise_subscale
from eyt_dagster.speech_eq.contrast import ContrastThresholds
from eyt_dagster.speech_eq.import_verdict import import_verdict, reason_of
from resources.audio.audio_features import clip_features
from resources.audio.tts import store_clip
from resources.datasets.speech_release import import_released
from resources.models.model_access import ModelAccess, SlateAccess
from resources.roles.speech_roles import SpeechRoles
from resources.storage.data_paths import relative_path_columns

LOGIC_VERSION = "1"
IMPORTED_ENGINE = "imported"  # the engine name of released clips, in tts_clips and in speech.contrast_by_engine


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
        "import_skips": _out("The released item folders an import skipped, with the reason (none when generated)."),
    },
    ins={
        name: AssetIn(key=["speech", name])
        for name in ("scenarios", "dialogues", "tone_instructions", "tone_selection")
    },
    partitions_def=subscale_partitions,
)
def speech_audio(
    context: AssetExecutionContext,
    slate: SlateAccess,
    models: ModelAccess,
    scenarios: pd.DataFrame,
    dialogues: pd.DataFrame,
    tone_instructions: pd.DataFrame,
    tone_selection: pd.DataFrame,
) -> Iterator[Output[pd.DataFrame]]:
    """Synthesise, score and filter the items of one subscale."""
    slug, settings = context.partition_key, slate.slate.speech
    data_dir = models.data_dir
    if settings.source == "released":
        root = Path(str(settings.released_path))
        imported = settings.thresholds_for(IMPORTED_ENGINE)
        yield from _import_subscale(context, root, slug, imported, settings.max_skipped_fraction)
        return
    rows = AudioRows()
    progress = step_progress(
        context,
        models.data_dir,
        "scenarios",
        lambda n, total: f"{slug}: {n} of {total} scenarios synthesised, {len(rows.clips)} clips so far",
        every=5,
        total=len(scenarios),
    )
    with progress as on_done:  # the count is there before the voice is loaded
        tts = SpeechRoles(slate.slate, models).tts()
        thresholds = settings.thresholds_for(getattr(tts, "name", "tts"))
        synthesise_subscale(
            rows,
            scenarios,
            dialogues,
            tone_instructions,
            tone_selection,
            synthesize=tts.synthesize,
            voice_for=partial(tts.voice_for, language=settings.language),
            store=lambda wav: store_clip(data_dir, wav),
            features=clip_features,
            thresholds=thresholds,
            on_done=on_done,
            language=settings.language,
        )
    now = now_utc()

    def table(
        data: list[dict[str, Any]],
    ) -> pd.DataFrame:  # clip paths relative to the data directory (docs/storage.md)
        return relative_path_columns(pd.DataFrame(data), data_dir).assign(subscale=slug, created_at=now)

    engine = getattr(tts, "name", "tts")
    yield Output(**_with_meta(table(rows.clips), "tts_clips", engine=engine))
    yield Output(
        **_with_meta(
            table(rows.contrasts),
            "contrast_scores",
            regenerated_pairs=rows.regenerated_pairs,
            **explorer_link(explorer_links.speech_build_path(subscale=slug)),
        )
    )
    if rows.incomplete:
        context.log.warning(
            f"{slug}: {len(rows.incomplete)} scenario(s) lack a dialogue or tones and were skipped: {rows.incomplete}"
        )
    yield Output(
        **_with_meta(
            table(rows.items),
            "eq_items",
            discarded=rows.discarded,
            skipped_incomplete=len(rows.incomplete),
            **explorer_link(explorer_links.speech_path(subscale=slug)),
        )
    )
    yield Output(**_with_meta(_skips([], slug, now), "import_skips"))


def _import_subscale(
    context: AssetExecutionContext, root: Path, slug: str, thresholds: ContrastThresholds, max_skipped: float
) -> Iterator[Output[pd.DataFrame]]:
    """The released layout's items of one subscale, as eq_items and tts_clips rows, their test-turn pairs
    scored (recorded, not used to drop published items). Bad folders are reported and skipped, never
    half-imported."""
    report = import_released(root)
    rows = imported_subscale(report.items, report.skipped, slug, features=clip_features, thresholds=thresholds)
    for folder, why in rows.skipped_folders:
        context.log.warning(f"skipped {folder}: {why}")
    verdict = import_verdict(slug, rows.scenarios, rows.skipped_folders, max_skipped)
    if not verdict.ok:  # nothing to evaluate, or too much of it lost: the run fails, saying why in one line
        raise Failure(description=verdict.text, metadata={"imported": verdict.imported, "skipped": verdict.skipped})
    if verdict.skipped:
        context.log.warning(verdict.text)
    now = now_utc()

    def table(data: list[dict[str, Any]]) -> pd.DataFrame:
        return pd.DataFrame(data).assign(subscale=slug, created_at=now)

    yield Output(**_with_meta(table(rows.clips), "tts_clips"))
    yield Output(**_with_meta(table(rows.contrasts), "contrast_scores"))
    imported = {
        "imported_from": str(root),
        "skipped_folders": len(rows.skipped_folders),
        "import": verdict.text,
        # a partial import is a line of `eyt run`'s summary (eyt_dagster/ops/launch.py reads "notice")
        **({"notice": verdict.text} if verdict.skipped else {}),
    }
    yield Output(**_with_meta(table(rows.items), "eq_items", **imported))
    yield Output(**_with_meta(_skips(rows.skipped_folders, slug, now), "import_skips", **{"import": verdict.text}))


def _skips(skipped: list[tuple[str, str]], slug: str, now: pd.Timestamp) -> pd.DataFrame:
    """speech.import_skips rows: each skipped folder and why (the reason without the folder's name)."""
    rows = [{"folder": folder, "reason": reason_of(folder, why)} for folder, why in skipped]
    return pd.DataFrame(rows, columns=["folder", "reason"]).assign(subscale=slug, created_at=now)


def _with_meta(df: pd.DataFrame, name: str, **metadata: Any) -> dict[str, Any]:
    out = table_output(df, **metadata)
    return {"value": out.value, "output_name": name, "metadata": out.metadata, "data_version": out.data_version}
