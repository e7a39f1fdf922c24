"""voice_gap and asr_errors: the text-to-voice gap of every voice target, and its cascade's ASR errors."""

from typing import Any

import pandas as pd
from dagster import AssetIn, MetadataValue, Output, asset

from assets._asset_args import AssetArgs
from assets._output import now_utc, table_output
from eyt_dagster.core.baseline_flags import baseline_note, flag_targets
from eyt_dagster.eyt_voice import gap
from eyt_dagster.eyt_voice import prosody_probe as prosody
from eyt_dagster.eyt_voice.table_contracts import conform_voice
from resources.models.model_access import SlateAccess

LOGIC_VERSION = "2"  # 2: asr_errors splits each label's accuracy between clean and misheard turns
_REPORT: AssetArgs = dict(key_prefix=["voice"], group_name="voice_reports", code_version=LOGIC_VERSION)


def _finish(df: pd.DataFrame, slate: SlateAccess, table: str, **metadata: Any) -> Output[pd.DataFrame]:
    if len(df):
        df = flag_targets(df, slate.slate, "target")
    df["created_at"] = now_utc()
    return table_output(conform_voice(df, table), baselines=baseline_note(df, "target"), **metadata)


@asset(**_REPORT, ins={"dialogue_scores": AssetIn(key=["voice", "dialogue_scores"])})
def voice_gap(slate: SlateAccess, dialogue_scores: pd.DataFrame) -> Output[pd.DataFrame]:
    """Per voice target, pool and metric: voice minus text on the same ChatSEEDs with a paired bootstrap interval,
    and the preserve ratio voice / text."""
    current = slate.slate
    df = gap.voice_gap(dialogue_scores, resamples=current.bootstrap_resamples, seed=current.seed)
    shown = df[df["metric"].isin(["emotion_acc", "empathy", "ficr"])] if len(df) else df
    columns = ["target", "pool", "metric", "text", "voice", "delta", "ci_low", "ci_high", "preserve_ratio"]
    preview = shown[columns].round(3).to_markdown(index=False) if len(shown) else "_no rows_"
    return _finish(df, slate, "voice.voice_gap", gap=MetadataValue.md(preview), resamples=current.bootstrap_resamples)


@asset(**_REPORT, ins={"voiced_turns": AssetIn(key=["voice", "voiced_turns"])})
def asr_errors(slate: SlateAccess, voiced_turns: pd.DataFrame) -> Output[pd.DataFrame]:
    """Per cascaded voice target and pool: the word error rate of its speech recognition on the user's turns."""
    df = gap.asr_errors(voiced_turns)
    return _finish(df, slate, "voice.asr_errors")


@asset(**_REPORT, ins={"prosody_probe": AssetIn(key=["voice", "prosody_probe"])})
def prosody_effect(slate: SlateAccess, prosody_probe: pd.DataFrame) -> Output[pd.DataFrame]:
    """Per voice target and pool: emotion accuracy with the turn's tone and in the plain voice, on the same turns."""
    current = slate.slate
    df = prosody.prosody_effect(prosody_probe, resamples=current.bootstrap_resamples, seed=current.seed)
    return _finish(df, slate, "voice.prosody_effect", resamples=current.bootstrap_resamples)
