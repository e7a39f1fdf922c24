"""`eyt bench`: the ideal from hand-computed call counts, the latency part (never below zero), the server's
answers, its progress reported as it goes, and one tiny run end to end."""

import json
import sys
import time

import openai
import pytest

from eyt_dagster.eyt_bench.taxonomy import PAPER_POOLS
from eyt_dagster.eyt_bench.types import SimulatorTurn
from eyt_dagster.ops.bench import (
    CLAMPED_NOTE,
    EYT_STAGES,
    BenchSettings,
    Measurement,
    StageFigures,
    chain_length,
    from_json,
    latency_part,
    most_at_once,
    overlapped_ideal,
    run_bench,
    run_reporting,
    stage_ideals,
    table,
)
from eyt_dagster.ops.bench_server import PLAIN_REPLIES, LatencyServer
from eyt_dagster.ops.cli import main
from eyt_dagster.ops.json_schema_draw import WORDS, is_valid, prose

pytestmark = pytest.mark.unit


def test_ideal_is_the_larger_of_waves_and_the_dependent_chain():
    rows = (
        # 5 ChatSEEDs on a budget of 2: ceil(5/2) = 3 waves, chain 1
        [{"run_id": "a", "model_id": "sim", "purpose": f"chat_seed:p:{i}"} for i in range(5)]
        # one dialogue of 3 turns: 3 perceive + 3 respond + 3 simulate; budgets 2 (target) and 2 (simulator):
        # waves ceil(6/2) = 3 and ceil(3/2) = 2, chain 2 x 3 = 6
        + [
            {"run_id": "b", "model_id": "tgt", "purpose": f"{kind}:{t}"}
            for t in (1, 2, 3)
            for kind in ("perceive", "respond")
        ]
        # (the simulator's purpose names the turn it writes: t + 1)
        + [{"run_id": "b", "model_id": "sim", "purpose": f"simulate:p:7:{t + 1}"} for t in (1, 2, 3)]
        # a judge verdict and its re-ask (chain 2), plus 2 other verdicts: 4 calls, budget 2 -> 2 waves
        + [
            {"run_id": "b", "model_id": "judge", "purpose": p}
            for p in ("judge_turn:p:7:1", "judge_turn:p:7:1", "judge_turn:p:7:2", "judge_turn:p:7:3")
        ]
    )
    ideals = stage_ideals(rows, {"sim": 2, "tgt": 2, "judge": 2}, 0.5)
    assert ideals[("a", "chat_seeds")] == (5, 1.5)
    assert ideals[("b", "dialogue_turns")] == (9, 3.0)
    assert ideals[("b", "judge_verdicts")] == (4, 1.0)
    # x answered 1 turn, y 2 turns: 2 x 2 calls, not 2 x the largest index (3)
    assert chain_length("dialogue_turns", ["simulate:pool:x:2", "simulate:pool:y:2", "simulate:pool:y:3"]) == 4


def test_overlapped_runs_ideal_is_the_busiest_endpoint_or_the_longest_run_chain():
    # two cells side by side, each: 2 dialogues of 3 turns on one target (budget 4) and the judge (budget 4)
    rows = []
    for run in ("a", "b"):
        for d in ("x", "y"):
            for kind in ("perceive", "respond"):
                rows += [{"run_id": run, "model_id": "tgt", "purpose": f"{kind}:{d}{t}"} for t in (1, 2, 3)]
            rows += [{"run_id": run, "model_id": "sim", "purpose": f"simulate:pool:{d}:{t + 1}"} for t in (1, 2, 3)]
            rows += [{"run_id": run, "model_id": "judge", "purpose": f"judge_turn:pool:{d}:{t}"} for t in (1, 2, 3)]
    # target: 2 runs x 12 calls = 24 calls / 4 = 6 waves; a run's chain: 2 x 3 turns + 1 verdict = 7 -> 7 x 0.5
    assert overlapped_ideal(rows, {"tgt": 4, "sim": 4, "judge": 4}, 0.5) == 3.5
    # a budget of 2: the target's 24 calls need 12 waves, more than the chain
    assert overlapped_ideal(rows, {"tgt": 2, "sim": 4, "judge": 4}, 0.5) == 6.0


def test_table_ratios():
    slow = Measurement(0.5, 10.0, {stage: StageFigures(calls=4, wall_s=3.0, ideal_s=1.0) for stage in EYT_STAGES})
    fast = Measurement(0.0, 4.0, {stage: StageFigures(calls=4, wall_s=1.0, ideal_s=0.0) for stage in EYT_STAGES})
    lines = table(slow, fast).splitlines()
    # latency part 3 - 1 = 2 s over an ideal of 1 s; wall 3 s over the larger bound, max(1, 1) = 1 s
    assert lines[2].split() == ["chat_seeds", "4", "3.00s", "1.00s", "2.00s", "1.00s", "2.00x", "3.00x"]
    # the whole: 16 calls, part 10 - 4 = 6 s, ideal 4 x 1 s; bound max(4, 4) = 4 s
    assert lines[-1].split()[-7:] == ["16", "10.00s", "4.00s", "6.00s", "4.00s", "1.50x", "2.50x"]
    assert len(lines) == 2 + len(EYT_STAGES) + 1  # no SpeechEQ row when SpeechEQ was not run


