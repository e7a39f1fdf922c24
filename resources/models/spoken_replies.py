"""Chat replies in audio (a `provider: openai` request with `modalities: ["text", "audio"]`): how the reply travels
from the transport to the cache, and back out as a SpokenReply (eyt_dagster/core/spoken_reply.py).

The endpoint answers with `message.audio` = {id, data (base64), transcript, expires_at}. The transport hands it on
as a wire envelope, JSON `{"transcript", "audio": {"id", "data", "expires_at"}}` (`wire_text`). Before the reply is
cached, `keep_audio` writes the decoded bytes once, content-addressed, to `<data dir>/audio/<sha[:2]>/<sha>.<format>`
(the clip store of the user turns, resources/audio/tts.py `store_clip`) and replaces `data` by the clip's sha256, byte
count and duration. That stored envelope is the cached reply's text, so the call cache holds the transcript and the
sha beside it, never the audio itself: a rerun makes no call and finds the same file (`spoken_reply`). A reply
without audio, or whose audio does not decode, is not cached: it is a per-item error (SpokenReplyError), and a rerun
asks again. A cached reply whose file has gone from the data directory is an error too, which names the file: the
cache cannot give that audio back, and asking again would give other audio under the same request.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
from pathlib import Path
from typing import Any

from eyt_dagster.core.errors import ReplyUnusableError
from eyt_dagster.core.spoken_reply import SpokenReply


class SpokenReplyError(ReplyUnusableError, ValueError):
    """A reply asked for in audio has no usable audio (none sent, undecodable), or its stored clip is gone."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


def audio_settings(voice: str, audio_format: str) -> dict[str, Any]:
    """The request fields that ask for a reply in audio (part of the request's cache key)."""
    return {"modalities": ["text", "audio"], "audio": {"voice": voice, "format": audio_format}}


def wire_text(message: Any) -> str:
    """The reply's text as the transport hands it on: the wire envelope when the message carries audio, else an
    envelope with no audio (keep_audio refuses it) and the message's text as the transcript."""
    audio = getattr(message, "audio", None)
    if audio is None:
        return json.dumps({"transcript": getattr(message, "content", None) or "", "audio": None})
    fields = {"id": audio.id, "data": audio.data, "expires_at": audio.expires_at}
    return json.dumps({"transcript": audio.transcript or "", "audio": fields})


def _duration(data: bytes, audio_format: str) -> float | None:
    from resources.audio.tts import wav_info

    if audio_format == "wav":
        seconds = wav_info(data).get("duration_s")
        return float(seconds) if seconds is not None else None
    try:
        import soundfile as sf

        return float(sf.info(io.BytesIO(data)).duration)
    except Exception:  # a libsndfile that cannot read the format: the length stays unknown
        return None


def keep_audio(text: str, data_dir: str | Path, audio_format: str) -> str:
    """The stored envelope of a wire envelope: its audio written to the clip store, `data` replaced by the clip's
    sha256, size and duration. Raises SpokenReplyError when the reply carries no audio that decodes."""
    from resources.audio.tts import store_clip  # here, not at the top: the chat transport loads this module, and tts

    # loads SpeechEQ's prosody, which EYT-Bench's assets do not import
    envelope = json.loads(text)
    audio = envelope.get("audio")
    transcript = str(envelope.get("transcript") or "")
    if not audio or not audio.get("data"):
        raise SpokenReplyError("the reply was asked for in audio and carries none (no message.audio)", transcript)
    try:
        data = base64.b64decode(audio["data"], validate=True)
    except (binascii.Error, ValueError):
        raise SpokenReplyError("the reply's audio is not valid base64", transcript) from None
    if not data:
        raise SpokenReplyError("the reply's audio is empty", transcript)
    path = store_clip(data_dir, data, audio_format)
    stored = {
        "id": audio.get("id"),
        "expires_at": audio.get("expires_at"),
        "format": audio_format,
        "sha256": path.stem,
        "bytes": len(data),
        "duration_s": _duration(data, audio_format),
    }
    return json.dumps({"transcript": transcript, "audio": stored}, sort_keys=True)


def spoken_reply(text: str, data_dir: str | Path) -> SpokenReply:
    """The SpokenReply of a stored envelope (a cached reply's text), its clip found in the data directory."""
    envelope = json.loads(text)
    audio = envelope["audio"]
    sha, fmt = str(audio["sha256"]), str(audio["format"])
    path = Path(data_dir) / "audio" / sha[:2] / f"{sha}.{fmt}"
    if not path.is_file() or path.stat().st_size != int(audio["bytes"]):
        raise SpokenReplyError(
            f"the cached reply's audio clip {path} is missing from the data directory; the call cache keeps only its "
            "sha256, so restore the file (or delete the reply from the call cache to ask again)",
            str(envelope.get("transcript") or ""),
        )
    duration = audio.get("duration_s")
    return SpokenReply(
        transcript=str(envelope.get("transcript") or ""),
        path=str(path),
        sha256=sha,
        duration_s=float(duration) if duration is not None else None,
        format=fmt,
    )
