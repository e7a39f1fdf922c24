"""Algorithm 1 of EYT-Bench: one multi-turn dialogue from a ChatSEED, and many of them in parallel.

Pure logic: it drives a Simulator and a Target (eyt_dagster/eyt_bench/role_protocols.py) and knows nothing of Dagster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from eyt_dagster.core.errors import PER_ITEM_ERRORS, describe_error, failure_kind
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.eyt_bench.role_protocols import Simulator, Target
from eyt_dagster.eyt_bench.types import ChatSeed, Exchange, UserLabels

ACHIEVED_TO_STOP = 2  # two consecutive `achieved` reports end the dialogue (Alg. 1, lines 8-9)
DIALOGUE_ROLES = ("simulator", "target")  # the roles whose calls a dialogue makes (error_role of its error row)


@dataclass(frozen=True)
class Turn:
    """One answered turn t: the user's q_t with gold labels, the target's prediction and reply r_t, and
    the simulator's final-intent progress p_{t+1} reported after reading r_t (what the stop rule reads)."""

    turn: int
    user_text: str
    gold: UserLabels
    predicted: UserLabels
    response_text: str
    progress: str
    target_stats: CallStats
    simulator_stats: CallStats
    reasoning: str = ""  # the target's reasoning behind r_t, kept apart from it (eyt_dagster/core/reasoning.py)


@dataclass
class DialogueResult:
    """A dialogue's answered turns; for one that failed, the error, the role whose call failed (`simulator` or
    `target`) and the failure's kind (eyt_dagster/core/errors.py FAILURE_KINDS)."""

    seed: ChatSeed
    turns: list[Turn] = field(default_factory=list)
    error: str | None = None
    error_role: str | None = None
    error_kind: str | None = None

    @property
    def history(self) -> list[Exchange]:
        return [Exchange(user_text=t.user_text, response_text=t.response_text) for t in self.turns]


TurnHook = Callable[[ChatSeed, Turn], None]


def run_dialogue(
    seed: ChatSeed, simulator: Simulator, target: Target, t_max: int, on_turn: TurnHook | None = None
) -> DialogueResult:
    """Run Algorithm 1 for one ChatSEED. A failed call ends the dialogue with `error` set and the turns done
    so far kept; the dialogue counts as incomplete (no metric, no judge) until a rerun, which replays those
    turns from the call cache at no cost and carries on from the failed call. `on_turn(seed, turn)` is called
    with each answered turn as it is recorded (in this thread; it must not raise)."""
    result = DialogueResult(seed=seed)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="perception") as side:
        _play(result, seed, simulator, target, t_max, side, on_turn)
    return result


def _perceive_and_respond(
    target: Target, history: list[Exchange], query: str, side: ThreadPoolExecutor
) -> tuple[Reply[UserLabels], Reply[str]]:
    """Perception on the side thread while the reply is asked here. Both are awaited; when both fail, the
    perception's error is the one raised (as when they ran one after the other)."""
    perceiving = side.submit(target.perceive, history, query)
    try:
        reply = target.respond(history, query)
    except BaseException:
        failed = perceiving.exception()
        if failed is not None:
            raise failed from None
        raise
    return perceiving.result(), reply


def _play(
    result: DialogueResult,
    seed: ChatSeed,
    simulator: Simulator,
    target: Target,
    t_max: int,
    side: ThreadPoolExecutor,
    on_turn: TurnHook | None,
) -> None:
    history: list[Exchange] = []
    query, gold = seed.first_query, seed.opening_labels()
    consecutive_achieved = 0
    role: str = "target"  # whose call is under way (one of DIALOGUE_ROLES), for the error row
    try:
        for t in range(1, t_max + 1):
            # lines 4-5: perception (prediction prompt P_p) and generation (system prompt only) both read only
            # the history and q_t, so they are sent side by side
            role = "target"
            perception, reply = _perceive_and_respond(target, history, query, side)
            history = [*history, Exchange(user_text=query, response_text=reply.value)]  # line 6
            role = "simulator"
            nxt = simulator.next_turn(seed, history)  # line 7: q_{t+1}, gold labels, p_{t+1}
            result.turns.append(
                Turn(
                    turn=t,
                    user_text=query,
                    gold=gold,
                    predicted=perception.value,
                    response_text=reply.value,
                    progress=nxt.value.progress,
                    target_stats=perception.stats + reply.stats,
                    simulator_stats=nxt.stats,
                    reasoning=reply.reasoning,
                )
            )
            if on_turn is not None:
                on_turn(seed, result.turns[-1])
            consecutive_achieved = consecutive_achieved + 1 if nxt.value.progress == "achieved" else 0
            if consecutive_achieved >= ACHIEVED_TO_STOP:
                break
            query, gold = nxt.value.user_text, nxt.value.labels
    except PER_ITEM_ERRORS as exc:  # a failed or unusable call: record it, keep the other dialogues going
        result.error = describe_error(exc)
        result.error_role, result.error_kind = role, failure_kind(exc)


def run_dialogues(
    seeds: Sequence[ChatSeed],
    simulator: Simulator,
    target: Target,
    t_max: int,
    *,
    max_workers: int = 1,
    on_done: Callable[[int, int], None] | None = None,
    on_turn: TurnHook | None = None,
) -> list[DialogueResult]:
    """Run many dialogues, up to `max_workers` at once; each dialogue's turns stay in order (how many
    requests reach each model at once is its endpoint's budget, resources/models/endpoint_gates.py).
    Results come back in the order of `seeds`. `on_done(done, total)` reports progress; `on_turn` see
    `run_dialogue`."""
    return ordered_map(lambda seed: run_dialogue(seed, simulator, target, t_max, on_turn), seeds, max_workers, on_done)
