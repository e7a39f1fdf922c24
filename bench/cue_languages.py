"""What a cascade's acoustic cues (`emo_des`) say of the embedded voices, English against Mandarin: the pitch level
against the gender's typical speaking pitch, the pitch variability and the speaking rate of espeak-ng clips of five
sentences per language (the same meanings), two voices (the first female and male voice of each language), under
three tone instructions (the plain voice, a flat one, an expressive one). Not a test; docs/languages.md quotes
its output.

    python bench/cue_languages.py
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.speech_eq.cues import emo_des, pitch_offset_semitones  # noqa: E402
from eyt_dagster.speech_eq.prosody import voice_for  # noqa: E402
from resources.audio.tts import EspeakTTS  # noqa: E402
from resources.audio.voice_measures import voice_measures  # noqa: E402

SENTENCES = {
    "en": [
        "I was hoping we could talk about what happened at work today.",
        "Can you tell me how to plan my week around night shifts?",
        "My sister called and I still don't know what to say to her.",
        "We finally finished the project and everyone was relieved.",
        "I think I need a break from all of this for a while.",
    ],
    "zh": [
        "我想跟你聊聊今天在公司发生的事。",
        "你能帮我安排一下这周的夜班作息吗？",
        "我姐姐打电话来了，我还是不知道该跟她说什么。",
        "项目终于做完了，大家都松了一口气。",
        "我觉得我需要暂时放下这一切，休息一下。",
    ],
}
INSTRUCTIONS = ("medium pace", "flat monotone", "expressive, rising")


def main() -> None:
    tts = EspeakTTS()
    print("language | instruction | pitch vs norm (st, median) | variability (st, median) | rate (syll/s) | pitch cue")
    with tempfile.TemporaryDirectory() as tmp:
        for language, texts in SENTENCES.items():
            for instruction in INSTRUCTIONS:
                offsets, spreads, rates, cues = [], [], [], Counter()
                for gender in ("female", "male"):
                    voice = voice_for(gender, 0, language)
                    for i, text in enumerate(texts):
                        wav, _ = tts.synthesize(text, instruction, voice)
                        path = Path(tmp) / f"{language}-{gender}-{i}.wav"
                        path.write_bytes(wav)
                        m = voice_measures(path)
                        offsets.append(pitch_offset_semitones(m.pitch_hz, gender) if m.pitch_hz else np.nan)
                        spreads.append(m.pitch_sd_semitones or 0.0)
                        rates.append(m.rate)
                        cues[emo_des(m, gender).split(";")[0]] += 1
                shown = ", ".join(f"{cue} x{n}" for cue, n in cues.most_common())
                print(
                    f"{language} | {instruction} | {np.nanmedian(offsets):+.1f} | {np.median(spreads):.2f} "
                    f"({min(spreads):.2f}-{max(spreads):.2f}) | {np.median(rates):.2f} | {shown}"
                )


if __name__ == "__main__":
    main()
