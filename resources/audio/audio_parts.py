"""Clips as OpenAI `input_audio` content parts, for end-to-end audio chat targets (docs/method.md#targets).

A part carries the file's bytes in base64 with the format name ('wav' or 'mp3'). A clip already in the
requested format is sent byte for byte; the container is recognised from the file's first bytes, not its
name. Otherwise soundfile (libsndfile) converts it in memory: WAV as 16-bit PCM, MP3 as MPEG layer III,
at the clip's own sample rate and channels. libsndfile reads and writes MP3 from version 1.1.0; where the
installed one cannot, the error says to set the target's audio_format to the clips' format instead.
Encoded clips are kept in a small LRU keyed by path, format, modification time and size: the same context
clips come back in every round and for every target.
"""

from __future__ import annotations

import base64
import functools
import io
from pathlib import Path
from typing import Any, Literal

from resources.audio.audio_features import file_version

AudioFormat = Literal["wav", "mp3"]
AUDIO_FORMATS: tuple[AudioFormat, ...] = ("wav", "mp3")
CACHE_SIZE = 256  # ~0.3 MB of base64 per 5 s of 22 kHz WAV: under 100 MB when full
_WRITE = {"wav": ("WAV", "PCM_16"), "mp3": ("MP3", "MPEG_LAYER_III")}


class AudioPartError(ValueError):
    """A clip cannot be sent as an input_audio part; the message names the file and what to do."""


def sniff_format(head: bytes) -> AudioFormat | None:
    """'wav' or 'mp3' from a file's first bytes (RIFF/RF64 WAVE header; ID3 tag or MPEG frame sync), else None."""
    if len(head) >= 12 and head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head[:3] == b"ID3" or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    return None


def can_write(fmt: AudioFormat) -> bool:
    """Whether the installed libsndfile can encode this format."""
    import soundfile as sf  # imported here: loading the code location stays light

    container, subtype = _WRITE[fmt]
    try:
        return container in sf.available_formats() and subtype in sf.available_subtypes(container)
    except Exception:
        return False


def _convert(path: str, data: bytes, fmt: AudioFormat) -> bytes:
    import soundfile as sf

    hint = f"set the target's audio_format to the clips' format ({sniff_format(data[:16]) or 'unknown'})"
    if not can_write(fmt):
        raise AudioPartError(
            f"{path}: needs converting to {fmt}, but soundfile {sf.__version__} with libsndfile "
            f"{sf.__libsndfile_version__} cannot write {fmt.upper()}; {hint}"
        )
    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as err:
        raise AudioPartError(f"{path}: soundfile cannot read this clip ({err}); {hint}") from err
    container, subtype = _WRITE[fmt]
    out = io.BytesIO()
    try:
        sf.write(out, samples, rate, format=container, subtype=subtype)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as err:
        raise AudioPartError(f"{path}: cannot encode {fmt.upper()} at {rate} Hz ({err}); {hint}") from err
    return out.getvalue()


@functools.lru_cache(maxsize=CACHE_SIZE)
def _encoded(path: str, fmt: AudioFormat, _mtime_ns: int, _size: int) -> str:
    data = Path(path).read_bytes()
    if not data:
        raise AudioPartError(f"{path}: the audio file is empty")
    if sniff_format(data[:16]) != fmt:
        data = _convert(path, data, fmt)
    return base64.b64encode(data).decode("ascii")


def input_audio_part(path: str | Path, fmt: AudioFormat) -> dict[str, Any]:
    """`{"type": "input_audio", "input_audio": {"data": <base64>, "format": fmt}}` for one clip file."""
    if fmt not in AUDIO_FORMATS:
        raise ValueError(f"audio format must be one of {AUDIO_FORMATS}, got {fmt!r}")
    p = Path(path)
    if not p.is_file():
        raise AudioPartError(f"{p}: no such audio file")
    path_text, mtime_ns, size = file_version(p)
    return {"type": "input_audio", "input_audio": {"data": _encoded(path_text, fmt, mtime_ns, size), "format": fmt}}
