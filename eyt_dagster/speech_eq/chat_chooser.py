"""SpeechEQ targets that are chat models (paper §3): one class, three renderings of a clip.

- end-to-end audio models get each clip as an `input_audio` content part (base64 WAV or MP3);
- cascaded systems get a transcript (ASR or the reference text) with emotion cues (emo_num / emo_des);
- the oracle text check (paper Table 1) gets the transcript with the tone instruction it was spoken in.
The reply is JSON in the request's reply format (eyt_dagster/speech_eq/protocol.py), validated and re-asked by
the chat client; a reply that never validates surfaces as a parse failure (eyt_dagster/speech_eq/evaluation.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from eyt_dagster.core.chat_protocol import ChatClient
from eyt_dagster.core.replies import Reply
from eyt_dagster.speech_eq.choice import ChoiceRequest, ContentPart, RenderClip, Utterance, choice_messages
from eyt_dagster.speech_eq.protocol import AnyChoiceReply, reply_schema

ClipAnalysisCounts = Callable[[], Mapping[str, Mapping[str, int]]]


class ChatChooser:
    """A chat model answering SpeechEQ rounds; `render_clip` decides what it hears or reads. `cue_source` names
    what fed a cascade's emotion cues (resources/audio/cue_source.py), and `clip_analyses` tells, per clip analysis,
    how many clips it computed and reused (resources/audio/clip_analysis.py); both None for the other kinds."""

    def __init__(
        self,
        client: ChatClient,
        render_clip: RenderClip,
        kind: str,
        cue_source: str | None = None,
        clip_analyses: ClipAnalysisCounts | None = None,
    ) -> None:
        self.client = client
        self.model_id = client.model_id
        self.render_clip = render_clip
        self.kind = kind
        self.cue_source = cue_source
        self.clip_analyses = clip_analyses

    def choose(self, request: ChoiceRequest) -> Reply[AnyChoiceReply]:
        messages = choice_messages(request, self.render_clip)
        return self.client.complete_json(
            messages, reply_schema(request.reply_format), purpose=f"speech_eq_round{request.current.round}"
        )


def oracle_text(clip: Utterance) -> list[ContentPart]:
    """The oracle rendering: the words and the tone instruction the clip was synthesised from."""
    return [{"type": "text", "text": f'"{clip.text}" [spoken: {clip.tone or "no instruction recorded"}]'}]


def cascaded_text(transcribe: Callable[[Utterance], str], cue: Callable[[Utterance], str]) -> RenderClip:
    """The cascade rendering: what ASR heard and the emotion cues of the voice."""

    def render(clip: Utterance) -> list[ContentPart]:
        return [{"type": "text", "text": f'"{transcribe(clip)}" [voice: {cue(clip)}]'}]

    return render
