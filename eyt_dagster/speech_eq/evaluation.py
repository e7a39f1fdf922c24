"""The SpeechEQ forced-choice loop (paper §2.4, docs/speecheq-evaluation.md): for a target, every item, condition,
option order and inference mode, ask round 1, then round 2 with the turn-4 clip the history holds. Pure
logic: the target is any `SpeechChooser`.

Decisions where the paper is silent:
- Round 1 is the same request under both inference modes, so it is asked once and stored once per mode; the
  second copy has `shared_call` true (same reply, no new call) and is left out of cost and latency figures.
- A reply that does not parse after the target's re-asks is wrong and counted as a parse failure, also
  when a re-ask itself failed (e.g. the server answered 400 because the conversation outgrew the context)
  and when the server refused the round's request itself (400 / 413 / 422 not about the response format):
  the model had its chance and gave no usable answer. Under sequential inference its history then holds
  the dissonant turn-4 clip (what a wrong choice would leave), and the unparsed text stands as the
  target's round-1 answer.
- Only a round that never reached the model leaves its item unscored: the first request failed to connect,
  timed out, or got 5xx / 429 after the client's retries (or 401 / 403 / 404, the endpoint's setup, or a
  refused response_format). The row carries `error` and no verdict; round 2 of that trajectory is not
  asked; a rerun repeats only what failed, since finished calls are served from the call cache.
See docs/speecheq-evaluation.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from eyt_dagster.core.errors import ReplyUnusableError, RequestRefusedError, RoleCallError
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.provider_profiles import join_notes
from eyt_dagster.core.replies import CallStats, Reply
from eyt_dagster.speech_eq.choice import ChoiceRequest, ChoiceRound, Inference, Order, choice_round, direct_answer
from eyt_dagster.speech_eq.item_types import EqItem
from eyt_dagster.speech_eq.protocol import DEFAULT_REPLY_FORMAT, PROFILE_FIELDS, AnyChoiceReply
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

ORDERS: tuple[Order, ...] = ("seeded", "flipped")
ERROR_MAX_CHARS = 500


class SpeechChooser(Protocol):
    """A SpeechEQ target: picks option 1 or 2 for the current round of a request."""

    model_id: str

    def choose(self, request: ChoiceRequest) -> Reply[AnyChoiceReply]: ...


def _ask(chooser: SpeechChooser, request: ChoiceRequest) -> dict[str, Any]:
    """One round asked: the outcome fields of its row, and the answer text that stands in the history."""
    started = time.perf_counter()
    try:
        reply = chooser.choose(request)
    except ReplyUnusableError as exc:  # never validated, also when a re-ask failed (module docstring)
        return _unusable(exc.raw, str(exc), started)
    except RequestRefusedError as exc:  # the server refused this round's request: no usable answer either
        return _unusable("", str(exc), started)
    except RoleCallError as exc:  # never reached the model; anything else (a bug, a missing key) fails the run
        return {
            "selected_option": None,
            "correct": None,
            "parse_failed": False,
            "reasoning": "",
            "error": str(exc)[:ERROR_MAX_CHARS],
            "answer": None,
            **_stats(CallStats(), time.perf_counter() - started),
        }
    wall = time.perf_counter() - started
    selected = int(reply.value.selected_option)
    profiles = {name: getattr(reply.value, name, None) for name in PROFILE_FIELDS}
    return {
        "selected_option": selected,
        "correct": selected == request.current.correct_option,
        "parse_failed": False,
        "reasoning": reply.value.reasoning,
        **profiles,
        "error": None,
        "answer": reply.raw or json.dumps(reply.value.model_dump()),
        **_stats(reply.stats, wall),
    }


def _unusable(raw: str, message: str, started: float) -> dict[str, Any]:
    """The row fields of a round the model answered without a usable choice: wrong, a parse failure."""
    return {
        "selected_option": None,
        "correct": False,
        "parse_failed": True,
        "reasoning": "",
        "error": None,
        "answer": raw,
        **_stats(CallStats(), time.perf_counter() - started),
        "parse_error": message.splitlines()[0][:ERROR_MAX_CHARS],
    }


def _stats(stats: CallStats, wall: float) -> dict[str, Any]:
    """Cost fields of a row. A model call reports its own latency (also when served from the cache, so a
    rerun reports the same figure); an embedded baseline reports its compute time."""
    called = stats.calls + stats.cache_hits > 0
    return {
        "calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "latency_s": stats.latency_s if called else wall,
        "tokens_in": stats.tokens_in,
        "tokens_out": stats.tokens_out,
        "tokens": stats.tokens_in + stats.tokens_out,
        "cost_usd": stats.cost_usd,
        "reasoning_tokens": stats.reasoning_tokens,
        "adaptations": join_notes(stats.adaptations),
    }


def _row(
    item: EqItem,
    condition: str,
    inference: str,
    order: str,
    round_: ChoiceRound,
    outcome: dict[str, Any],
    history_turn4: str | None,
    shared: bool,
    reply_format: str,
) -> dict[str, Any]:
    composite, _ = SUBSCALES[item.subscale]
    row = {
        "item_id": item.dataset_id,
        "subscale": item.subscale,
        "composite": composite,
        "valence": item.scenario.valence,
        "condition": condition,
        "inference": inference,
        "order": order,
        "round": round_.round,
        "option1": round_.order[0],
        "option2": round_.order[1],
        "history_turn4": history_turn4,
        "correct_option": round_.correct_option,
        "shared_call": shared,
        "reply_format": reply_format,
    }
    row.update({k: v for k, v in outcome.items() if k not in ("answer", "parse_error")})
    if outcome.get("parse_error"):
        row["reasoning"] = f"(reply did not parse) {outcome['parse_error']}"
    return row


def _first_request(
    item: EqItem, condition: str, system_prompt: str, seed: int, order: Order, reply_format: str
) -> tuple[ChoiceRound, ChoiceRequest]:
    round1 = choice_round(item, 1, seed, order)
    return round1, ChoiceRequest(
        item=item, condition=condition, system_prompt=system_prompt, round1=round1, reply_format=reply_format
    )


def _second_request(
    item: EqItem,
    condition: str,
    system_prompt: str,
    seed: int,
    order: Order,
    round1: ChoiceRound,
    r1: dict[str, Any],
    mode: str,
    reply_format: str,
) -> tuple[str, ChoiceRound, ChoiceRequest]:
    """Round 2 under one inference mode: the turn-4 clip in the history, the round, and the request."""
    if mode == "sequential":
        chosen = round1.order[r1["selected_option"] - 1] if r1["selected_option"] else "dissonant"
        answer = r1["answer"]
    else:
        chosen, answer = "resonant", direct_answer(round1, reply_format)
    round2 = choice_round(item, 2, seed, order, turn4_in_history=chosen)  # type: ignore[arg-type]
    second = ChoiceRequest(
        item=item,
        condition=condition,
        system_prompt=system_prompt,
        round1=round1,
        round2=round2,
        round1_answer=answer,
        reply_format=reply_format,
    )
    return chosen, round2, second


def _trajectory_rows(
    item: EqItem,
    condition: str,
    order: str,
    modes: Sequence[str],
    round1: ChoiceRound,
    r1: dict[str, Any],
    seconds: Mapping[str, tuple[str, ChoiceRound, dict[str, Any]]],
    reply_format: str,
) -> list[dict[str, Any]]:
    """The rows of one order: per mode, round 1 (stored once per mode) then its round 2 when it was asked."""
    rows = []
    for n, mode in enumerate(modes):
        rows.append(_row(item, condition, mode, order, round1, r1, None, shared=n > 0, reply_format=reply_format))
        if mode in seconds:
            chosen, round2, outcome = seconds[mode]
            rows.append(
                _row(item, condition, mode, order, round2, outcome, chosen, shared=False, reply_format=reply_format)
            )
    return rows


def evaluate_item(
    item: EqItem,
    chooser: SpeechChooser,
    *,
    condition: str,
    system_prompt: str,
    seed: int,
    orders: Iterable[Order],
    inference: Iterable[Inference],
    reply_format: str = DEFAULT_REPLY_FORMAT,
) -> list[dict[str, Any]]:
    """All rows of one item for one condition, one call after another: per order, round 1 then round 2
    under each inference mode."""
    rows: list[dict[str, Any]] = []
    modes = list(inference)
    for order in orders:
        round1, first = _first_request(item, condition, system_prompt, seed, order, reply_format)
        r1 = _ask(chooser, first)
        seconds: dict[str, tuple[str, ChoiceRound, dict[str, Any]]] = {}
        if r1["error"] is None:
            for mode in modes:
                chosen, round2, second = _second_request(
                    item, condition, system_prompt, seed, order, round1, r1, mode, reply_format
                )
                seconds[mode] = (chosen, round2, _ask(chooser, second))
        rows += _trajectory_rows(item, condition, order, modes, round1, r1, seconds, reply_format)
    return rows


def evaluate_items(
    items: list[EqItem],
    chooser: SpeechChooser,
    *,
    conditions: dict[str, str],
    seed: int,
    both_orders: bool,
    inference: Iterable[Inference],
    max_workers: int = 1,
    on_done: Callable[[int, int], None] | None = None,
    reply_format: str = DEFAULT_REPLY_FORMAT,
) -> list[dict[str, Any]]:
    """Every item under every condition (`conditions`: name -> system prompt) in one reply format; rows come
    back in item order, the same rows whatever `max_workers`.

    With `max_workers` > 1 (remote targets) the rounds are the unit of work, not the items: every round 1
    (item x condition x order) is independent, and the round 2 of each inference mode is started as soon as
    its round 1 has answered, so up to `max_workers` calls are in flight and a trajectory waits for nothing
    but its own round 1 (see docs/throughput.md)."""
    orders: tuple[Order, ...] = ORDERS if both_orders else ORDERS[:1]
    modes = list(inference)
    jobs = [(item, name, prompt) for name, prompt in conditions.items() for item in items]
    if max_workers <= 1:

        def run(job: tuple[EqItem, str, str]) -> list[dict[str, Any]]:
            item, name, prompt = job
            return evaluate_item(
                item,
                chooser,
                condition=name,
                system_prompt=prompt,
                seed=seed,
                orders=orders,
                inference=modes,
                reply_format=reply_format,
            )

        return [row for rows in ordered_map(run, jobs, 1, on_done) for row in rows]
    return _evaluate_concurrently(jobs, chooser, orders, modes, seed, reply_format, max_workers, on_done)


def _evaluate_concurrently(
    jobs: list[tuple[EqItem, str, str]],
    chooser: SpeechChooser,
    orders: tuple[Order, ...],
    modes: Sequence[str],
    seed: int,
    reply_format: str,
    max_workers: int,
    on_done: Callable[[int, int], None] | None,
) -> list[dict[str, Any]]:
    pool = ThreadPoolExecutor(max_workers=max_workers)

    def first_round(item: EqItem, name: str, prompt: str, order: Order) -> tuple[Any, ...]:
        """Round 1, then round 2 of each mode handed to the pool (they need only this answer)."""
        round1, first = _first_request(item, name, prompt, seed, order, reply_format)
        r1 = _ask(chooser, first)
        seconds = {}
        if r1["error"] is None:
            for mode in modes:
                chosen, round2, second = _second_request(
                    item, name, prompt, seed, order, round1, r1, mode, reply_format
                )
                seconds[mode] = (chosen, round2, pool.submit(_ask, chooser, second))
        return round1, r1, seconds

    rows: list[dict[str, Any]] = []
    if on_done is not None and jobs:
        on_done(0, len(jobs))  # the total, before the first answer
    try:
        started = [
            [pool.submit(first_round, item, name, prompt, order) for order in orders] for item, name, prompt in jobs
        ]
        for done, ((item, name, _), futures) in enumerate(zip(jobs, started), start=1):
            for order, future in zip(orders, futures):
                round1, r1, pending = future.result()
                seconds = {mode: (chosen, round2, f.result()) for mode, (chosen, round2, f) in pending.items()}
                rows += _trajectory_rows(item, name, order, modes, round1, r1, seconds, reply_format)
            if on_done is not None:
                on_done(done, len(jobs))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return rows
