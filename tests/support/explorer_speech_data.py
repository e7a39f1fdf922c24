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
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALE_NAMES, SUBSCALES, TURN_SPEAKER, VALENCES
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
SPEECH_MODEL_B = "speech-model-b"  # a second evaluated model: in the SEQ tables only (it made no choice here)
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
            for order in ("seeded", "flipped"):
                for rnd in (1, 2):
                    options = ("resonant", "dissonant") if order == "seeded" else ("dissonant", "resonant")
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
        "speech.seq_leaderboard": (seq_leaderboard(), []),
        "speech.seq_breakdown": (seq_breakdown(), []),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, pd.DataFrame(rows), partition_by=by, catalog=catalog())
    assert set(COMPOSITES) >= {r["composite"] for r in items}
    return {table: rows for table, (rows, _) in frames.items()}


def _accuracies(acc1: float, acc2: float, acc_traj: float, spread: float = 0.08) -> dict:
    out = {}
    for name, value in (("acc1", acc1), ("acc2", acc2), ("acc_traj", acc_traj)):
        out |= {name: value, f"{name}_low": max(0.0, value - spread), f"{name}_high": min(1.0, value + spread)}
    return out


def seq_leaderboard() -> list[dict]:
    """speech.seq_leaderboard as the SpeechEQ report writes it, by hand: under the default condition the chat target and
    a second model (the cohort), the embedded baseline (a shortcut: Acc1 far above chance) and chance; under the
    persona condition the chat target and chance. SEQ values are set, not computed."""
    cohort = f"{SPEECH_MODEL_B},{SPEECH_TARGET}"

    def row(target: str, condition: str, seq: float, accuracies: dict, baseline: bool, **more: object) -> dict:
        return {
            "target": target,
            "condition": condition,
            "is_baseline": baseline,
            "speech_input": "chance" if target == "chance" else "baseline" if baseline else "audio",
            "model": "chance" if target == "chance" else "calmer-chooser" if baseline else f"{target}-model",
            "reply_format": None if target == "chance" else "paper",
            "headline_inference": None if target == "chance" else "sequential",
            "n_items": 0 if target == "chance" else 58,
            "n_error_items": 0 if target == "chance" else 2,
            **accuracies,
            "seq": seq,
            "seq_cohort": cohort if condition == "default" else SPEECH_TARGET,
            "seq_cohort_kind": "models",
            "in_seq_cohort": target in (SPEECH_TARGET, SPEECH_MODEL_B)
            if condition == "default"
            else target == SPEECH_TARGET,
            "contextual_amnesia": accuracies["acc1"] - accuracies["acc2"],
            "acc2_direct": accuracies["acc2"] + 0.05,
            "acc_traj_direct": accuracies["acc_traj"] + 0.05,
            "sequential_direct_delta": 0.05,
            "position_bias_rate": None if target == "chance" else 0.125,
            "parse_failure_rate": None if target == "chance" else 0.017,
            "cost_per_100_queries": None if target == "chance" else (0.0 if baseline else 0.84),
            "mean_latency_s": None if target == "chance" else (0.01 if baseline else 2.4),
            "tokens_per_s": None if target == "chance" else (None if baseline else 61.5),
            "queries": 0 if target == "chance" else 232,
            **more,
        }

    chance = _accuracies(0.5, 0.5, 0.25, spread=0.0)
    return [
        row(SPEECH_TARGET, "default", 110.1, _accuracies(0.81, 0.69, 0.57), False),
        row(SPEECH_BASELINE, "default", 104.3, _accuracies(0.92, 0.55, 0.5), True),
        row(SPEECH_MODEL_B, "default", 89.9, _accuracies(0.7, 0.6, 0.43), False, reply_format="short"),
        row("chance", "default", 40.0, chance, True),
        row(SPEECH_TARGET, PERSONA_CONDITION, 100.0, _accuracies(0.75, 0.6, 0.45), False),
        row("chance", PERSONA_CONDITION, 40.0, chance, True),
    ]


def seq_breakdown() -> list[dict]:
    """speech.seq_breakdown by hand: every subscale and composite of the three evaluated targets under the default
    condition (the k-th subscale's Acc_traj falls with k), and the chat target's first subscale under persona."""
    rows = []
    targets = {SPEECH_TARGET: 0.8, SPEECH_BASELINE: 0.6, SPEECH_MODEL_B: 0.5}
    for target, top in targets.items():
        for level, keys in (("composite", list(COMPOSITES)), ("subscale", SUBSCALE_ORDER)):
            for k, key in enumerate(keys):
                composite = key if level == "composite" else SUBSCALES[key][0]
                acc_traj = round(top - 0.03 * k, 3)
                rows.append(
                    {
                        "target": target,
                        "condition": "default",
                        "is_baseline": target == SPEECH_BASELINE,
                        "headline_inference": "sequential",
                        "level": level,
                        "name": key,
                        "display_name": COMPOSITES[key][0]
                        if level == "composite"
                        else SUBSCALE_NAMES[SUBSCALES[key][1]],
                        "composite": composite,
                        "composite_name": COMPOSITES[composite][0],
                        "n_items": 4,
                        **_accuracies(min(1.0, acc_traj + 0.15), acc_traj + 0.05, acc_traj, spread=0.2),
                        "contextual_amnesia": 0.1,
                        "n_items_direct": 4,
                        "acc2_direct": acc_traj + 0.1,
                        "sequential_direct_delta": 0.05,
                    }
                )
    persona = dict(rows[len(COMPOSITES)], condition=PERSONA_CONDITION, acc_traj=0.25, n_items=1)
    return [*rows, persona]
