"""Asset jobs. A Dagster asset job can only hold assets of one partitions definition, hence one job per
partitioning: pools, target x pool, subscale, speech target, and the unpartitioned reports."""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

POOL_ASSETS = AssetSelection.assets(["dialogue", "persona_pool"], ["dialogue", "chat_seeds"])
DIALOGUE_ASSETS = AssetSelection.assets(
    ["dialogue", "dialogue_turns"],
    ["dialogue", "judge_verdicts"],
    ["dialogue", "final_intent_verdicts"],
    ["dialogue", "intent_similarity"],
    ["dialogue", "simulator_audit"],
    ["dialogue", "language_consistency"],
    ["dialogue", "dialogue_scores"],
    ["dialogue", "repeat_dialogues"],
    ["dialogue", "repeat_scores"],
)
SPEECH_EVAL_ASSETS = AssetSelection.assets(["speech", "slm_choices"])
SPEECH_REPORT_ASSETS = AssetSelection.assets(["speech", "speech_build_report"])
SEQ_REPORT_ASSETS = AssetSelection.assets(
    ["speech", "seq_leaderboard"], ["speech", "seq_breakdown"], ["speech", "seq_human_alignment"]
)
# Reports over both benchmarks: run after the EYT and the SEQ reports (docs/reports.md).
CARD_ASSETS = AssetSelection.assets(["reports", "model_cards"], ["reports", "paper_tables"], ["reports", "run_costs"])
VOICE_ASSETS = AssetSelection.groups("voice")
VOICE_REPORT_ASSETS = AssetSelection.groups("voice_reports")
REPORT_ASSETS = AssetSelection.groups("reports") - SPEECH_REPORT_ASSETS - SEQ_REPORT_ASSETS - CARD_ASSETS
SPEECH_BUILD_ASSETS = AssetSelection.groups("speech") - SPEECH_EVAL_ASSETS

eyt_pools = define_asset_job("eyt_pools", POOL_ASSETS, description="Persona pool and ChatSEEDs of one pool.")
eyt_dialogues = define_asset_job(
    "eyt_dialogues",
    DIALOGUE_ASSETS,
    description="Dialogues, judge verdicts and intent similarity of one target x pool.",
)
eyt_reports = define_asset_job(
    "eyt_reports", REPORT_ASSETS, description="The leaderboard and the analysis tables over all partitions."
)

eyt_voice = define_asset_job(
    "eyt_voice",
    VOICE_ASSETS,
    description="The spoken EYT-Bench of one voice target x pool: voiced and text-control dialogues, verdicts, scores.",
)
voice_reports = define_asset_job(
    "voice_reports", VOICE_REPORT_ASSETS, description="The text-to-voice gap and ASR errors over every voice cell."
)

speech_build = define_asset_job(
    "speech_build", SPEECH_BUILD_ASSETS, description="SpeechEQ items of one EQ-i subscale: text, TTS, contrast filter."
)

speech_eval = define_asset_job(
    "speech_eval", SPEECH_EVAL_ASSETS, description="One SpeechEQ target's forced choices on every item (two rounds)."
)

speech_reports = define_asset_job(
    "speech_reports", SPEECH_REPORT_ASSETS, description="What the SpeechEQ builder did, per subscale."
)

seq_reports = define_asset_job(
    "seq_reports",
    SEQ_REPORT_ASSETS,
    description="The SEQ leaderboard, per-subscale breakdown and human-ranking correlation over all speech targets.",
)

unified_reports = define_asset_job(
    "unified_reports",
    CARD_ASSETS,
    description="Model cards over both benchmarks and the paper tables exported as files.",
)

JOBS = [
    eyt_pools,
    eyt_dialogues,
    eyt_reports,
    eyt_voice,
    voice_reports,
    speech_build,
    speech_eval,
    speech_reports,
    seq_reports,
    unified_reports,
]