def test_the_latency_part_is_never_below_zero():
    assert latency_part(3.0, 1.0) == (2.0, False)
    assert latency_part(1.0, 1.0) == (0.0, False)
    # the run without latency took longer (a loaded machine): not a time the latency saved
    assert latency_part(40.86, 41.27) == (0.0, True)
    slow = Measurement(0.2, 40.86, {stage: StageFigures(calls=4, wall_s=1.0, ideal_s=0.4) for stage in EYT_STAGES})
    fast = Measurement(0.0, 41.27, {stage: StageFigures(calls=4, wall_s=1.1, ideal_s=0.0) for stage in EYT_STAGES})
    text = table(slow, fast)
    lines = text.splitlines()
    # every stage: 1.0 - 1.1 s below zero -> 0.00 s, marked, and so its ratio; wall/bound as before, 1.0 / 1.1
    assert lines[2].split() == ["chat_seeds", "4", "1.00s", "1.10s", "0.00s*", "0.40s", "0.00x*", "0.91x"]
    assert lines[-1] == CLAMPED_NOTE
    parts = [line[41:52] for line in lines[2:-1]]  # the latency part column
    assert all("-" not in part for part in parts), parts
    # nothing below zero: no mark, no note
    assert CLAMPED_NOTE not in table(fast, slow) and "*" not in table(fast, slow)


def test_the_default_pools_are_the_two_the_help_names(capsys):
    assert BenchSettings().pools == PAPER_POOLS and len(PAPER_POOLS) == 2
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "default both of the papers': nemotron_usa, personamem_v2" in help_text, help_text


def test_eyt_runs_lines_are_reported_as_they_come_not_at_the_end():
    code = (
        "import sys, time\n"
        "print('  ok     eyt_pools [nemotron_usa]', flush=True)\n"
        "time.sleep(1.5)\n"
        "print('done in 1.5 s', flush=True)\n"
        "print('a warning', file=sys.stderr)\n"
    )
    seen = []
    started = time.monotonic()
    status, tail, err = run_reporting(
        [sys.executable, "-c", code], {}, lambda line: seen.append((time.monotonic(), line))
    )
    ended = time.monotonic()
    assert status == 0 and [line for _, line in seen] == ["  ok     eyt_pools [nemotron_usa]", "done in 1.5 s"]
    assert seen[0][0] - started < ended - seen[0][0]  # the first line came long before the command ended
    assert ended - seen[0][0] >= 1.0
    assert tail.endswith("done in 1.5 s\n") and err == "a warning\n"


def test_speech_ideal_is_two_rounds_or_the_waves():
    # 3 trajectories: 3 round-1 and 6 round-2 calls (sequential and direct inference) on a budget of 2:
    # ceil(9 / 2) = 5 waves beat the chain of 2 (round 1, then round 2)
    rows = [{"run_id": "s", "model_id": "slm", "purpose": "speech_eq_round1"}] * 3 + [
        {"run_id": "s", "model_id": "slm", "purpose": "speech_eq_round2"}
    ] * 6
    assert stage_ideals(rows, {"slm": 2}, 0.5)[("s", "slm_choices")] == (9, 2.5)
    # on a budget of 16 one wave would do, but round 2 must wait for round 1
    assert stage_ideals(rows, {"slm": 16}, 0.5)[("s", "slm_choices")] == (9, 1.0)


def test_server_answers_json_requests_with_a_valid_instance_after_the_latency():
    schema = SimulatorTurn.model_json_schema()
    with LatencyServer(0.1) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        messages = [{"role": "user", "content": "hi"}]
        fmt = {"type": "json_schema", "json_schema": {"name": "SimulatorTurn", "schema": schema}}
        first = client.chat.completions.create(model="m", messages=messages, response_format=fmt)
        again = client.chat.completions.create(model="m", messages=messages, response_format=fmt)
        plain = client.chat.completions.create(model="m", messages=messages)
        assert server.requests == 3
    value = json.loads(first.choices[0].message.content)
    assert is_valid(schema, value) and SimulatorTurn.model_validate(value)
    assert again.choices[0].message.content == first.choices[0].message.content
    assert plain.choices[0].message.content in PLAIN_REPLIES
    # its strings are words, as a model's are (the encoders downstream get realistic work)
    assert set(value["user_text"].split()) <= set(WORDS) | {w + "s" for w in WORDS} | {
        w[:k] for w in WORDS for k in range(1, len(w))
    }


