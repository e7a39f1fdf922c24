"""From a scenario's text to an evaluation item (paper §2.3): synthesise every clip, score the acoustic
contrast of each test-turn pair, regenerate a failing pair with a stronger rendering, discard what still
fails. Pure logic: the TTS engine, the clip store and the feature extractor are passed in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.speech_eq.contrast import AcousticFeatures, ContrastResult, ContrastThresholds, contrast_score
from eyt_dagster.speech_eq.item_types import Clip, EqItem, Line, Scenario
from eyt_dagster.speech_eq.vocabulary import AUDIO_FILES, TEST_TURNS

Synthesize = Callable[[str, str, str, float], tuple[bytes, dict[str, Any]]]
VoiceFor = Callable[[str, int], str]
STRENGTH_STEP = 0.5  # each regeneration renders both clips this much further from neutral prosody


def contrast_row(
    scenario_id: str, turn: int, attempt: int, strength: float | None, score: ContrastResult
) -> dict[str, Any]:
    """One speech.contrast_scores row: the pair's total, pass flag, and points and gap per feature."""
    return {
        "scenario_id": scenario_id,
        "turn": turn,
        "attempt": attempt,
        "strength": strength,
        "total": score.total,
        "passed": score.passed,
        **{f"points_{k}": v for k, v in score.points.items()},
        **{f"gap_{k}": v for k, v in score.gaps.items()},
    }


@dataclass
class BuildResult:
    clips: list[dict[str, Any]] = field(default_factory=list)  # every synthesis, one row each (speech.tts_clips)
    contrasts: list[dict[str, Any]] = field(default_factory=list)  # every scored pair (speech.contrast_scores)
    item: EqItem | None = None  # None when a test turn never reached the pass score
    composite: dict[int, int] = field(default_factory=dict)  # turn -> accepted contrast total


def build_item(
    scenario_id: str,
    scenario: Scenario,
    lines: list[Line],
    context_tones: dict[int, str],
    test_tones: dict[int, tuple[str, str]],
    *,
    synthesize: Synthesize,
    voice_for: VoiceFor,
    store: Callable[[bytes], Path],
    features: Callable[[Path], AcousticFeatures],
    thresholds: ContrastThresholds,
    language: str = DEFAULT_LANGUAGE,
) -> BuildResult:
    """Clips for turns 1, 2, 3 and 5 once; for turns 4 and 6 a resonant/dissonant pair per attempt, up to
    1 + max_regenerations attempts, until the pair's contrast score reaches the pass score."""
    result = BuildResult()
    text = {line.turn: line for line in lines}
    speakers = {1: scenario.speaker1, 2: scenario.speaker2}
    voices = {s: voice_for(speakers[s].gender, s - 1) for s in (1, 2)}  # distinct slots per speaker
    chosen: dict[str, Path] = {}
    tones: dict[str, str] = {}

    def synth(turn: int, role: str, instruction: str, strength: float, attempt: int) -> Path:
        line = text[turn]
        wav, meta = synthesize(line.text, instruction, voices[line.speaker], strength)
        path = store(wav)
        result.clips.append(
            {
                "scenario_id": scenario_id,
                "turn": turn,
                "role": role,
                "attempt": attempt,
                "speaker": line.speaker,
                "voice": voices[line.speaker],
                "text": line.text,
                "instruction": instruction,
                "strength": strength,
                "engine": meta.get("engine"),
                "duration_s": meta.get("duration_s"),
                "path": str(path),
            }
        )
        return path

    for turn, instruction in sorted(context_tones.items()):
        number = next(n for n, slot in AUDIO_FILES.items() if slot == (turn, None))
        chosen[number], tones[number] = synth(turn, "context", instruction, 1.0, 0), instruction
    for turn in TEST_TURNS:
        resonant_tone, dissonant_tone = test_tones[turn]
        for attempt in range(thresholds.max_regenerations + 1):
            strength = 1.0 + STRENGTH_STEP * attempt
            high = synth(turn, "resonant", resonant_tone, strength, attempt)
            low = synth(turn, "dissonant", dissonant_tone, strength, attempt)
            score = contrast_score(features(high), features(low), thresholds)
            result.contrasts.append(contrast_row(scenario_id, turn, attempt, strength, score))
            if score.passed:
                break
        if not score.passed:
            return result  # discarded: every attempt stays recorded
        result.composite[turn] = score.total
        for number, slot in AUDIO_FILES.items():
            if slot == (turn, "high"):
                chosen[number], tones[number] = high, resonant_tone
            elif slot == (turn, "low"):
                chosen[number], tones[number] = low, dissonant_tone
    clips = [
        Clip(
            file_number=n,
            turn=t,
            speaker=text[t].speaker,
            text=text[t].text,
            eq_level=level,
            path=str(chosen[n]),
            tone_description=tones[n],
        )
        for n, (t, level) in AUDIO_FILES.items()
    ]
    result.item = EqItem(
        dataset_id=scenario_id,
        scenario=scenario,
        conversation=lines,
        clips=clips,
        generation_metadata={
            "contrast": {str(k): v for k, v in result.composite.items()},
            **({"language": language} if language != DEFAULT_LANGUAGE else {}),  # English items are as they were
        },
    )
    return result
