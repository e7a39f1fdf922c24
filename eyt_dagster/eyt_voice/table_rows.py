"""Voiced dialogues to warehouse rows: EYT-Bench's turn rows, with each turn's clip, what a cascade read and, for a
target that answers in audio, the reply's clip (its transcript is the row's response_text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.eyt_bench.table_rows import turn_rows
from eyt_dagster.eyt_voice.error_rates import errors, tokens, unit
from eyt_dagster.eyt_voice.voiced_loop import VoicedDialogue
from eyt_dagster.eyt_voice.voicing import VoiceChoice

CLIP_COLUMNS = [
    "clip_path",
    "clip_sha256",
    "voice",
    "voice_source",
    "instruction",
    "clip_duration_s",
    "asr_transcript",
    "cues",
    "word_errors",
    "ref_words",
    "error_unit",
    "reply_clip_path",
    "reply_clip_sha256",
    "reply_clip_duration_s",
]


def voiced_rows(
    voiced: VoicedDialogue,
    target: str,
    choice: VoiceChoice,
    relative: Callable[[str], str],
    language: str = DEFAULT_LANGUAGE,
) -> list[dict[str, Any]]:
    """One row per answered turn (and the error row of a dialogue that failed), with the turn's clip (its path
    made `relative` to the data directory), its voice, a cascade's transcript, cues and recognition errors, and the
    clip of a reply in audio. The errors and the reference length (`word_errors`, `ref_words`) are counted in the
    pool `language`'s units, named in `error_unit`: words, or characters for Chinese (eyt_voice/error_rates.py)."""
    rows = turn_rows(voiced.result, target)
    for row in rows:
        turn = int(row["turn"])
        row.update({c: None for c in CLIP_COLUMNS})
        if turn == 0:
            continue
        clip, heard = voiced.clips[turn - 1], voiced.heard[turn - 1]
        reply = voiced.replies[turn - 1] if turn <= len(voiced.replies) else None
        row.update(
            clip_path=relative(clip.path),
            clip_sha256=clip.sha256,
            voice=clip.voice,
            voice_source=choice.source,
            instruction=clip.instruction,
            clip_duration_s=clip.duration_s,
            ref_words=len(tokens(clip.text, language)),
            error_unit=unit(language),
        )
        if reply is not None:
            row.update(
                reply_clip_path=relative(reply.path),
                reply_clip_sha256=reply.sha256,
                reply_clip_duration_s=reply.duration_s,
            )
        if heard is not None:
            row.update(
                asr_transcript=heard.transcript,
                cues=heard.cues,
                word_errors=errors(clip.text, heard.transcript, language),
            )
    return rows
