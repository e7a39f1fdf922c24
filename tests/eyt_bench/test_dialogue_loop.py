"""Algorithm 1: stopping rules, error handling, label rejection, and prompt-disjoint perception/generation."""

import json
import threading

import pytest
from pydantic import BaseModel, ValidationError

from eyt_dagster.core.errors import RoleCallError
from eyt_dagster.core.replies import Reply
from eyt_dagster.eyt_bench.chat_roles import LLMTarget
from eyt_dagster.eyt_bench.dialogue_loop import run_dialogue, run_dialogues
from eyt_dagster.eyt_bench.prompts import render
from eyt_dagster.eyt_bench.types import ChatSeed, Exchange, SimulatorTurn, UserLabels

pytestmark = pytest.mark.unit

LABELS = UserLabels(
    explicit_intent="seeking_advice",
    latent_intent="self_improvement",
    emotion="hope",
    intent_description="wants a plan",
)
SEED = ChatSeed(
    seed_id="nemotron_usa:p1",
    pool="nemotron_usa",
    persona_id="p1",
    persona_text="A nurse in Ohio.",
    topic="night shifts",
    initial_emotion="anxiety",
    initial_explicit_intent="seeking_advice",
    initial_latent_intent="need_for_security",
    initial_intent_description="wants to sleep better",
    final_intent="The user has a sleep routine for night shifts.",
    first_query="How do I sleep after nights?",
)


class ScriptedSimulator:
    model_id = "scripted-sim"

    def __init__(self, progress):
        self.progress = list(progress)
        self.calls = 0

    def next_turn(self, seed, history):
        p = self.progress[self.calls]
        self.calls += 1
        return Reply(value=SimulatorTurn(user_text=f"user {self.calls + 1}", labels=LABELS, progress=p), raw="{}")


class EchoTarget:
    model_id = "echo"

    def perceive(self, history, query):
        return Reply(value=LABELS, raw="{}")

    def respond(self, history, query):
        return Reply(value=f"reply to {query}", raw="")


def test_two_consecutive_achieved_stop_the_dialogue():
    sim = ScriptedSimulator(["in_progress", "achieved", "in_progress", "achieved", "achieved", "in_progress"])
    result = run_dialogue(SEED, sim, EchoTarget(), t_max=10)
    assert result.error is None
    assert [t.turn for t in result.turns] == [1, 2, 3, 4, 5]
    assert [t.progress for t in result.turns][-2:] == ["achieved", "achieved"]
    assert result.turns[0].user_text == SEED.first_query and result.turns[0].gold == SEED.opening_labels()
    assert result.turns[1].user_text == "user 2"  # q_{t+1} comes from the simulator


def test_earliest_stop_is_two_turns_and_t_max_caps_the_rest():
    assert len(run_dialogue(SEED, ScriptedSimulator(["achieved"] * 10), EchoTarget(), t_max=10).turns) == 2
    capped = run_dialogue(SEED, ScriptedSimulator(["in_progress"] * 10), EchoTarget(), t_max=4)
    assert len(capped.turns) == 4 and capped.error is None


def test_a_failing_call_marks_the_dialogue_and_others_continue():
    class Flaky(EchoTarget):
        def respond(self, history, query):
            if "p2" in query:
                raise RoleCallError("server said 500")
            return super().respond(history, query)

    seeds = [SEED, SEED.model_copy(update={"seed_id": "nemotron_usa:p2", "first_query": "p2 question"})]
    results = run_dialogues(seeds, ScriptedSimulator(["achieved"] * 4), Flaky(), t_max=3, max_workers=1)
    assert results[0].error is None and len(results[0].turns) == 2
    assert "server said 500" in results[1].error


def test_an_error_that_is_not_about_one_dialogue_fails_loudly():
    class Broken(EchoTarget):
        def perceive(self, history, query):
            raise KeyError("a bug, or a missing API key: not something to record per dialogue")

    with pytest.raises(KeyError):
        run_dialogue(SEED, ScriptedSimulator(["achieved"] * 4), Broken(), t_max=3)


