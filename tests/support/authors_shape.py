"""SpeechEQ items in exactly the shape the benchmark's authors publish them, written with this project's own text and
clips (the authors' repository carries no licence, so nothing of theirs is copied): no `scenario_valence` and no
`target_social_intent` in the scenario, `speaker2_persona_high` / `_low` beside `speaker2_persona_1..3`,
`speaker1_voice` / `speaker2_voice`, context clips with `"eq_level": "high"`, audio paths under the authors' own
folders (`data/<batch>/<subscale>/<id>/audio/NN.mp3`), extra top-level keys, and real MP3 clips in which the
resonant reply is the calmer voice in most pairs (as in the authors' items)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from eyt_dagster.speech_eq.vocabulary import eq_scale

RATE = 16_000
BATCH = "batch_07"
# (title, context, description): the first two read as hard times, the third as good news
SCENES = [
    ("The last shift", "A warehouse break room", "Dana was laid off this morning and is worried about the rent."),
    ("Waiting room", "A hospital corridor", "Sam's father was diagnosed today and Sam is scared and exhausted."),
    ("The letter", "A kitchen table", "Priya was accepted to the programme and is thrilled and proud."),
]


def voice(pitch_hz: float, amplitude: float, seconds: float, wobble: float) -> np.ndarray:
    """A voiced tone: a pitch contour (wobble: how much it moves, Hz) with harmonics, at an amplitude."""
    t = np.arange(int(RATE * seconds)) / RATE
    f0 = pitch_hz + wobble * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    wave = sum(np.sin(k * phase) / k for k in (1, 2, 3))
    envelope = np.minimum(1.0, np.minimum(t, t[-1] - t) / 0.05)
    return (amplitude * wave * envelope / 1.8).astype("float32")


CALM = dict(pitch_hz=120.0, amplitude=0.12, seconds=1.6, wobble=4.0)
LIVELY = dict(pitch_hz=230.0, amplitude=0.45, seconds=1.0, wobble=40.0)
NEUTRAL = dict(pitch_hz=170.0, amplitude=0.25, seconds=1.2, wobble=12.0)


def write_authors_item(root: Path, slug: str, index: int, *, resonant_calm: bool = True) -> Path:
    """One item folder `<root>/<slug>/<id>/` in the authors' shape; returns it."""
    dataset_id = f"{slug[:4]}_{index:03d}"
    folder = root / slug / dataset_id
    (folder / "audio").mkdir(parents=True)
    title, context, description = SCENES[index % len(SCENES)]
    lines = [
        "I need to tell you something.",
        "Of course, what is it?",
        description,
        "That is a lot to carry. I am right here.",
        "I do not know what happens next.",
        "We will work it out, one step at a time.",
    ]
    slots = [("01", 1, "high"), ("02", 2, "high"), ("03", 3, "high"), ("04", 4, "high"), ("05", 4, "low"),
             ("06", 5, "high"), ("07", 6, "high"), ("08", 6, "low")]  # fmt: skip
    audio = []
    for number, turn, level in slots:
        if number in ("04", "07"):
            style = CALM if resonant_calm else LIVELY
        elif number in ("05", "08"):
            style = LIVELY if resonant_calm else CALM
        else:
            style = NEUTRAL
        sf.write(folder / "audio" / f"{number}.mp3", voice(**style), RATE, format="MP3")
        audio.append(
            {
                "sentence_number": turn,
                "speaker": f"speaker{2 - turn % 2}",
                "text": lines[turn - 1],
                "eq_level": level,  # context clips too: the authors mark them "high"
                "audio_path": f"data/{BATCH}/{slug}/{dataset_id}/audio/{number}.mp3",
                "tone_description": "warm and steady" if level == "high" else "brisk and bright",
            }
        )
    metadata = {
        "id": dataset_id,  # extra top-level keys, as published
        "batch": BATCH,
        "eq_scale": eq_scale(slug),
        "scenario": {
            "title": title,
            "context": context,
            "description": description,
            "speaker1_name": "Dana",
            "speaker1_role": "colleague",
            "speaker1_gender": "female",
            "speaker1_persona": "Shaken but trying to stay practical",
            "speaker1_voice": "voice_f1",
            "speaker2_name": "Lee",
            "speaker2_role": "friend",
            "speaker2_gender": "male",
            "speaker2_voice": "voice_m2",
            "speaker2_persona_1": "Steady and attentive",
            "speaker2_persona_2": "Relentlessly upbeat",
            "speaker2_persona_3": "Distracted and brief",
            "speaker2_persona_high": "Steady and attentive",
            "speaker2_persona_low": "Relentlessly upbeat",
            "eq_skill_tested": "Empathy",
            "scenario_type": "workplace",
        },
        "conversation": [
            {"speaker": f"speaker{2 - t % 2}", "sentence_number": t, "text": lines[t - 1]} for t in range(1, 7)
        ],
        "audio_files": audio,
        "generation_metadata": {"model": "the-authors-generator", "tts_model": "the-authors-tts"},
    }
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2))
    return folder


def write_authors_release(root: Path, slug: str, count: int, calm_share: float = 0.8) -> list[Path]:
    """`count` items of one subscale; in the first `calm_share` of them the resonant reply is the calmer voice."""
    calm = round(count * calm_share)
    return [write_authors_item(root, slug, i, resonant_calm=i < calm) for i in range(count)]
