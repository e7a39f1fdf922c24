"""Speech recognition for cascaded SpeechEQ systems (paper §3, docs/speecheq-cascade.md): the transcript an LLM reads.

`ReferenceTranscripts` hands back the words each clip was synthesised from: a perfect recogniser, so a
cascade run with it is an upper bound on what any real ASR front end would allow. `FasterWhisperASR` runs
a faster-whisper (CTranslate2) model folder on the CPU with int8 weights, greedy decoding (beam 1) and the
language fixed, English unless asked otherwise (`LOAD_SETTINGS`, `decoding`). The language is never detected: a
clip is decoded in the language its pool is played in, so a misheard language shows as errors, not as a switch.
An English-only model (Whisper `*.en`, such as the packaged tiny.en) is refused for any other language, since
faster-whisper would quietly decode English instead. faster-whisper is optional: it is imported on first use,
and its absence is reported with the install command. Cascades read faster-whisper's transcripts through the clip
analysis store (`transcripts`, resources/audio/clip_analysis.py): each clip is transcribed once for every target and
rerun, keyed by the clip's bytes, the model folder's identity and these settings (English's key is the one it
had before the language became a parameter, so no English transcript is recomputed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from eyt_dagster.core.languages import DEFAULT_LANGUAGE, LANGUAGE_NAMES, LANGUAGES
from resources.audio.audio_features import AudioFeatureError
from resources.audio.clip_analysis import ClipAnalyses, ClipAnalysis, folder_identity, package_versions

INSTALL_HINT = "pip install faster-whisper"
NO_FOLDER = "no such model folder; asr_model_path must be a faster-whisper (CTranslate2) directory holding model.bin"
# How the model is loaded and decodes: used for every transcript, and part of the stored transcripts' key.
LOAD_SETTINGS = {"device": "cpu", "compute_type": "int8"}
DECODING = {"beam_size": 1, "language": DEFAULT_LANGUAGE}
MULTILINGUAL_HINT = (
    "set asr_model_path to a multilingual Whisper model folder (one without '.en' in its name, e.g. whisper-tiny, "
    "whisper-base or whisper-small) converted with ct2-transformers-converter"
)
# Bump when a change to `FasterWhisperASR.transcribe` changes a transcript (resources/audio/clip_analysis.py).
ANALYSIS_VERSION = 1


class ASRError(RuntimeError):
    """Speech recognition cannot run; the message names the package, model folder or clip, and what to do."""


class ASRClipError(ASRError, AudioFeatureError):
    """This clip cannot be transcribed (missing or undecodable): that item fails, the others go on."""


class ASR(Protocol):
    name: str

    def transcribe(self, path: str, reference_text: str | None = None) -> str: ...


class ReferenceTranscripts:
    """The clip's own text as its transcript: an upper bound on ASR quality (no recognition errors)."""

    name = "reference-transcripts"

    def transcribe(self, path: str, reference_text: str | None = None) -> str:
        if reference_text is None:
            raise ASRError(f"{path}: reference transcripts need the clip's text, and none was given")
        return reference_text


def decoding(language: str) -> dict[str, Any]:
    """The decoding settings for clips in `language` (an ISO 639-1 code from eyt_dagster/core/languages.py, which
    Whisper spells the same way); ASRError for a code the project does not know."""
    if language not in LANGUAGES:
        raise ASRError(f"ASR language '{language}' is not one the project knows ({', '.join(LANGUAGES)})")
    return {**DECODING, "language": language}


class FasterWhisperASR:
    """faster-whisper on the CPU (int8, beam 1, the language given), loaded once on first use."""

    def __init__(self, model_path: str, language: str = DEFAULT_LANGUAGE) -> None:
        self.model_path = model_path
        self.decoding = decoding(language)
        self.language = language
        folder_name = Path(model_path).name or model_path
        self.name = f"faster-whisper:{folder_name}" + ("" if language == DEFAULT_LANGUAGE else f":{language}")
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        """The WhisperModel, loaded on the first call; ASRError when the package or the model folder is missing."""
        with self._lock:
            if self._model is None:
                try:
                    import faster_whisper
                except ImportError as exc:
                    raise ASRError(
                        f"ASR model {self.model_path}: the faster-whisper package is not installed "
                        f"({exc}); {INSTALL_HINT}, or leave asr_model_path unset to use the reference "
                        "transcripts"
                    ) from None
                folder = Path(self.model_path).expanduser()
                if not folder.is_dir():
                    raise ASRError(f"ASR model {self.model_path}: {NO_FOLDER}")
                try:
                    model = faster_whisper.WhisperModel(str(folder), **LOAD_SETTINGS)
                except Exception as exc:
                    raise ASRError(f"ASR model {self.model_path}: cannot load ({type(exc).__name__}: {exc})") from exc
                if self.language != "en" and not model.model.is_multilingual:
                    raise ASRError(
                        f"ASR model {self.model_path}: this Whisper model knows only English, and the clips are to "
                        f"be transcribed in '{self.language}' ({LANGUAGE_NAMES[self.language]}); {MULTILINGUAL_HINT}"
                    )
                self._model = model
            return self._model

    def transcribe(self, path: str, reference_text: str | None = None) -> str:
        """What the model hears in the clip; `reference_text` is ignored (it exists for the shared interface).
        ASRClipError naming the clip when it is missing or cannot be decoded."""
        p = Path(path)
        if not p.is_file():
            raise ASRClipError(f"{p}: no such audio file")
        model = self.load()
        from faster_whisper import decode_audio

        try:  # what WhisperModel.transcribe does with a path, done here so a bad clip is told apart
            audio = decode_audio(str(p), sampling_rate=model.feature_extractor.sampling_rate)
        except Exception as exc:  # the decoder's own error types (PyAV) vary with the container
            raise ASRClipError(f"{p}: cannot decode audio ({type(exc).__name__}: {exc})") from exc
        with self._lock:  # one decode at a time: the model object is shared
            segments, _info = model.transcribe(audio, **self.decoding)
            return " ".join(segment.text.strip() for segment in segments).strip()  # decoding happens here

    @cached_property
    def analysis(self) -> ClipAnalysis[str]:
        """Transcripts as a stored clip analysis, keyed by the model folder's files and the settings above."""
        try:
            model = folder_identity(self.model_path)
        except FileNotFoundError:
            raise ASRError(f"ASR model {self.model_path}: {NO_FOLDER}") from None
        return ClipAnalysis(
            name="transcript",
            identity={
                "engine": "faster-whisper",
                "model_folder": model,
                **LOAD_SETTINGS,
                **self.decoding,
                "code_version": ANALYSIS_VERSION,
                **package_versions("faster-whisper", "ctranslate2", "av", "tokenizers"),
            },
            compute=self.transcribe,
        )


def transcripts(asr: ASR, analyses: ClipAnalyses) -> Callable[[str, str | None], str]:
    """`(clip path, clip text) -> transcript` for a cascade: faster-whisper's through the clip analysis store;
    the reference text as it is (nothing to compute)."""
    if isinstance(asr, FasterWhisperASR):
        return lambda path, _text: analyses.get(asr.analysis, path)
    return asr.transcribe


def make_asr(model_path: str | None, language: str = DEFAULT_LANGUAGE) -> ReferenceTranscripts | FasterWhisperASR:
    """faster-whisper on the given model folder, decoding in `language`, or the reference transcripts when no
    folder is set (they are the clip's own text, in whatever language it is); ASRError for an unknown language."""
    decoding(language)
    return FasterWhisperASR(model_path, language) if model_path else ReferenceTranscripts()
