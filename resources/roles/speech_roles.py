"""The SpeechEQ roles a slate names, built: the text generator, each target's chooser and the synthesiser,
each an embedded baseline or a model reached over the network.

Chat clients come from the `models` resource (resources/models/model_access.py); which class plays which role, and
how a target hears a clip, is decided here, the one place for SpeechEQ.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.speech_eq.baseline_choosers import ACOUSTIC_RULES, AcousticChooser, RandomChooser
from eyt_dagster.speech_eq.chat_chooser import ChatChooser, cascaded_text, oracle_text
from eyt_dagster.speech_eq.evaluation import SpeechChooser
from eyt_dagster.speech_eq.generators import LLMSpeechGenerator, SpeechGenerator, TemplateGenerator
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS_BY_LANGUAGE, TONE_LENGTH
from resources.audio.asr import make_asr, transcripts
from resources.audio.audio_features import clip_features
from resources.audio.audio_parts import input_audio_part
from resources.audio.clip_analysis import ClipAnalysisStore
from resources.audio.cue_source import make_cue_source
from resources.audio.tts import EspeakTTS, OpenAISpeechTTS
from resources.models.chat_client import OpenAIChatClient
from resources.models.model_access import ModelAccess

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate


class SpeechRoles:
    """The SpeechEQ generator, targets and synthesiser of one slate."""

    def __init__(self, slate: Slate, models: ModelAccess) -> None:
        self.slate = slate
        self._models = models
        # cascades' per-clip transcripts, voice measures and emotion outputs, under the data dir's cache folder
        self._clip_analyses = ClipAnalysisStore(models.data_dir)

    def _client(self, ref: ModelRef, role: str, run_id: str | None) -> OpenAIChatClient:
        return self._models.client(ref, role, run_id, self.slate.seed, budget=self.slate.spend_budget())

    def speech_generator(self, run_id: str | None = None) -> SpeechGenerator:
        """The SpeechEQ text generator: the embedded template baseline, or chat models (ledger roles
        speech_generator, speech_validator and speech_tone_judge)."""
        speech = self.slate.speech
        ref = speech.text_model("generator")
        if ref is None:
            return TemplateGenerator(self.slate.seed, speech.language)

        def client(role: Literal["validator", "tone_judge"], ledger_role: str) -> OpenAIChatClient | None:
            other = speech.text_model(role)
            return self._client(other, ledger_role, run_id) if other is not None else None

        return LLMSpeechGenerator(
            self._client(ref, "speech_generator", run_id),
            self.slate.seed,
            validator=client("validator", "speech_validator"),
            judge=client("tone_judge", "speech_tone_judge"),
            bland_words=tuple(speech.bland_words or BLAND_WORDS_BY_LANGUAGE[speech.language]),
            max_concurrency=ref.max_concurrency,
            language=speech.language,
            min_words=TONE_LENGTH[speech.language][0],
            max_words=TONE_LENGTH[speech.language][1],
        )

    def speech_target(self, target_id: str, run_id: str | None = None) -> SpeechChooser:
        """A SpeechEQ target: an embedded chooser baseline, or a chat model hearing audio parts, reading a
        cascade's transcripts and cues, or reading the oracle's transcripts and tone instructions."""
        ref = self.slate.target_of("speech_eq", target_id)
        if ref.is_baseline:
            if ref.model == "random-chooser":
                return RandomChooser(ref.id, self.slate.seed)
            # each candidate clip is read in both orders and both inference modes: measure it once
            features = lru_cache(maxsize=8192)(clip_features)
            return AcousticChooser(ref.id, features, self.slate.speech.contrast, ACOUSTIC_RULES[ref.model])
        client = self._client(ref, "speech_target", run_id)
        if ref.speech_input == "audio":
            return ChatChooser(client, lambda clip: [input_audio_part(clip.path, ref.audio_format)], "audio")
        if ref.speech_input == "oracle_text":
            return ChatChooser(client, oracle_text, "oracle_text")
        # the transcripts and cue inputs do not depend on the target: computed once per clip, shared by all
        analyses = self._clip_analyses.session()
        transcript = transcripts(make_asr(ref.cascade.asr_model_path, self.slate.speech.language), analyses)
        cue = make_cue_source(ref.cascade.emotion_model_path, ref.cascade.cues, analyses)
        render = cascaded_text(lambda clip: transcript(clip.path, clip.text), lambda clip: cue(clip.path, clip.gender))
        return ChatChooser(
            client, render, f"cascaded-{ref.cascade.cues}", cue_source=cue.origin, clip_analyses=analyses.counts
        )

    def tts(self) -> OpenAISpeechTTS | EspeakTTS:
        """The speech synthesiser: an OpenAI-compatible endpoint when the slate names one, else espeak-ng."""
        ref = self.slate.speech.tts
        return OpenAISpeechTTS.from_ref(ref) if ref and not ref.is_baseline else EspeakTTS()
