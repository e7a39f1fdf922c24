"""The code location `eyt_dagster`: the one Definitions object (assets, jobs, resources), and the composition
root: the only module that sees both benchmarks' assets, the resources, and the warehouse's table layouts.

Settings come from the environment when the location loads: `EYT_DATA_DIR` (default ./data) holds the
warehouse `eyt.duckdb` and the call cache; `EYT_SLATE` names the slate (default: the packaged one). The slate is
read here too: each asset's code version includes a hash of the slate settings it reads, and the per-target
and per-pool settings are observable source assets (eyt_dagster/settings_sources.py, docs/operations.md).
"""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from assets.eyt_bench import checks as eyt_checks
from assets.eyt_bench.chat_seeds import chat_seeds
from assets.eyt_bench.dialogue_scores import dialogue_scores
from assets.eyt_bench.dialogue_turns import dialogue_turns
from assets.eyt_bench.eyt_analysis import (
    alpha_sensitivity,
    leaderboard_intervals,
    pairwise_comparisons,
    persona_source_comparison,
    rank_intervals,
    simulator_audit_effect,
    thinking_ablation,
    trajectory,
    turn_curves,
)
from assets.eyt_bench.eyt_leaderboard import leaderboard
from assets.eyt_bench.intent_similarity import intent_similarity
from assets.eyt_bench.judge_calibration import (
    cross_judge_ablation,
    cross_judge_final_verdicts,
    cross_judge_verdicts,
    human_alignment,
    human_annotations,
    judge_agreement,
)
from assets.eyt_bench.judge_verdicts import final_intent_verdicts, judge_verdicts
from assets.eyt_bench.language_consistency import language_consistency
from assets.eyt_bench.noise_floor import noise_floor, pass_k
from assets.eyt_bench.persona_pool import persona_pool
from assets.eyt_bench.repeats import repeat_dialogues, repeat_scores
from assets.eyt_bench.simulator_audit import simulator_audit
from assets.eyt_voice import dialogues as voice_dialogues
from assets.eyt_voice import reports as voice_reports
from assets.eyt_voice import scoring as voice_scoring
from assets.reports.model_cards import model_cards
from assets.reports.paper_tables import paper_tables
from assets.speech_eq import checks as speech_checks
from assets.speech_eq.audio_stages import speech_audio
from assets.speech_eq.seq_reports import seq_breakdown, seq_human_alignment, seq_leaderboard
from assets.speech_eq.slm_choices import slm_choices
from assets.speech_eq.speech_build_report import speech_build_report
from assets.speech_eq.text_stages import dialogues, scenarios, tone_instructions, tone_selection
from eyt_dagster import table_registry
from eyt_dagster.automation import automation_sensor, outside_slate, slate_keys, with_automation
from eyt_dagster.jobs import JOBS
from eyt_dagster.settings_sources import SETTINGS_ASSETS, TrackedSlate, track_settings
from eyt_dagster.slate import Slate, load_slate, slate_path_from_env
from resources.models.model_access import EmbeddingAccess, ModelAccess, ReportAccess
from resources.storage.warehouse import WarehouseIOManager, data_dir, warehouse_path
from resources.storage.warehouse_catalog import Catalog

# The asset functions as written, per package; `assets_for(slate)` adds the slate's settings to them.
EYT_BENCH_ASSETS = [
    persona_pool,
    chat_seeds,
    dialogue_turns,
    judge_verdicts,
    final_intent_verdicts,
    intent_similarity,
    simulator_audit,
    language_consistency,
    dialogue_scores,
    repeat_dialogues,
    repeat_scores,
    leaderboard,
    leaderboard_intervals,
    pairwise_comparisons,
    rank_intervals,
    simulator_audit_effect,
    noise_floor,
    pass_k,
    alpha_sensitivity,
    turn_curves,
    trajectory,
    persona_source_comparison,
    thinking_ablation,
    judge_agreement,
    cross_judge_verdicts,
    cross_judge_final_verdicts,
    cross_judge_ablation,
    human_annotations,
    human_alignment,
]
SPEECH_EQ_ASSETS = [
    scenarios,
    dialogues,
    tone_instructions,
    tone_selection,
    speech_audio,
    speech_build_report,
    slm_choices,
    seq_leaderboard,
    seq_breakdown,
    seq_human_alignment,
]
EYT_VOICE_ASSETS = [
    voice_dialogues.voiced_turns,
    voice_dialogues.text_turns,
    voice_dialogues.prosody_probe,
    voice_scoring.judge_verdicts,
    voice_scoring.final_intent_verdicts,
    voice_scoring.dialogue_scores,
    voice_reports.voice_gap,
    voice_reports.asr_errors,
    voice_reports.prosody_effect,
]
REPORT_ASSETS = [model_cards, paper_tables]  # both benchmarks
BASE_ASSETS = [*EYT_BENCH_ASSETS, *SPEECH_EQ_ASSETS, *EYT_VOICE_ASSETS, *REPORT_ASSETS]
CHECKS = [*eyt_checks.CHECKS, *speech_checks.CHECKS]


class Warehouse(WarehouseIOManager):
    """The warehouse IO manager of this code location: it hands the warehouse every table's contract and each
    partitioned table's partition columns (read from the asset graph below, for migrating an older warehouse)."""

    slate_path: str = ""

    def catalog(self) -> Catalog:
        return warehouse_catalog()

    def partitions_kept(self):
        """A report reads the partitions of the slate's targets and pools only: a target or pool dropped from the
        slate keeps its partitions (until `eyt remove-target`) but leaves the leaderboards and summaries."""
        if not self.slate_path:
            return None
        keys = slate_keys(load_slate(self.slate_path))
        return lambda pdef, key: pdef is None or not outside_slate(pdef, str(key), keys)


def warehouse_catalog() -> Catalog:
    """This code location's tables, as the warehouse needs them (resources/storage/warehouse_catalog.py)."""
    return table_registry.catalog(lambda: table_registry.partition_columns(defs.resolve_asset_graph().asset_nodes))


def assets_for(slate: Slate) -> list:
    """Every asset, with the slate's settings as tracked inputs and the automation condition that keeps the slate's
    partitions up to date (docs/refresh.md), and the settings source assets."""
    return [
        *SETTINGS_ASSETS,
        *with_automation(track_settings(BASE_ASSETS, slate), slate_keys(slate), slate.attempts_per_day),
    ]


def build_resources(slate_path: str | None = None) -> dict[str, object]:
    """Each asset takes the resources it touches (resources/models/model_access.py): the slate, the models, the
    embeddings, the reports' cache and files; the warehouse is the IO manager."""
    path, data = str(slate_path or slate_path_from_env()), str(data_dir())
    return {
        "slate": TrackedSlate(slate_path=path),
        "models": ModelAccess(data_dir=data),
        "embeddings": EmbeddingAccess(data_dir=data),
        "reports": ReportAccess(data_dir=data),
        "io_manager": Warehouse(database=str(warehouse_path()), slate_path=path),
    }


def build_defs(slate_path: str | None = None) -> Definitions:
    """The code location for a slate file (default: EYT_SLATE); a slate that does not validate fails here."""
    path = str(slate_path or slate_path_from_env())
    return Definitions(
        assets=assets_for(load_slate(path)),
        asset_checks=CHECKS,
        jobs=JOBS,
        sensors=[automation_sensor()],
        resources=build_resources(path),
        executor=in_process_executor,
    )


defs = build_defs()
ASSETS = list(defs.assets or [])
