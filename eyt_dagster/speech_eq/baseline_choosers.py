"""Embedded SpeechEQ baselines (docs/method.md): two choosers that need no model. They are baselines, named as such
in every report, never model evaluations; they ignore the persona condition's system prompt.

- `random-chooser`: a seeded coin per item, round, order, history and condition (expected accuracy 0.5 per
  round, 0.25 for both; it shows how far chance alone goes on the items at hand).
- `acoustic-chooser`: an arousal-matching rule on the candidates' acoustic features. It rates each
  candidate's arousal from pitch, loudness and pace relative to the other candidate, and picks the livelier
  one when the scene is Positive (joy is met with energy) and the calmer one when it is Negative or Conflict
  (pain is met gently, pressure with a steady voice). The gaps are counted in units of the contrast filter's
  one-point thresholds, so "clearly different" means the same here as in the dataset filter.

- `calmer-chooser` / `livelier-chooser`: the same measures, always the calmer (livelier) of the two clips, whatever
  the scene. They are shortcut baselines: how far one acoustic rule gets on the items at hand. One that beats chance
  by a wide margin measures the dataset (how its clips were made), not a model's judgement of the scene; the SEQ
  leaderboard flags it (seq_tables.SHORTCUT_MARGIN).

All fill the reply format the request asks for (eyt_dagster/speech_eq/protocol.py), like a model would: the
acoustic chooser's profile of each option is its measures, the random chooser says that it did not listen.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.speech_eq.choice import ChoiceRequest
from eyt_dagster.speech_eq.contrast import AcousticFeatures, ContrastThresholds
from eyt_dagster.speech_eq.protocol import AnyChoiceReply, make_reply

LIVELY_VALENCES = ("Positive",)


def seeded_choice(*parts: object) -> int:
    """Option 1 or 2 from a hash of the parts: the random baseline's coin, reproducible under the seed."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return digest[0] % 2 + 1


class RandomChooser:
    """The seeded random baseline."""

    def __init__(self, model_id: str, seed: int) -> None:
        self.model_id = model_id
        self.seed = seed

    def choose(self, request: ChoiceRequest) -> Reply[AnyChoiceReply]:
        current = request.current
        history = request.round2.shown[0].role if request.round2 else "-"
        option = seeded_choice(
            self.seed, self.model_id, request.item.dataset_id, current.round, current.order, history, request.condition
        )
        unheard = "not listened to (random baseline)"
        reply = make_reply(
            request.reply_format,
            selected_option=option,
            reasoning="seeded coin (random baseline)",
            acoustic_profile_1=unheard,
            acoustic_profile_2=unheard,
            situational_demand="not assessed (random baseline)",
        )
        return Reply(value=reply, raw=reply.model_dump_json(), stats=CallStats())


def arousal_gap(a: AcousticFeatures, b: AcousticFeatures, units: ContrastThresholds) -> float:
    """How much livelier clip a sounds than clip b: pitch (semitones), loudness (dB), pace (zero-crossing
    rate and duration, shorter = faster), each divided by its one-point contrast threshold."""
    gap = (a.rms_db - b.rms_db) / units.rms_db
    if a.mean_pitch_hz and b.mean_pitch_hz:
        gap += 12 * math.log2(a.mean_pitch_hz / b.mean_pitch_hz) / units.pitch_semitones_1
    if max(a.zcr, b.zcr) > 0:
        gap += (a.zcr - b.zcr) / max(a.zcr, b.zcr) / units.zcr_relative_1
    gap += (b.duration_s - a.duration_s) / max(a.duration_s, b.duration_s) / units.duration_relative
    return gap


# the acoustic rules by embedded model name: what each wants of the two voices
ACOUSTIC_RULES = {"acoustic-chooser": "valence", "calmer-chooser": "calmer", "livelier-chooser": "livelier"}


class AcousticChooser:
    """An acoustic-feature baseline; `features` reads a clip (resources.audio.audio_features). `wants`: "valence" (the
    arousal-matching rule: livelier in a Positive scene, calmer otherwise), "calmer" or "livelier" (always)."""

    def __init__(
        self,
        model_id: str,
        features: Callable[[str], AcousticFeatures],
        units: ContrastThresholds | None = None,
        wants: str = "valence",
    ) -> None:
        if wants not in ("valence", "calmer", "livelier"):
            raise ValueError(f"an acoustic chooser wants 'valence', 'calmer' or 'livelier', not {wants!r}")
        self.model_id = model_id
        self.features = features
        self.units = units or ContrastThresholds()
        self.wants = wants

    def choose(self, request: ChoiceRequest) -> Reply[AnyChoiceReply]:
        first, second = (self.features(clip.path) for clip in request.current.options)
        gap = arousal_gap(first, second, self.units)
        valence = request.item.scenario.valence
        lively = valence in LIVELY_VALENCES if self.wants == "valence" else self.wants == "livelier"
        option = 1 if (gap >= 0) == lively else 2
        wanted = "livelier" if lively else "calmer"
        if self.wants == "valence":
            demand = f"a {valence.lower()} scene: the {wanted} of the two voices (arousal-matching rule)"
            why = f"a {valence.lower()} scene calls for the {wanted} voice"
        else:
            demand = f"always the {wanted} of the two voices (shortcut rule; the scene is not read)"
            why = f"the rule always takes the {wanted} voice"
        reply = make_reply(
            request.reply_format,
            selected_option=option,
            acoustic_profile_1=acoustic_profile(first),
            acoustic_profile_2=acoustic_profile(second),
            situational_demand=demand,
            reasoning=f"option 1 is {'livelier' if gap >= 0 else 'calmer'} by {abs(gap):.1f} threshold units; {why}",
        )
        return Reply(value=reply, raw=reply.model_dump_json(), stats=CallStats())


def acoustic_profile(features: AcousticFeatures) -> str:
    """A clip's measures in words, as the acoustic baseline's profile of an option."""
    pitch = f"mean pitch {features.mean_pitch_hz:.0f} Hz" if features.mean_pitch_hz else "no voiced pitch found"
    return (
        f"{pitch}, loudness {features.rms_db:.1f} dBFS, {features.duration_s:.2f} s long, "
        f"zero-crossing rate {features.zcr:.3f} (measured, acoustic baseline)"
    )
