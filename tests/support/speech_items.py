"""Hand-made SpeechEQ items for tests: real WAV files (tones whose pitch, loudness and length the test
chooses), so the bytes a server receives and the features a baseline reads can be checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from eyt_dagster.speech_eq.item_types import Clip, EqItem, Line, Scenario, Speaker
from eyt_dagster.speech_eq.vocabulary import AUDIO_FILES, TURN_SPEAKER

SR = 16000
# file number -> (pitch Hz, amplitude, seconds): the resonant clips are calm (low, quiet, slow), the dissonant
# ones lively (high, loud, short), so an arousal rule can tell them apart.
DEFAULT_VOICES = {
    "01": (150, 0.2, 1.0),
    "02": (210, 0.2, 1.0),
    "03": (140, 0.3, 1.2),
    "04": (190, 0.1, 1.6),
    "05": (320, 0.6, 0.8),
    "06": (150, 0.3, 1.0),
    "07": (185, 0.1, 1.6),
    "08": (330, 0.6, 0.8),
}


def tone_wav(path: Path, pitch_hz: float, amplitude: float, seconds: float) -> str:
    """A voiced-like tone with a few harmonics and a slow amplitude wobble, as 16-bit WAV."""
    t = np.arange(int(SR * seconds)) / SR
    wave = sum(np.sin(2 * np.pi * pitch_hz * k * t) / k for k in (1, 2, 3))
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 3 * t) ** 2
    sf.write(str(path), (amplitude * wave / 1.8 * envelope).astype(np.float32), SR, subtype="PCM_16")
    return str(path)


def make_item(
    directory: Path,
    dataset_id: str = "item-1",
    valence: str = "Negative",
    subscale: str = "interpersonal_empathy",
    voices: dict | None = None,
) -> EqItem:
    directory.mkdir(parents=True, exist_ok=True)
    voices = {**DEFAULT_VOICES, **(voices or {})}
    scenario = Scenario(
        subscale=subscale,
        valence=valence,
        scenario_type="workplace",
        title="Missed deadline",
        context="A quiet office after hours",
        description="Maya tells Leo the project she led was cancelled.",
        speaker1=Speaker(name="Maya", role="designer", gender="female"),
        speaker2=Speaker(name="Leo", role="team lead", gender="male"),
        resonant_persona="a steady colleague",
        dissonant_personas=["toxic optimist", "impatient evader"],
        skill_tested="empathy",
        target_social_intent="comfort her",
    )
    lines = [Line(turn=t, speaker=TURN_SPEAKER[t], text=f"line {t} of {dataset_id}") for t in range(1, 7)]
    clips = []
    for number, (turn, level) in AUDIO_FILES.items():
        pitch, amplitude, seconds = voices[number]
        path = tone_wav(directory / f"{dataset_id}-{number}.wav", pitch, amplitude, seconds)
        tone = {"high": "slow, low and warm", "low": "loud, fast and chirpy", None: "plain"}[level]
        clips.append(
            Clip(
                file_number=number,
                turn=turn,
                speaker=TURN_SPEAKER[turn],
                text=lines[turn - 1].text,
                eq_level=level,
                path=path,
                tone_description=tone,
            )
        )
    return EqItem(dataset_id=dataset_id, scenario=scenario, conversation=lines, clips=clips)
