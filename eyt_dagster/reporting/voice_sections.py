"""The report's sections on the spoken EYT-Bench (docs/spoken-eyt.md): the text-to-voice gap with its figure, the
cascades' word error rates and the prosody-only probe. Absent when no voice target was played."""

from __future__ import annotations

import pandas as pd

from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_voice.table_contracts import PROSODY_EFFECT_COLUMNS, VOICE_GAP_COLUMNS
from eyt_dagster.reporting.html_report import Section
from eyt_dagster.reporting.plots import interval_png

GAP_FIGURE_METRICS = ("emotion_acc", "empathy")
# the gap table's columns (its contract) the section shows: all but excludes_zero (the interval says it) and what the
# asset adds (the baseline flag is shown when the table has it)
GAP_SHOWN = column_names(
    VOICE_GAP_COLUMNS, without=("excludes_zero", "is_baseline", "self_preference_risk", "created_at")
)
# the prosody effect's columns the section shows: all but excludes_zero and what the asset adds
PROSODY_SHOWN = column_names(
    PROSODY_EFFECT_COLUMNS, without=("excludes_zero", "is_baseline", "self_preference_risk", "created_at")
)


def voice_sections(tables: dict[str, pd.DataFrame]) -> list[Section]:
    gap = tables.get("voice.voice_gap", pd.DataFrame())
    if not len(gap):
        return []
    shown = gap.rename(columns={"delta": "value"})
    sections = [
        Section(
            title="Spoken EYT-Bench: the text-to-voice gap",
            description="Each voice target played the pool's first ChatSEEDs twice through the same model: heard "
            "(every user turn synthesised in the tone of its gold emotion) and read (the text control). Per target, "
            "pool and metric: the text and voice means on the ChatSEEDs played both ways, delta = voice minus text "
            "with its 95% paired bootstrap interval, and voice / text. For drift, lower is better, so a positive "
            "delta is a loss there.",
            table=gap[GAP_SHOWN + [c for c in ("is_baseline",) if c in gap.columns]],
            images=[(f"{m}: voice minus text, 95% interval", interval_png(shown, m)) for m in GAP_FIGURE_METRICS],
        )
    ]
    asr = tables.get("voice.asr_errors", pd.DataFrame())
    if len(asr):
        sections.append(
            Section(
                title="Spoken EYT-Bench: speech recognition of the cascades",
                description="A cascade hears through speech recognition: its error rate on the synthesised user "
                "turns, summed over turns: the word error rate (wer: word-level edit distance after lower-casing and "
                "dropping punctuation) of a pool in English, the character error rate (cer: each Chinese character "
                "and each Latin or digit run one token, punctuation dropped) of a pool in Chinese; and its errors "
                "split between the recognition and the model: each label's accuracy on the turns it heard without an "
                "error (clean) and with one (misheard). Errors on clean turns are the model's.",
                table=asr[
                    ["target", "pool", "turns"]
                    + [c for c in ("wer", "cer") if c in asr.columns]
                    + ["turns_clean", "turns_misheard"]
                    + [
                        f"{label}_acc_{part}"
                        for label in ("explicit_intent", "emotion")
                        for part in ("clean", "misheard")
                    ]
                ],
            )
        )
    prosody = tables.get("voice.prosody_effect", pd.DataFrame())
    if len(prosody):
        sections.append(
            Section(
                title="Spoken EYT-Bench: does the tone change the perceived emotion?",
                description="Every non-neutral user turn was perceived again with the same words in the plain voice. "
                "Emotion accuracy with the turn's tone and in the plain voice, on the same turns, and their difference "
                "with a 95% bootstrap interval. A target that reads the emotion only from the words scores the same.",
                table=prosody[PROSODY_SHOWN],
            )
        )
    return sections
