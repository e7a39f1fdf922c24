"""Voice targets that hear: a chat model that takes the user's turns as audio (`speech_input: audio`).

Perception and reply are two calls, as in Algorithm 1 and as EYT-Bench's LLMTarget makes them, and they ask the
same things: perception answers EYT-Bench's UserLabels schema, the reply is free text under the target's system
prompt. What differs is how the dialogue travels. It goes as chat messages: every user turn, the current one
included, is a clip (an `input_audio` content part, rendered by the `render_clip` handed in), and each of the
target's own earlier replies is assistant text. Perception's instruction cannot be the text prompt, which shows
the conversation as a transcript, so it has its own prompt section (AUDIO_PERCEPTION_KEY): a system message that
asks for the four labels, and a short text part after the last clip naming it as the message to describe. The
reply call is EYT-Bench's own: the target's system prompt, then the dialogue. The ledger purposes are
LLMTarget's (`perceive:<turn>`, `respond:<turn>`).

A target whose slate entry has `audio_out` is a SpeakingListener: the same two calls, the reply asked for in audio
(the slate's voice and format). Its transcript is the reply the loop keeps, so the simulator and the judge read it
and the target gets it back as its own earlier reply, as text; the clip is kept beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eyt_dagster.core.chat_protocol import ChatClient
from eyt_dagster.core.languages import DEFAULT_LANGUAGE, LANGUAGES
from eyt_dagster.core.replies import Reply
from eyt_dagster.core.spoken_reply import SpeakingChatClient, SpokenReply
from eyt_dagster.eyt_bench.prompts import prompt_hash, render
from eyt_dagster.eyt_bench.types import UserLabels
from eyt_dagster.eyt_voice.voiced_loop import Heard, UserClip, VoicedExchange

AUDIO_PERCEPTION_KEY = "perception_audio"
ContentPart = dict[str, Any]
RenderClip = Callable[[UserClip], ContentPart]


def audio_prompt_hash(language: str = DEFAULT_LANGUAGE) -> str:
    """The hash of `language`'s audio perception prompt; "absent" when the prompt file has no such section, so that
    a prompt file written before it still loads the code location (an audio target then fails its first
    perception with the prompt file's error, which names the section)."""
    try:
        return prompt_hash(AUDIO_PERCEPTION_KEY, language=language)
    except ValueError:
        return "absent"


def audio_code_hash() -> str:
    """The audio perception prompt's hash for a code version: English's as it always was, then every other
    language's, so that editing the prompt in any language marks the voiced cells stale."""
    return "-".join(audio_prompt_hash(language) for language in LANGUAGES)


def audio_dialogue(history: list[VoicedExchange], query: UserClip, render_clip: RenderClip) -> list[dict[str, Any]]:
    """The dialogue as chat messages: each user turn its clip, each earlier reply assistant text, then q_t."""
    messages: list[dict[str, Any]] = []
    for exchange in history:
        messages.append({"role": "user", "content": [render_clip(exchange.user)]})
        messages.append({"role": "assistant", "content": exchange.response_text})
    messages.append({"role": "user", "content": [render_clip(query)]})
    return messages


class AudioListener:
    """An audio chat model as a voice target: it hears every user turn and reads its own earlier replies."""

    def __init__(self, client: ChatClient, render_clip: RenderClip, language: str = DEFAULT_LANGUAGE) -> None:
        self.client = client
        self.render_clip = render_clip
        self.language = language  # the pool's: the prompts' language (the clips speak it)
        self.model_id = client.model_id

    def perceive(self, history: list[VoicedExchange], query: UserClip) -> Reply[UserLabels]:
        turn = len(history) + 1
        messages = [
            {"role": "system", "content": render(AUDIO_PERCEPTION_KEY, "system", self.language)},
            *audio_dialogue(history, query, self.render_clip),
        ]
        instruction = {"type": "text", "text": render(AUDIO_PERCEPTION_KEY, "user", self.language, turn=turn).strip()}
        messages[-1] = {"role": "user", "content": [*messages[-1]["content"], instruction]}
        return self.client.complete_json(messages, UserLabels, purpose=f"perceive:{turn}")

    def reply_messages(self, history: list[VoicedExchange], query: UserClip) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": render("target", "system", self.language)},
            *audio_dialogue(history, query, self.render_clip),
        ]

    def respond(self, history: list[VoicedExchange], query: UserClip) -> Reply[str]:
        return self.client.complete_text(self.reply_messages(history, query), purpose=f"respond:{len(history) + 1}")

    def heard(self, clip: UserClip) -> Heard | None:
        return None  # the model hears the clip itself: there is no transcript or cue text to keep


class SpeakingListener(AudioListener):
    """An audio chat model that hears every user turn and answers in audio (`audio_out`): a Speaker."""

    def __init__(
        self,
        client: SpeakingChatClient,
        render_clip: RenderClip,
        voice: str,
        audio_format: str,
        language: str = DEFAULT_LANGUAGE,
    ) -> None:
        super().__init__(client, render_clip, language)
        self.speaking_client = client
        self.voice, self.audio_format = voice, audio_format

    def respond_aloud(self, history: list[VoicedExchange], query: UserClip) -> Reply[SpokenReply]:
        return self.speaking_client.complete_spoken(
            self.reply_messages(history, query),
            purpose=f"respond:{len(history) + 1}",
            voice=self.voice,
            audio_format=self.audio_format,
        )

    def respond(self, history: list[VoicedExchange], query: UserClip) -> Reply[str]:
        spoken = self.respond_aloud(history, query)
        return Reply(value=spoken.value.transcript, raw=spoken.raw, stats=spoken.stats)
