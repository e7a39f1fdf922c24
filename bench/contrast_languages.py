"""Do the contrast filter's thresholds hold for Mandarin? The contrast score of clip pairs, English against
Mandarin, with the same prosody in both languages, so that only the language differs (its sounds and, in Mandarin,
the lexical tones that move the pitch inside every syllable). Not a test; docs/languages.md quotes its output.

Two kinds of pairs, for six sentences per language (the same meanings) and two voices (female f3, male m3):
- **same tone, jittered**: one prosody against itself with the small jitter a regeneration could bring (rate
  +-10 words/min, pitch +-5, volume +-10 %). A pair that should never pass: its points are false contrast.
- **resonant against dissonant**: the template generator's resonant tone against each of its archetype tones,
  for every valence, at strength 1 (the first attempt). What the filter is there to pass.

For each language: the share of pairs earning each feature's points and the total's distribution and pass rate.

    python bench/contrast_languages.py
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.speech_eq import templates  # noqa: E402
from eyt_dagster.speech_eq.contrast import FEATURES, ContrastThresholds, contrast_score  # noqa: E402
from eyt_dagster.speech_eq.prosody import LIMITS, Prosody, prosody_for, voice_for  # noqa: E402
from resources.audio.audio_features import clip_features  # noqa: E402
from resources.audio.tts import EspeakTTS, pcm_to_wav  # noqa: E402

SENTENCES = {
    "en": (
        "Okay. Tell me what happened from the beginning.",
        "I hear you. What happens now?",
        "Alright. Let's figure out the next step together.",
        "Right. We will deal with it today.",
        "I just do not know what to do with myself right now.",
        "Of course. I am listening.",
    ),
    "zh": (
        "好。你从头跟我说说是怎么回事。",
        "我在听。那接下来会怎么样？",
        "好吧。我们一起想想下一步怎么走。",
        "行。这件事我们今天就处理。",
        "我现在真的不知道该拿自己怎么办。",
        "当然，你说，我听着。",
    ),
}
JITTER = ({"rate": 10, "pitch": 5, "volume": 10}, {"rate": -10, "pitch": -5, "volume": -10})


def synth(engine: EspeakTTS, text: str, voice: str, prosody: Prosody, folder: Path) -> Path:
    pcm, e = engine.render(text, voice, prosody)
    path = folder / f"{abs(hash((text, voice, prosody)))}.wav"
    path.write_bytes(pcm_to_wav(pcm, e.sample_rate))
    return path


def jittered(p: Prosody, delta: dict[str, int]) -> Prosody:
    values = p.as_dict()
    for name, d in delta.items():
        low, high = LIMITS[name]
        values[name] = int(min(high, max(low, values[name] + d)))
    return Prosody(**values)


def main() -> None:
    engine, thresholds = EspeakTTS(), ContrastThresholds()
    tones = [templates.RESONANT_TONES[v] for v in templates.RESONANT_TONES] + list(templates.ARCHETYPE_TONES.values())
    presets = [prosody_for(t)[0] for t in tones]
    pairs_real = [
        (prosody_for(templates.RESONANT_TONES[v])[0], prosody_for(a)[0])
        for v in templates.RESONANT_TONES
        for a in templates.ARCHETYPE_TONES.values()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for language, sentences in SENTENCES.items():
            voices = [voice_for("female", 0, language), voice_for("male", 0, language)]
            results: dict[str, list] = {"same tone, jittered": [], "resonant vs dissonant": []}
            for text, voice in itertools.product(sentences, voices):
                for p in presets:
                    a, b = (synth(engine, text, voice, jittered(p, d), folder) for d in JITTER)
                    results["same tone, jittered"].append(
                        contrast_score(clip_features(a), clip_features(b), thresholds)
                    )
                for high, low in pairs_real:
                    a, b = synth(engine, text, voice, high, folder), synth(engine, text, voice, low, folder)
                    results["resonant vs dissonant"].append(
                        contrast_score(clip_features(a), clip_features(b), thresholds)
                    )
            for kind, scores in results.items():
                totals = np.array([s.total for s in scores])
                share = {f: np.mean([s.points[f] > 0 for s in scores]) for f in FEATURES}
                pitch = np.array([s.gaps["pitch"] for s in scores if s.gaps["pitch"] is not None])
                print(
                    f"{language} {kind:22s} n={len(scores):3d} total p5/median/p95 "
                    f"{np.percentile(totals, 5):.0f}/{np.median(totals):.0f}/{np.percentile(totals, 95):.0f} "
                    f"pass {np.mean(totals >= thresholds.pass_score):.2f} | pitch gap st median/p95 "
                    f"{np.median(pitch):.2f}/{np.percentile(pitch, 95):.2f} | points earned: "
                    + " ".join(f"{f} {share[f]:.2f}" for f in FEATURES)
                )


if __name__ == "__main__":
    main()
