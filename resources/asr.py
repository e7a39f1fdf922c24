"""Speech recognition for cascaded SpeechEQ systems (paper §3, docs/speecheq-cascade.md): the transcript an LLM reads.

`ReferenceTranscripts` hands back the words each clip was synthesised from: a perfect recogniser, so a
cascade run with it is an upper bound on what any real ASR front end would allow. `FasterWhisperASR` runs
a faster-whisper (CTranslate2) model folder on the CPU with int8 weights, greedy decoding (beam 1) and the
language fixed to English. faster-whisper is optional: it is imported on first use, and its absence is
reported with the install command. Transcripts are cached per file (path, modification time and size).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from resources.audio_features import file_version

INSTALL_HINT = "pip install faster-whisper"


class ASRError(RuntimeError):
    """Speech recognition cannot run; the message names the package, model folder or clip, and what to do."""


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


class FasterWhisperASR:
    """faster-whisper on the CPU (int8, beam 1, English), loaded once on first use; transcripts cached per file."""

    def __init__(self, model_path: str) -> None:
        self.model_path = model_path
        self.name = f"faster-whisper:{Path(model_path).name or model_path}"
        self._model: Any = None
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, int, int], str] = {}

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
                    raise ASRError(
                        f"ASR model {self.model_path}: no such model folder; asr_model_path must be a "
                        "faster-whisper (CTranslate2) directory holding model.bin"
                    )
                try:
                    self._model = faster_whisper.WhisperModel(str(folder), device="cpu", compute_type="int8")
                except Exception as exc:
                    raise ASRError(f"ASR model {self.model_path}: cannot load ({type(exc).__name__}: {exc})") from exc
            return self._model

    def transcribe(self, path: str, reference_text: str | None = None) -> str:
        """What the model hears in the clip; `reference_text` is ignored (it exists for the shared interface)."""
        p = Path(path)
        if not p.is_file():
            raise ASRError(f"{p}: no such audio file")
        key = file_version(p)
        if key in self._cache:
            return self._cache[key]
        model = self.load()
        with self._lock:  # one decode at a time: the model object is shared
            segments, _info = model.transcribe(str(p), beam_size=1, language="en")
            text = " ".join(segment.text.strip() for segment in segments).strip()  # decoding happens here
        self._cache[key] = text
        return text


def make_asr(model_path: str | None) -> ReferenceTranscripts | FasterWhisperASR:
    """faster-whisper on the given model folder, or the reference transcripts when no folder is set."""
    return FasterWhisperASR(model_path) if model_path else ReferenceTranscripts()
