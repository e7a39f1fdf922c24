"""The definitions tier: the code location loads and every asset, table contract and job is wired as the
project expects. Nothing is materialised, so this runs in seconds (`make test-fast` includes it)."""

from __future__ import annotations

import pandas as pd
import pytest
from dagster import AssetKey, Definitions, check_dagster_type

from eyt_dagster.core.storage_types import conform
from eyt_dagster.table_registry import TABLE_COLUMNS

pytestmark = pytest.mark.unit

GROUPS = {"dialogue", "speech", "reports", "voice", "voice_reports"}
JOB_NAMES = {
    "eyt_pools",
    "eyt_dialogues",
    "eyt_reports",
    "eyt_voice",
    "voice_reports",
    "speech_build",
    "speech_eval",
    "speech_reports",
    "seq_reports",
    "unified_reports",
}
# The settings the slate feeds into the graph (observable source assets, eyt_dagster/settings_sources.py).
SETTINGS_SOURCES = {
    "dialogue/pool_settings",
    "dialogue/target_settings",
    "speech/target_settings",
    "voice/target_settings",
}


@pytest.fixture(scope="module")
def defs(tmp_path_factory) -> Definitions:
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("EYT_DATA_DIR", str(tmp_path_factory.mktemp("data")))
        monkeypatch.delenv("EYT_SLATE", raising=False)  # the packaged default slate
        from eyt_dagster.definitions import build_defs

        yield build_defs()


def _materialised(defs: Definitions) -> dict[AssetKey, object]:
    graph = defs.resolve_asset_graph()
    return {node.key: node for node in graph.asset_nodes if node.is_materializable}


def _output_type(defs: Definitions, key: AssetKey):
    assets_def = defs.resolve_asset_graph().get(key).assets_def
    return assets_def.op.outs[assets_def.get_output_name_for_asset_key(key)].dagster_type


def test_the_definitions_load_with_every_asset_and_job(defs):
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    tables = {key.replace("/", ".") for key in keys} - {k.replace("/", ".") for k in SETTINGS_SOURCES}
    assert {k for k in keys if graph.get(AssetKey.from_user_string(k)).is_observable} == SETTINGS_SOURCES
    # every table declares its columns (eyt_dagster.table_registry.py), and every contract names a table
    assert tables == set(TABLE_COLUMNS), (
        f"without a contract: {sorted(tables - set(TABLE_COLUMNS))}; "
        f"a contract but no asset: {sorted(set(TABLE_COLUMNS) - tables)}"
    )
    assert {job.name for job in defs.jobs} == JOB_NAMES
    assert len(list(defs.asset_checks or [])) > 0


def test_every_asset_has_a_group_a_description_and_a_code_version(defs):
    graph = defs.resolve_asset_graph()
    for node in graph.asset_nodes:
        name = node.key.to_user_string()
        assert node.group_name in GROUPS, f"{name}: group {node.group_name!r}"
        assert node.description and node.description.strip(), f"{name} has no description"
        if node.is_materializable:
            assert node.code_version, f"{name} has no code version"


def test_declared_tables_and_their_dagster_types_agree(defs):
    """A table with declared columns is stored with exactly those; where its asset also has a dagster-pandas
    type, an empty table with the declared columns passes that type, and one lacking a column it checks fails."""
    typed = 0
    for key in _materialised(defs):
        table = ".".join(key.path)
        dagster_type = _output_type(defs, key)
        if table not in TABLE_COLUMNS:
            assert dagster_type.display_name in ("DataFrame", "Any"), f"{table}: a type check but no declared columns"
            continue
        if dagster_type.display_name in ("DataFrame", "Any"):  # stored typed, checked by the asset checks only
            continue
        typed += 1
        empty = conform(pd.DataFrame(), TABLE_COLUMNS[table], table)
        assert check_dagster_type(dagster_type, empty).success, (
            f"{table}: declared columns fail {dagster_type.display_name}"
        )
        broken = empty.drop(columns=["pool" if "pool" in empty.columns else empty.columns[0]])
        assert not check_dagster_type(dagster_type, broken).success, f"{table}: the type check cannot fail"
    # persona_pool, chat_seeds, dialogue_turns, both verdicts, intent_similarity, simulator_audit,
    # language_consistency, dialogue_scores, leaderboard, slm_choices
    assert typed == 11


