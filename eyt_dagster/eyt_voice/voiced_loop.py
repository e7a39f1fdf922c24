"""One EYT-Bench dialogue heard instead of read: Algorithm 1 unchanged, with every user turn voiced.

The loop, its stop rule and its failure handling are EYT-Bench's own (eyt_bench/dialogue_loop.run_dialogue). What
changes is what the target gets. Each user turn q_t is synthesised in the tone of its gold emotion (the
ChatSEED's initial emotion for q_1, then the emotion the simulator labelled q_{t+1} with), in the voice the
persona gets. The target hears the clips of the user's turns and reads its own earlier replies as text. The
simulator reads the target's replies as text, as in EYT-Bench, so the loop stays closed, and the judge later
scores the transcript as in EYT-Bench.

A per-dialogue session does this. It wraps the simulator, to learn each next turn's gold emotion, and the
listener, to hand it clips instead of text. It records what each turn's clip was and what the listener made of
it (a cascade's transcript and cues). A listener that answers in audio (a Speaker) gives its reply's transcript to
the loop as the reply, so the simulator, the judge and the target itself read that; the session keeps the reply's
clip. Pure logic: the voicer (TTS + clip store) and the listener are handed in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import Reply
from eyt_dagster.core.spoken_reply import SpokenReply
from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult, run_dialogue
from eyt_dagster.eyt_bench.role_protocols import Simulator
from eyt_dagster.eyt_bench.types import ChatSeed, ChatSeedContent, Exchange, PersonaRecord, SimulatorTurn, UserLabels
from eyt_dagster.eyt_voice.voicing import VoiceChoice, voice_instruction


@dataclass(frozen=True)
class UserClip:
    """One voiced user turn: its words, the tone it was spoken in, and the content-addressed clip file."""

    text: str
    emotion: str
    instruction: str
    gender: str  # of the voice (a cascade's cues read pitch against it)
    voice: str  # the synthesiser's voice name
    path: str
    sha256: str
    duration_s: float


@dataclass(frozen=True)
class Heard:
    """What a cascade read of a clip: its speech recognition's transcript and the cues of the voice."""

    transcript: str
    cues: str


@dataclass(frozen=True)
class VoicedExchange:
    """One completed turn as the listener gets it: the user's clip and its own reply as text."""

    user: UserClip
    response_text: str


class Voicer(Protocol):
    """Text -> a clip in a tone and voice; the same inputs give the same clip, synthesised once."""

    def voice(self, text: str, instruction: str, emotion: str, choice: VoiceChoice) -> UserClip: ...


class Listener(Protocol):
    """A voice target: perception and reply are two calls, as in Algorithm 1, on what it hears."""

    model_id: str

    def perceive(self, history: list[VoicedExchange], query: UserClip) -> Reply[UserLabels]: ...

    def respond(self, history: list[VoicedExchange], query: UserClip) -> Reply[str]: ...

    def heard(self, clip: UserClip) -> Heard | None:
        """What the target read of the clip, for a cascade (its transcript and cues); None for an audio model."""
        ...


@runtime_checkable
class Speaker(Protocol):
    """A listener that answers in audio: its reply is a transcript with the clip it was spoken in."""

    def respond_aloud(self, history: list[VoicedExchange], query: UserClip) -> Reply[SpokenReply]: ...


@dataclass
class VoicedDialogue:
    """A dialogue's result with the clip of each answered turn, what the listener read of it, and (for a target
    that answers in audio) each reply's clip."""

    result: DialogueResult
    clips: list[UserClip] = field(default_factory=list)
    heard: list[Heard | None] = field(default_factory=list)
    replies: list[SpokenReply | None] = field(default_factory=list)


