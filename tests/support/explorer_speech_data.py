"""SpeechEQ's part of the explorer's hand-made warehouse: 60 items (one per subscale and valence in turn), the first
with everything the build stores about it (scenario, two dialogue versions, tone attempts, contrast attempts) and
the choices of a chat target and an embedded baseline, the second imported (only its eq_items row). The test-turn
clips are two tiny real WAV files; tts_clips also names an MP3 file and paths a page must never serve."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from eyt_dagster.speech_eq.contrast import FEATURES
from eyt_dagster.speech_eq.item_types import item_id
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALES, TURN_SPEAKER, VALENCES
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

N_ITEMS = 60
SUBSCALE_ORDER = list(SUBSCALES)
ITEM = item_id(SUBSCALE_ORDER[0], VALENCES[0], 0)  # the item with every row
IMPORTED = item_id(SUBSCALE_ORDER[1], VALENCES[1], 1)  # an imported item: no build rows
RESONANT, DISSONANT, MP3 = "audio/resonant.wav", "audio/dissonant.wav", "audio/tone.mp3"
OUTSIDE = "../outside.wav"  # named by tts_clips, but outside the data directory
LINK = "audio/link.wav"  # named by tts_clips, a symlink to a file outside the data directory
SPEECH_TARGET, SPEECH_BASELINE = "speech-target", "speech-baseline"
REASONING_HOSTILE = "<script>alert(3)</script> the first clip sounds <b>warmer</b>"
SR = 16000
DISCARDED = "discarded-scenario"  # a scenario whose turn-4 pair never passed: no item
PERSONA_CONDITION = "persona"  # the chat target also chose on the third item under this condition


def tone(path: Path, pitch_hz: float, seconds: float, **format: str) -> None:
    t = np.arange(int(SR * seconds)) / SR
    sf.write(str(path), (0.2 * np.sin(2 * np.pi * pitch_hz * t)).astype(np.float32), SR, **format)


def subscale_of(k: int) -> str:
    return SUBSCALE_ORDER[k % len(SUBSCALE_ORDER)]


def scenario(k: int, hostile: bool) -> dict:
    return {
        "subscale": subscale_of(k),
        "valence": VALENCES[k % 3],
        "scenario_type": "workplace",
        "title": f"scenario {k}",
        "context": f"context of scenario {k}",
        "description": REASONING_HOSTILE if hostile else f"description of scenario {k}",
        "speaker1": {"name": "Ana", "role": "colleague", "gender": "female", "persona": ""},
        "speaker2": {"name": "Ben", "role": "manager", "gender": "male", "persona": ""},
        "resonant_persona": "a steady listener",
        "dissonant_personas": ["toxic optimist", "impatient evader"],
        "skill_tested": "self-regard under pressure",
        "target_social_intent": "reassure",
    }


def build_speech(data: Path) -> dict[str, list]:
    """Write the clips and SpeechEQ's tables under `data`; return the rows."""
    (data / "audio").mkdir(exist_ok=True)
    tone(data / RESONANT, 180, 0.6)
    tone(data / DISSONANT, 320, 0.4)
    tone(data / MP3, 250, 0.3, format="MP3")
    tone(data.parent / "outside.wav", 200, 0.2)
    (data / LINK).symlink_to(data.parent / "outside.wav")
    items, clips = [], []
    for k in range(N_ITEMS):
        sub = subscale_of(k)
        composite = SUBSCALES[sub][0]
        row = {
            "dataset_id": item_id(sub, VALENCES[k % 3], k),
            "subscale": sub,
            "composite": composite,
            "valence": VALENCES[k % 3],
            "scenario_type": "workplace",
            "scenario_title": f"scenario {k}",
            "scenario_json": json.dumps(scenario(k, hostile=k == 0)),
            "conversation_json": json.dumps(
                [{"turn": n, "speaker": s, "text": f"line {n}"} for n, s in TURN_SPEAKER.items()]
            ),
            "source": "imported" if k == 1 else "generated",
            "turn4_contrast": 6,
            "turn6_contrast": 5 + k % 3,
        }
        for n in TURN_SPEAKER:
            row[f"turn{n}_text"] = f"item {k} line {n}"
        for n in (1, 2, 3, 5):
            row[f"turn{n}_path"], row[f"turn{n}_tone"] = f"audio/context{n}.wav", f"tone of line {n}"
        for n in (4, 6):
            row[f"turn{n}_resonant_path"], row[f"turn{n}_resonant_tone"] = RESONANT, f"low warm slow voice, turn {n}"
            row[f"turn{n}_dissonant_path"], row[f"turn{n}_dissonant_tone"] = (
                DISSONANT,
                f"sharp fast loud voice, turn {n}",
            )
        items.append(row)
    for path in (RESONANT, DISSONANT, MP3, OUTSIDE, LINK, str(data.parent / "outside.wav")):
        clips.append(
            {"scenario_id": ITEM, "turn": 4, "role": "resonant", "attempt": 0, "path": path, "subscale": subscale_of(0)}
        )
    sub0 = subscale_of(0)
    scenarios = [
        {
            "scenario_id": ITEM,
            "subscale": sub0,
            "valence": "Positive",
            "scenario_type": "workplace",
            "title": "scenario 0",
            "scenario_json": json.dumps(scenario(0, hostile=True)),
            "generator": "gen",
        }
    ]
    dialogues = [
        {
            "scenario_id": ITEM,
            "subscale": sub0,
            "turn": n,
            "speaker": s,
            "attempt": attempt,
            "accepted": attempt == 2,
            "text": f"version {attempt} line {n}" if attempt == 2 else f"rejected line {n}",
            "validator_note": None if attempt == 2 else "turn 4 reads the same in either tone",
            "validator": "validator-model",
            "generator": "gen",
        }
        for attempt in (1, 2)
        for n, s in TURN_SPEAKER.items()
    ]
    dialogues[8]["text"] = REASONING_HOSTILE  # version 2, turn 3
    tones = [
        {
            "scenario_id": ITEM,
            "subscale": sub0,
            "turn": n,
            "option_index": 1,
            "persona_kind": "resonant",
            "attempt": a,
            "instruction": "calm and polite" if a == 1 else f"low warm slow voice, turn {n}",
            "accepted": a == 2,
            "rejection_reason": "bland word: calm" if a == 1 else None,
        }
        for n in (4, 6)
        for a in (1, 2)
    ]
    selection = [
        {
            "scenario_id": ITEM,
            "subscale": sub0,
            "turn": n,
            "resonant_instruction": f"low warm slow voice, turn {n}",
            "dissonant_instruction": f"sharp fast loud voice, turn {n}",
            "dissonant_persona": "toxic optimist",
            "reasoning": "the sharpest mismatch",
            "judge": "tone-judge",
        }
        for n in (4, 6)
    ]
    contrasts = [
        {
            "scenario_id": ITEM,
            "subscale": sub0,
            "turn": n,
            "attempt": a,
            "strength": 0.5 * a,
            "total": 3 if a == 1 else 6,
            "passed": a == 2,
            **{f"points_{f}": 1 for f in FEATURES},
            **{f"gap_{f}": 0.1 * a for f in FEATURES},
        }
        for n in (4, 6)
        for a in (1, 2)
    ]
    choices = []
    for target in (SPEECH_TARGET, SPEECH_BASELINE):
        for inference in ("sequential", "direct"):
            for order in ("original", "flipped"):
                for rnd in (1, 2):
                    options = ("resonant", "dissonant") if order == "original" else ("dissonant", "resonant")
                    correct_option = options.index("resonant") + 1
                    choice = {
                        "target": target,
                        "item_id": ITEM,
                        "subscale": sub0,
                        "composite": SUBSCALES[sub0][0],
                        "valence": "Positive",
                        "condition": "default",
                        "inference": inference,
                        "order": order,
                        "round": rnd,
                        "option1": options[0],
                        "option2": options[1],
                        "selected_option": 1,
                        "correct_option": correct_option,
                        "correct": correct_option == 1,
                        "parse_failed": False,
                        "reasoning": f"{target} {inference} {order} round {rnd}",
                        "error": None,
                        "is_baseline": target == SPEECH_BASELINE,
                        "calls": 1,
                        "cache_hits": 0,
                        "tokens_in": 10,
                        "tokens_out": 5,
                        "tokens": 15,
                        "cost_usd": 0.0,
                        "latency_s": 0.1,
                        "seed": 0,
                    }
                    choices.append(choice)
    choices[0]["reasoning"] = REASONING_HOSTILE
    choices[1].update(
        parse_failed=True,
        selected_option=None,
        correct=False,
        reasoning="(reply did not parse) no option number in the reply",
    )
    choices[2].update(error="timeout: no reply", selected_option=None, correct=False, reasoning=None)
    third = items[2]
    for rnd in (1, 2):  # two correct choices under a second condition, on another item
        choices.append(
            dict(
                choices[4],
                item_id=third["dataset_id"],
                subscale=third["subscale"],
                composite=third["composite"],
                valence=third["valence"],
                condition=PERSONA_CONDITION,
                round=rnd,
                reasoning=f"persona round {rnd}",
            )
        )
    # a pair regenerated twice that never passed: no points for pitch on either try
    contrasts += [
        {
            "scenario_id": DISCARDED,
            "subscale": sub0,
            "turn": 4,
            "attempt": a,
            "strength": 0.1,
            "total": 1 + a,
            "passed": False,
            **{f"points_{f}": 0 if f == "pitch" else 1 for f in FEATURES},
            **{f"gap_{f}": 0.05 * a for f in FEATURES},
        }
        for a in (1, 2, 3)
    ]
    build_report = [
        {
            "subscale": sub0,
            "scenarios": 2,
            "items": 1,
            "tones_rejected_bland": 2,
            "pairs_regenerated": 2,
            "pairs_discarded": 1,
            "mean_total_passed": 6.0,
            "discarded": 1,
        }
    ]
    frames = {
        "speech.speech_build_report": (build_report, []),
        "speech.eq_items": (items, ["subscale"]),
        "speech.tts_clips": (clips, ["subscale"]),
        "speech.scenarios": (scenarios, ["subscale"]),
        "speech.dialogues": (dialogues, ["subscale"]),
        "speech.tone_instructions": (tones, ["subscale"]),
        "speech.tone_selection": (selection, ["subscale"]),
        "speech.contrast_scores": (contrasts, ["subscale"]),
        "speech.slm_choices": (choices, ["target"]),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, pd.DataFrame(rows), partition_by=by, catalog=catalog())
    assert set(COMPOSITES) >= {r["composite"] for r in items}
    return {table: rows for table, (rows, _) in frames.items()}