def test_prose_keeps_to_the_length_bounds_and_is_made_of_words():
    import random

    rng = random.Random(7)
    for low, high in [(0, 0), (1, 1), (1, 3), (5, 7), (1, 400), (300, 400)]:
        texts = [prose(rng, low, high) for _ in range(300)]
        assert all(low <= len(t) <= high for t in texts), (low, high)
        assert all(not t.startswith(" ") and not t.endswith(" ") for t in texts)
    long = prose(rng, 390, 400)
    assert 55 <= len(long.split()) <= 110  # about four characters and a space per word


def test_the_server_counts_requests_in_flight_per_model():
    from concurrent.futures import ThreadPoolExecutor

    with LatencyServer(0.3) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        models = ["a", "a", "a", "b"]
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda m: client.chat.completions.create(model=m, messages=[{"role": "user", "content": "hi"}]),
                    models,
                )
            )
    assert server.max_in_flight_by_model == {"a": 3, "b": 1} and server.max_in_flight == 4


def test_most_runs_at_once_counts_overlapping_spans():
    # [0,10] and [5,12] overlap; [12,20] starts as [5,12] ends (not at once); [13,14] inside [12,20]
    assert most_at_once([(0, 10), (5, 12), (12, 20), (13, 14)]) == 2
    assert most_at_once([(0, 10), (1, 9), (2, 8)]) == 3
    assert most_at_once([]) == 0


@pytest.mark.slow
def test_bench_runs_and_prints_every_stage(tmp_path):
    settings = BenchSettings(
        latency_s=0.05,
        pools=("nemotron_usa", "personamem_v2"),
        dialogues_per_pool=2,
        t_max=2,
        max_concurrency=4,
        speech_subscales=("interpersonal_empathy",),
        parallel=2,
    )
    reported = []
    text = run_bench(
        settings,
        zero=False,
        json_out=tmp_path / "bench.json",
        progress=lambda line: reported.append((time.monotonic(), line)),
    )
    # it said what it started, then relayed eyt run's lines while eyt run ran: the first run's end well before the
    # last one's, and before the bench's own line after eyt run ended
    lines = [line for _, line in reported]
    assert lines[0].startswith("eyt bench: run 1 of 1: eyt run against the bench server at latency 0.05 s (2 pool(s)")
    ends = [t for t, line in reported if line.startswith("  [0.05 s]   ok     ")]
    [(took, _)] = [(t, line) for t, line in reported if line.startswith("eyt bench: eyt run at latency 0.05 s took ")]
    assert len(ends) >= 4 and ends[0] < ends[-1] < took
    assert text.startswith("eyt bench: 2 pool(s) x 2 dialogues")
    for stage in (
        "chat_seeds",
        "dialogue_turns",
        "judge_verdicts",
        "final_intent_verdicts",
        "slm_choices",
        "whole (eyt run)",
    ):
        assert stage in text
    figures = json.loads((tmp_path / "bench.json").read_text())["runs"][0]["stages"]
    slow, fast = from_json(tmp_path / "bench.json")
    assert fast is None and slow.total_calls == sum(f["calls"] for f in figures.values())
    assert figures["chat_seeds"]["calls"] == 4 and figures["final_intent_verdicts"]["calls"] == 4
    # 2 pools x 2 dialogues of at most 2 turns: 3 calls per turn
    assert 12 <= figures["dialogue_turns"]["calls"] <= 24 and figures["dialogue_turns"]["calls"] % 3 == 0
    # the target's two cells ran at once, and its endpoint still never held more than its budget
    run = json.loads((tmp_path / "bench.json").read_text())["runs"][0]
    assert run["most_runs_at_once"] == 2
    assert max(run["max_in_flight_by_model"].values()) <= 4
    assert all(f["wall_s"] > 0 for f in figures.values())
    # SpeechEQ: every trajectory (item x 9 conditions x 2 orders) asks round 1 and two rounds 2, less the
    # requests identical to one asked before (served from the cache)
    speech = figures["slm_choices"]
    assert speech["calls"] > 0 and speech["ideal_s"] >= 2 * 0.05


def test_the_same_request_gets_one_answer_per_model_and_models_differ() -> None:
    """Two targets asked the same thing answer differently (each then plays its own dialogues, as real models do);
    one model asked again answers the same, whatever else it was asked in between."""
    from eyt_dagster.ops.bench_server import answer

    schema = {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    messages = [{"role": "user", "content": "I lost my job."}]
    first = answer({"model": "target-1", "messages": messages, "response_format": fmt})
    other = answer({"model": "target-2", "messages": messages, "response_format": fmt})
    assert first != other
    assert answer({"model": "target-1", "messages": messages, "response_format": fmt}) == first
    assert json.loads(first)["reply"] and json.loads(other)["reply"]
    # plain replies too: over a few models the same question gets more than one of the fixed sentences
    plain = {answer({"model": f"target-{i}", "messages": messages}) for i in range(8)}
    assert len(plain) > 1 and plain <= set(PLAIN_REPLIES)
