"""The benchmark resource: the slate, and the role objects (embedded baselines or chat models) it names."""

from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext

from eyt_dagster.eyt_bench.baselines import make_embedded
from eyt_dagster.core.slate import ModelRef, Slate, load_slate
from eyt_dagster.eyt_bench.chat_roles import LLMJudge, LLMSimulator, LLMTarget
from eyt_dagster.core.role_protocols import Judge, Simulator, Target
from eyt_dagster.speech_eq.vocabulary import BLAND_WORDS
from eyt_dagster.speech_eq.generators import LLMSpeechGenerator, SpeechGenerator, TemplateGenerator
from eyt_dagster.speech_eq.baseline_choosers import AcousticChooser, RandomChooser
from eyt_dagster.speech_eq.evaluation import SpeechChooser
from eyt_dagster.speech_eq.chat_chooser import ChatChooser, cascaded_text, oracle_text
from resources.asr import make_asr
from resources.audio_features import clip_features
from resources.audio_parts import input_audio_part
from resources.call_cache import CallCache
from resources.chat_client import OpenAIChatClient
from resources.cue_source import make_cue_source
from resources.tts import EspeakTTS, OpenAISpeechTTS
from resources.warehouse import WAREHOUSE_FILE

CALL_CACHE_FILE = "cache/model_calls.sqlite"


class BenchmarkResource(ConfigurableResource):
    """Everything a run needs to know about the slate and how to reach its models.

    `slate_path` is read when a run starts, so editing the slate needs no code reload for settings;
    the call cache sits beside the warehouse in `data_dir`, never inside it.
    """

    slate_path: str
    data_dir: str

    @cached_property
    def slate(self) -> Slate:
        return load_slate(self.slate_path)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """When a run starts (before any step reads its inputs' versions): tag the run with this process, for the
        dead-run check, and record the slate's per-target and per-pool settings that changed, so the partitions
        this run writes name the settings they were computed with (docs/operations.md)."""
        from eyt_dagster.ops.dead_runs import process_tags
        from eyt_dagster.settings_sources import record_settings

        if context.instance is None:
            return
        if context.run_id:
            context.instance.add_run_tags(context.run_id, process_tags())
        record_settings(context.instance, self.slate)

    @property
    def warehouse(self) -> Path:
        return Path(self.data_dir) / WAREHOUSE_FILE

    @cached_property
    def cache(self) -> CallCache:
        path = Path(self.data_dir) / CALL_CACHE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        return CallCache(path)

    def _client(self, ref: ModelRef, role: str, run_id: str | None) -> OpenAIChatClient:
        return OpenAIChatClient(ref, role=role, cache=self.cache, seed=self.slate.seed, run_id=run_id)

    def simulator(self, run_id: str | None = None) -> Simulator:
        ref = self.slate.simulator
        if ref.is_baseline:
            return make_embedded("simulator", ref, seed=self.slate.seed, scale=self.slate.scale)
        return LLMSimulator(self._client(ref, "simulator", run_id))

    def target(self, target_id: str, run_id: str | None = None) -> Target:
        ref = self.slate.target(target_id)
        if not ref.runs("eyt_bench"):
            raise ValueError(f"target '{target_id}' does not run eyt_bench (its benchmarks: {ref.benchmarks}); "
                             "add eyt_bench to its benchmarks in the slate")
        if ref.is_baseline:
            return make_embedded("target", ref, seed=self.slate.seed, scale=self.slate.scale)
        return LLMTarget(self._client(ref, "target", run_id))

    def _judge(self, ref: ModelRef, run_id: str | None) -> Judge:
        if ref.is_baseline:
            return make_embedded("judge", ref, seed=self.slate.seed, scale=self.slate.scale)
        return LLMJudge(self._client(ref, "judge", run_id), self.slate.scale)

    def judges(self, run_id: str | None = None) -> list[Judge]:
        return [self._judge(ref, run_id) for ref in self.slate.judges]

    def speech_generator(self, run_id: str | None = None) -> SpeechGenerator:
        """The SpeechEQ text generator: the embedded template baseline, or chat models (ledger roles
        speech_generator, speech_validator and speech_tone_judge)."""
        speech = self.slate.speech
        ref = speech.text_model("generator")
        if ref is None:
            return TemplateGenerator(self.slate.seed)

        def client(role: str, ledger_role: str):  # noqa: ANN202 - OpenAIChatClient | None
            other = speech.text_model(role)
            return self._client(other, ledger_role, run_id) if other is not None else None

        return LLMSpeechGenerator(
            self._client(ref, "speech_generator", run_id), self.slate.seed,
            validator=client("validator", "speech_validator"), judge=client("tone_judge", "speech_tone_judge"),
            bland_words=tuple(speech.bland_words or BLAND_WORDS), max_concurrency=ref.max_concurrency,
        )

    def speech_target(self, target_id: str, run_id: str | None = None) -> SpeechChooser:
        """A SpeechEQ target: an embedded chooser baseline, or a chat model hearing audio parts, reading a
        cascade's transcripts and cues, or reading the oracle's transcripts and tone instructions."""
        ref = self.slate.target(target_id)
        if not ref.runs("speech_eq"):
            raise ValueError(f"target '{target_id}' does not run speech_eq (its benchmarks: {ref.benchmarks}); "
                             "add speech_eq to its benchmarks in the slate")
        if ref.is_baseline:
            if ref.model == "random-chooser":
                return RandomChooser(ref.id, self.slate.seed)
            # each candidate clip is read in both orders and both inference modes: measure it once
            return AcousticChooser(ref.id, lru_cache(maxsize=8192)(clip_features), self.slate.speech.contrast)
        client = self._client(ref, "speech_target", run_id)
        if ref.speech_input == "audio":
            return ChatChooser(client, lambda clip: [input_audio_part(clip.path, ref.audio_format)], "audio")
        if ref.speech_input == "oracle_text":
            return ChatChooser(client, oracle_text, "oracle_text")
        asr = make_asr(ref.cascade.asr_model_path)
        cue = make_cue_source(ref.cascade.emotion_model_path, ref.cascade.cues)
        render = cascaded_text(lambda clip: asr.transcribe(clip.path, clip.text), lambda clip: cue(clip.path, clip.gender))
        return ChatChooser(client, render, f"cascaded-{ref.cascade.cues}", cue_source=cue.origin)

    def tts(self):  # noqa: ANN201 - EspeakTTS | OpenAISpeechTTS
        """The speech synthesiser: an OpenAI-compatible endpoint when the slate names one, else espeak-ng."""
        ref = self.slate.speech.tts
        return OpenAISpeechTTS.from_ref(ref) if ref and not ref.is_baseline else EspeakTTS()

    def replacement_judge(self, run_id: str | None = None) -> Judge | None:
        """The cross-judge ablation's judge of a third family, when the slate names one."""
        ref = self.slate.replacement_judge
        return self._judge(ref, run_id) if ref else None
