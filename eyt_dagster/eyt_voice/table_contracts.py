"""Table contracts of the `voice` schema (the spoken EYT-Bench), built on EYT-Bench's: the same columns with what
voicing adds (docs/spoken-eyt.md#tables-schema-voice)."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core.storage_types import Columns, conform
from eyt_dagster.eyt_bench.table_contracts import (
    DIALOGUE_SCORES_COLUMNS,
    DIALOGUE_TURNS_COLUMNS,
    FINAL_VERDICTS_COLUMNS,
    JUDGE_VERDICTS_COLUMNS,
)
from eyt_dagster.eyt_bench.table_rows import STAT_FIELDS

MODES = ("voice", "text")  # heard, and the text control through the same model
_MODE = {"mode": "string"}
VOICED_TURNS_COLUMNS: Columns = {
    **DIALOGUE_TURNS_COLUMNS,
    **{c: "string" for c in ("clip_path", "clip_sha256", "voice", "voice_source", "instruction")},
    "clip_duration_s": "float64",
    "asr_transcript": "string",
    "cues": "string",
    "word_errors": "Int64",
    "ref_words": "Int64",
    "error_unit": "string",  # what word_errors and ref_words count: "word", or "character" in a Chinese pool
    # a reply in audio (audio_out): its clip; NULL for a target that answers in text, and in older partitions
    "reply_clip_path": "string",
    "reply_clip_sha256": "string",
    "reply_clip_duration_s": "float64",
}
TEXT_TURNS_COLUMNS: Columns = dict(DIALOGUE_TURNS_COLUMNS)
VOICE_VERDICTS_COLUMNS: Columns = {**JUDGE_VERDICTS_COLUMNS, **_MODE}
VOICE_FINAL_VERDICTS_COLUMNS: Columns = {**FINAL_VERDICTS_COLUMNS, **_MODE}
VOICE_SCORES_COLUMNS: Columns = {**DIALOGUE_SCORES_COLUMNS, **_MODE}
VOICE_GAP_COLUMNS: Columns = {
    **{c: "string" for c in ("target", "pool", "metric")},
    "n_paired": "Int64",
    **{c: "float64" for c in ("text", "voice", "delta", "ci_low", "ci_high", "preserve_ratio")},
    "excludes_zero": "boolean",
    "is_baseline": "bool",
    "self_preference_risk": "bool",
    "created_at": "datetime64[ns]",
}
PROSODY_PROBE_COLUMNS: Columns = {
    **{c: "string" for c in ("target", "pool", "seed_id")},
    "turn": "int64",
    **{c: "string" for c in ("gold_emotion", "pred_emotion_toned", "pred_emotion_plain")},
    **{c: "string" for c in ("plain_clip_path", "plain_clip_sha256", "error", "error_kind")},
    **{f"target_{f}": DIALOGUE_TURNS_COLUMNS[f"target_{f}"] for f in STAT_FIELDS},
    "created_at": "datetime64[ns]",
}
PROSODY_EFFECT_COLUMNS: Columns = {
    **{c: "string" for c in ("target", "pool")},
    "n_turns": "Int64",
    **{c: "float64" for c in ("acc_toned", "acc_plain", "delta", "ci_low", "ci_high")},
    "excludes_zero": "boolean",
    "is_baseline": "bool",
    "self_preference_risk": "bool",
    "created_at": "datetime64[ns]",
}
ASR_ERRORS_COLUMNS: Columns = {
    **{c: "string" for c in ("target", "pool")},
    **{c: "Int64" for c in ("turns", "ref_words", "word_errors")},
    "error_unit": "string",  # word or character: what ref_words and word_errors count
    "wer": "float64",  # the word error rate, of a pool scored in words
    "cer": "float64",  # the character error rate, of a pool scored in characters (Chinese)
    **{c: "Int64" for c in ("turns_clean", "turns_misheard")},
    **{
        f"{label}_acc_{part}": "float64"
        for label in ("explicit_intent", "latent_intent", "emotion")
        for part in ("clean", "misheard")
    },
    "is_baseline": "bool",
    "self_preference_risk": "bool",
    "created_at": "datetime64[ns]",
}

VOICE_TABLES: dict[str, Columns] = {
    "voice.voiced_turns": VOICED_TURNS_COLUMNS,
    "voice.text_turns": TEXT_TURNS_COLUMNS,
    "voice.judge_verdicts": VOICE_VERDICTS_COLUMNS,
    "voice.final_intent_verdicts": VOICE_FINAL_VERDICTS_COLUMNS,
    "voice.dialogue_scores": VOICE_SCORES_COLUMNS,
    "voice.voice_gap": VOICE_GAP_COLUMNS,
    "voice.asr_errors": ASR_ERRORS_COLUMNS,
    "voice.prosody_probe": PROSODY_PROBE_COLUMNS,
    "voice.prosody_effect": PROSODY_EFFECT_COLUMNS,
}


def conform_voice(df: pd.DataFrame, table: str) -> pd.DataFrame:
    return conform(df, VOICE_TABLES[table], table)