class _Session:
    """One dialogue's voicing: turn t's gold emotion, its clip (made once) and the listener's view."""

    def __init__(self, seed: ChatSeed, voicer: Voicer, listener: Listener, choice: VoiceChoice) -> None:
        self.seed, self.voicer, self.listener, self.choice = seed, voicer, listener, choice
        self.emotions: list[str] = [seed.initial_emotion]  # turn t's gold emotion at index t - 1
        self.clips: list[UserClip] = []
        self.heard: list[Heard | None] = []
        self.replies: dict[int, SpokenReply] = {}  # turn -> the reply's clip, for a Speaker
        self._lock = threading.Lock()  # perception and reply ask for the same turn's clip side by side

    def clip(self, turn: int, text: str) -> UserClip:
        with self._lock:
            if len(self.clips) == turn - 1:  # turns are voiced in order, each once
                emotion = self.emotions[turn - 1]
                made = self.voicer.voice(text, voice_instruction(emotion), emotion, self.choice)
                self.clips.append(made)
                self.heard.append(self.listener.heard(made))
            clip = self.clips[turn - 1]
        if clip.text != text:
            raise AssertionError(f"turn {turn} was voiced as {clip.text!r}, not {text!r}")
        return clip

    def voiced(self, history: list[Exchange]) -> list[VoicedExchange]:
        return [VoicedExchange(self.clip(t, ex.user_text), ex.response_text) for t, ex in enumerate(history, 1)]


class _HeardTarget:
    """The listener behind EYT-Bench's Target protocol, for the loop."""

    def __init__(self, session: _Session) -> None:
        self.session = session
        self.model_id = session.listener.model_id

    def _query(self, history: list[Exchange], query: str) -> tuple[list[VoicedExchange], UserClip]:
        voiced = self.session.voiced(history)
        return voiced, self.session.clip(len(history) + 1, query)

    def perceive(self, history: list[Exchange], query: str) -> Reply[UserLabels]:
        return self.session.listener.perceive(*self._query(history, query))

    def respond(self, history: list[Exchange], query: str) -> Reply[str]:
        listener = self.session.listener
        if not isinstance(listener, Speaker):
            return listener.respond(*self._query(history, query))
        spoken = listener.respond_aloud(*self._query(history, query))
        self.session.replies[len(history) + 1] = spoken.value  # a replayed turn replaces its clip
        return Reply(value=spoken.value.transcript, raw=spoken.raw, stats=spoken.stats)


class _LabellingSimulator:
    """The simulator, noting the gold emotion of each next user turn it writes."""

    def __init__(self, simulator: Simulator, session: _Session) -> None:
        self.simulator, self.session = simulator, session
        self.model_id = simulator.model_id

    def generate_seed(self, persona: PersonaRecord, *, seed_id: str) -> Reply[ChatSeedContent]:
        return self.simulator.generate_seed(persona, seed_id=seed_id)

    def next_turn(self, seed: ChatSeed, history: list[Exchange]) -> Reply[SimulatorTurn]:
        reply = self.simulator.next_turn(seed, history)
        emotions = self.session.emotions
        del emotions[len(history) + 1 :]  # a replayed turn (after a failed call) replaces its emotion
        emotions.append(reply.value.labels.emotion)
        return reply


def run_voiced_dialogue(
    seed: ChatSeed, simulator: Simulator, listener: Listener, voicer: Voicer, choice: VoiceChoice, t_max: int
) -> VoicedDialogue:
    """Algorithm 1 for one ChatSEED with every user turn voiced (see the module's docstring)."""
    session = _Session(seed, voicer, listener, choice)
    result = run_dialogue(seed, _LabellingSimulator(simulator, session), _HeardTarget(session), t_max)
    answered = len(result.turns)
    replies = [session.replies.get(t) for t in range(1, answered + 1)]
    return VoicedDialogue(result, session.clips[:answered], session.heard[:answered], replies)


def run_voiced_dialogues(
    seeds: Sequence[ChatSeed],
    simulator: Simulator,
    listener: Listener,
    voicer: Voicer,
    voices: dict[str, VoiceChoice],
    t_max: int,
    *,
    max_workers: int = 1,
    on_done: Callable[[int, int], None] | None = None,
) -> list[VoicedDialogue]:
    """Many voiced dialogues, up to `max_workers` at once, in the order of `seeds`; `voices` by ChatSEED id."""
    return ordered_map(
        lambda seed: run_voiced_dialogue(seed, simulator, listener, voicer, voices[seed.seed_id], t_max),
        seeds,
        max_workers,
        on_done,
    )