def test_every_job_resolves_to_assets_of_one_partitioning(defs):
    graph = defs.resolve_asset_graph()
    covered = set()
    for job in defs.jobs:
        job_def = defs.resolve_job_def(job.name)
        keys = set(job_def.asset_layer.executable_asset_keys)
        assert keys, f"job {job.name} selects no asset"
        partitionings = {repr(graph.get(k).partitions_def) for k in keys}
        assert len(partitionings) == 1, f"job {job.name} mixes partitionings: {partitionings}"
        covered |= keys
    assert covered == set(_materialised(defs)), "an asset no job materialises"


# Every asset and check the code location loads from assets/<package>/ (eyt_dagster/definitions.py: PACKAGES), as the
# hand-written lists had them before the packages were loaded whole.
ASSET_KEYS = {
    "dialogue/alpha_sensitivity",
    "dialogue/chat_seeds",
    "dialogue/corrected_pairwise",
    "dialogue/corrected_rank_intervals",
    "dialogue/cross_judge_ablation",
    "dialogue/cross_judge_final_verdicts",
    "dialogue/cross_judge_verdicts",
    "dialogue/dialogue_scores",
    "dialogue/dialogue_turns",
    "dialogue/final_intent_verdicts",
    "dialogue/human_alignment",
    "dialogue/human_annotations",
    "dialogue/intent_similarity",
    "dialogue/judge_agreement",
    "dialogue/judge_corrected",
    "dialogue/judge_verdicts",
    "dialogue/language_consistency",
    "dialogue/leaderboard",
    "dialogue/leaderboard_intervals",
    "dialogue/noise_floor",
    "dialogue/pairwise_comparisons",
    "dialogue/pass_k",
    "dialogue/persona_pool",
    "dialogue/persona_source_comparison",
    "dialogue/pool_settings",
    "dialogue/rank_intervals",
    "dialogue/sequential_decisions",
    "dialogue/sequential_savings",
    "dialogue/repeat_dialogues",
    "dialogue/repeat_scores",
    "dialogue/simulator_audit",
    "dialogue/simulator_audit_effect",
    "dialogue/target_settings",
    "dialogue/thinking_ablation",
    "dialogue/trajectory",
    "dialogue/turn_curves",
    "reports/model_cards",
    "reports/paper_tables",
    "reports/run_costs",
    "speech/contrast_scores",
    "speech/dialogues",
    "speech/eq_items",
    "speech/import_skips",
    "speech/scenarios",
    "speech/seq_breakdown",
    "speech/seq_human_alignment",
    "speech/seq_leaderboard",
    "speech/slm_choices",
    "speech/speech_build_report",
    "speech/target_settings",
    "speech/tone_instructions",
    "speech/tone_selection",
    "speech/tts_clips",
    "voice/asr_errors",
    "voice/dialogue_scores",
    "voice/final_intent_verdicts",
    "voice/judge_verdicts",
    "voice/prosody_effect",
    "voice/prosody_probe",
    "voice/target_settings",
    "voice/text_turns",
    "voice/voice_gap",
    "voice/voiced_turns",
}
CHECK_KEYS = {
    ("dialogue/chat_seeds", "no_error_rows"),
    ("dialogue/dialogue_turns", "dialogues_within_t_max"),
    ("dialogue/dialogue_turns", "enough_finished_dialogues"),
    ("dialogue/dialogue_turns", "few_cut_replies"),
    ("dialogue/dialogue_turns", "no_error_rows"),
    ("dialogue/judge_verdicts", "no_error_rows"),
    ("dialogue/judge_verdicts", "subscores_in_scale"),
    ("speech/eq_items", "one_resonant_candidate_per_test_turn"),
    ("speech/slm_choices", "no_error_rows"),
}


def test_the_packages_load_the_recorded_assets_and_checks(defs):
    graph = defs.resolve_asset_graph()
    assert {key.to_user_string() for key in graph.get_all_asset_keys()} == ASSET_KEYS
    assert {(check.asset_key.to_user_string(), check.name) for check in graph.asset_check_keys} == CHECK_KEYS