def test_dialogues_run_in_parallel_but_keep_their_order():
    seeds = [SEED.model_copy(update={"seed_id": f"s{i}"}) for i in range(8)]

    class FreshSim:
        model_id = "sim"

        def next_turn(self, seed, history):
            progress = "achieved" if len(history) >= 3 else "in_progress"
            return Reply(
                value=SimulatorTurn(
                    user_text=f"{seed.seed_id} turn {len(history) + 1}", labels=LABELS, progress=progress
                ),
                raw="",
            )

    done = []
    results = run_dialogues(
        seeds, FreshSim(), EchoTarget(), t_max=10, max_workers=4, on_done=lambda d, n: done.append(d)
    )
    assert [r.seed.seed_id for r in results] == [s.seed_id for s in seeds]
    assert all([t.turn for t in r.turns] == [1, 2, 3, 4] for r in results)
    assert all(r.turns[2].user_text == f"{r.seed.seed_id} turn 3" for r in results)
    assert done == list(range(0, 9))  # told the total before the first dialogue starts


class RecordingClient:
    """A ChatClient that records each call's messages and answers from a script."""

    model_id = "recording"

    def __init__(self, json_replies=()):
        self.calls = []
        self.json_replies = list(json_replies)

    def complete_text(self, messages, *, purpose):
        self.calls.append(("text", purpose, messages))
        return Reply(value="Here is an answer.", raw="Here is an answer.")

    def complete_json(self, messages, schema: type[BaseModel], *, purpose):
        self.calls.append(("json", purpose, messages))
        raw = self.json_replies.pop(0)
        return Reply(value=schema.model_validate(json.loads(raw)), raw=raw)


def test_generation_call_never_carries_the_prediction_prompt():
    client = RecordingClient([LABELS.model_dump_json()] * 3)
    target = LLMTarget(client)
    history = []
    for query in ("first question", "second question", "third"):
        target.perceive(history, query)
        reply = target.respond(history, query)
        history.append(Exchange(user_text=query, response_text=reply.value))
    prediction_system = render("perception", "system")
    generation_calls = [c for c in client.calls if c[0] == "text"]
    perception_calls = [c for c in client.calls if c[0] == "json"]
    assert len(generation_calls) == 3 and len(perception_calls) == 3
    for _, _, messages in generation_calls:
        text = "\n".join(m["content"] for m in messages)
        assert prediction_system not in text
        assert "explicit_intent" not in text and "latent_intent" not in text
        assert messages[0] == {"role": "system", "content": render("target", "system")}
    assert perception_calls[0][2][0]["content"] == prediction_system
    # the generation call sees the dialogue as alternating user/assistant turns ending in q_t
    assert [m["role"] for m in generation_calls[2][2]] == ["system", "user", "assistant", "user", "assistant", "user"]


def test_labels_outside_the_taxonomy_are_rejected_not_coerced():
    with pytest.raises(ValidationError):
        UserLabels(
            explicit_intent="asking_stuff", latent_intent="self_improvement", emotion="hope", intent_description="x"
        )
    with pytest.raises(ValidationError):
        SimulatorTurn(user_text="hi", labels=LABELS, progress="done")
    bad = json.dumps({**LABELS.model_dump(), "emotion": "happy"})
    with pytest.raises(ValidationError):
        LLMTarget(RecordingClient([bad])).perceive([], "hello")


def test_perception_and_reply_of_a_turn_are_asked_at_the_same_time():
    both_asked = threading.Barrier(2, timeout=5)  # broken (an error) unless both calls are under way together

    class Meeting(EchoTarget):
        def perceive(self, history, query):
            both_asked.wait()
            return super().perceive(history, query)

        def respond(self, history, query):
            both_asked.wait()
            return super().respond(history, query)

    result = run_dialogue(SEED, ScriptedSimulator(["achieved"] * 4), Meeting(), t_max=3)
    assert result.error is None and [t.response_text for t in result.turns] == [
        f"reply to {SEED.first_query}",
        "reply to user 2",
    ]
    assert all(t.predicted == LABELS for t in result.turns)


def test_when_perception_and_reply_both_fail_the_perception_error_is_recorded():
    class BothFail(EchoTarget):
        def perceive(self, history, query):
            raise RoleCallError("perception refused")

        def respond(self, history, query):
            raise RoleCallError("reply refused")

    result = run_dialogue(SEED, ScriptedSimulator(["achieved"] * 4), BothFail(), t_max=3)
    assert "perception refused" in result.error and not result.turns
