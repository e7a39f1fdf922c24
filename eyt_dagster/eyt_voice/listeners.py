"""Voice targets that read: a cascade (speech recognition and emotion cues, then a text model).

A cascade hears each user clip through `read`: the transcript of the clip and the cues of the voice, rendered
as SpeechEQ's cascades render a clip (`"<transcript>" [voice: <cues>]`), and plays EYT-Bench's text target on
that text. Its own earlier replies stay text. The embedded cascaded baseline is this with faster-whisper, the
acoustic cues and the reflective baseline target; a remote text model behind ASR is the same class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.role_protocols import Target
from eyt_dagster.eyt_bench.types import Exchange, UserLabels
from eyt_dagster.eyt_voice.voiced_loop import Heard, UserClip, VoicedExchange

ClipAnalysisCounts = Callable[[], Mapping[str, Mapping[str, int]]]


def cascade_text(transcript: str, cues: str) -> str:
    """What a cascade's text model reads of one clip."""
    return f'"{transcript}" [voice: {cues}]'


class CascadeListener:
    """A text target behind speech recognition (`transcribe`) and emotion cues (`cue`) of each clip."""

    def __init__(
        self,
        target: Target,
        transcribe: Callable[[UserClip], str],
        cue: Callable[[UserClip], str],
        clip_analyses: ClipAnalysisCounts | None = None,
    ) -> None:
        self.target = target
        self.transcribe, self.cue = transcribe, cue
        self.clip_analyses = clip_analyses  # per clip analysis, clips computed and reused (for the step's metadata)
        self.model_id = target.model_id

    def read(self, clip: UserClip) -> str:
        return cascade_text(self.transcribe(clip), self.cue(clip))

    def _text(self, history: list[VoicedExchange], query: UserClip) -> tuple[list[Exchange], str]:
        texts = [Exchange(user_text=self.read(h.user), response_text=h.response_text) for h in history]
        return texts, self.read(query)

    def perceive(self, history: list[VoicedExchange], query: UserClip) -> Reply[UserLabels]:
        return self.target.perceive(*self._text(history, query))

    def respond(self, history: list[VoicedExchange], query: UserClip) -> Reply[str]:
        return self.target.respond(*self._text(history, query))

    def heard(self, clip: UserClip) -> Heard | None:
        return Heard(transcript=self.transcribe(clip), cues=self.cue(clip))
