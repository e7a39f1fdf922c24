"""`eyt plan`'s glue (eyt_dagster/ops/plan.py) without a server: the default slate, a remote slate with no
history (rendered prompts), dialogues already played, the CLI's selection and --json, the SpeechEQ item build per
scenario, the spoken EYT-Bench's cells as text dialogues, and `--refresh`'s findings turned into work
(eyt_dagster/ops/plan_refresh.py), each on hand-computed figures."""

import dataclasses
import json

import pytest

from assets.eyt_bench.partitions import target_pool_key
from eyt_dagster.core.cost_estimate import RENDERED_COMPLETION_TOKENS, approx_tokens
from eyt_dagster.ops import cli
from eyt_dagster.ops.plan import Selection, estimate, other_targets, report, speech_prompt
from eyt_dagster.ops.plan_done import SPEECH_BUILD_KINDS, Done
from eyt_dagster.ops.plan_refresh import RefreshFindings, after_refresh, cell_key
from eyt_dagster.ops.refresh_plan import FAILED, MISSING, STALE, Finding
from eyt_dagster.slate import default_slate_path, load_slate

from support.slates import remote, write_slate

pytestmark = pytest.mark.unit

URL = "http://127.0.0.1:9/v1"  # never called


def _remote_slate(tmp_path):
    return load_slate(
        write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=10,
            t_max=4,
            simulator=remote("sim", URL, max_concurrency=2),
            targets=[remote("tgt", URL, max_concurrency=4, price_in_per_mtok=1.0, price_out_per_mtok=4.0)],
            judges=[remote("jdg", URL, family="fam-j")],
        )
    )


def test_the_default_slate_pays_nothing():
    slate = load_slate(default_slate_path())
    selection = Selection([t.id for t in slate.eyt_targets], list(slate.pools), [], [])
    lines = estimate(slate, selection, [], {})
    assert lines and all(line.embedded and line.calls.high == 0 for line in lines)
    text, data = report(lines, [])
    assert "paid calls: none" in text and data["total"]["calls"]["mid"] == 0


def test_no_history_renders_the_prompts(tmp_path):
    slate = _remote_slate(tmp_path)
    lines = {line.model: line for line in estimate(slate, Selection(["tgt"], ["nemotron_usa"], [], []), [], {})}
    target = lines["tgt"]
    assert target.sources == {"rendered"} and target.dialogues == 10
    # perception and reply, each once a turn for t_max turns, in 10 dialogues; +-50%
    assert (target.calls.mid, target.calls.low, target.calls.high) == (80, 40, 120)
    assert target.tokens_out.mid == 80 * RENDERED_COMPLETION_TOKENS
    assert target.usd is not None and target.usd.mid == pytest.approx(
        (target.tokens_in.mid * 1.0 + target.tokens_out.mid * 4.0) / 1e6
    )
    assert lines["jdg"].calls.mid == 10 * (4 + 1)  # a verdict a turn and a final one
    assert lines["sim"].calls.mid == 10 + 10 * 4  # the pool's 10 ChatSEEDs, then a user turn a turn
    assert lines["sim"].usd is None and lines["jdg"].usd is None  # no prices: unpriced, never invented
    text, data = report(list(lines.values()), [])
    assert "unpriced" in text and data["total"]["unpriced_models"] == ["jdg", "sim"]


def test_played_dialogues_cost_nothing(tmp_path):
    slate = _remote_slate(tmp_path)
    done = {("tgt", "nemotron_usa"): 10}
    lines = estimate(slate, Selection(["tgt"], ["nemotron_usa"], [], []), [], done, {"nemotron_usa": 10})
    assert all(line.calls.high == 0 for line in lines)
    # the pool's ChatSEEDs not built yet: the simulator writes them, one call each
    seeds_only = estimate(slate, Selection(["tgt"], ["nemotron_usa"], [], []), [], done, {"nemotron_usa": 7})
    assert {line.model: line.calls.mid for line in seeds_only} == {
        "sim": 3,
        "tgt": 0,
        "jdg": 0,
        "rubric-judge-lenient": 0,
    }
    partly = estimate(slate, Selection(["tgt"], ["nemotron_usa"], [], []), [], {("tgt", "nemotron_usa"): 6})
    assert next(line for line in partly if line.model == "tgt").dialogues == 4
    slate.repeats = 3  # each ChatSEED played three times: the 4 left, thrice
    repeated = estimate(slate, Selection(["tgt"], ["nemotron_usa"], [], []), [], {("tgt", "nemotron_usa"): 6})
    assert next(line for line in repeated if line.model == "tgt").dialogues == 12


def test_eyt_plan_writes_only_its_json(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    monkeypatch.setenv("EYT_SLATE", str(default_slate_path()))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    out = tmp_path / "plan.json"
    assert cli.main(["plan", "--target", "terse-baseline", "--no-speech", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "terse-baseline" in printed and "reflective-baseline " not in printed
    assert "paid calls: none" in printed and "SpeechEQ" not in printed  # --no-speech: no SpeechEQ work at all
    assert not data.exists()  # nothing written but the JSON file
    figures = json.loads(out.read_text())
    assert {line["model"] for line in figures["lines"] if line["role"] == "target"} == {"terse-baseline"}
    assert cli.main(["plan", "--target", "gpt-9"]) == 2


def test_a_remote_speech_target_with_history(tmp_path):
    slate = load_slate(
        write_slate(
            tmp_path,
            targets=[remote("audio", URL, benchmarks=["speech_eq"], price_in_per_mtok=1.0, price_out_per_mtok=1.0)],
        )
    )
    rows = [
        {
            "role": "speech_target",
            "model_id": "old",
            "purpose": "speech_eq_round1",
            "run_id": "r",
            "tokens_in": 500,
            "tokens_out": 500,
            "reasoning_tokens": 0,
            "latency_s": 1.0,
            "cached": False,
        }
    ] * 8
    selection = Selection([], list(slate.pools), ["audio"], [])
    line = next(line for line in estimate(slate, selection, rows, {}, {}, {"audio": 0.5}) if line.model == "audio")
    assert line.calls.mid == 4 and line.dialogues == 0.5 and line.usd is not None  # half of 8 calls left
    assert line.usd.mid == pytest.approx(4 * 1000 / 1e6)
    assert estimate(slate, selection, [], {}, {}, {"audio": 1.0}) == []  # no history: a note, no line


def test_a_pool_smaller_than_the_design_plays_only_its_chatseeds(tmp_path):
    """A pool with fewer personas than dialogues_per_pool builds fewer ChatSEEDs: the plan counts those, so a cell
    that played them all costs nothing, and one that played some owes the rest."""
    slate = _remote_slate(tmp_path)  # dialogues_per_pool 10
    selection = Selection(["tgt"], ["nemotron_usa"], [], [])
    done = {
        line.model: line
        for line in estimate(
            slate, selection, [], {("tgt", "nemotron_usa"): 6}, {"nemotron_usa": 6}, design={"nemotron_usa": 6}
        )
    }
    assert done["tgt"].dialogues == 0 and done["tgt"].calls.high == 0 and done["sim"].calls.high == 0
    half = {
        line.model: line
        for line in estimate(
            slate, selection, [], {("tgt", "nemotron_usa"): 2}, {"nemotron_usa": 6}, design={"nemotron_usa": 6}
        )
    }
    assert half["tgt"].dialogues == 4 and half["tgt"].calls.mid == 4 * 2 * 4  # perception and reply, t_max 4


def test_a_remote_speech_build_without_history_renders_its_prompts_per_scenario(tmp_path):
    """A remote generator that also judges tones, the dialogue check left to the template: per scenario one
    scenario, one dialogue and ten tone calls (4 context turns, 3 slots on each of 2 test turns) and two tone
    selections, less what the warehouse holds built per call kind."""
    gen = remote("gen", URL, price_in_per_mtok=1.0, price_out_per_mtok=2.0)
    slate = load_slate(
        write_slate(
            tmp_path,
            speech={"generator": "gen", "validator": "template-baseline", "items_per_valence": 2, "models": [gen]},
        )
    )
    selection = Selection([], [], [], [], subscales=["s1", "s2"])
    every = dict.fromkeys(("speech_scenario", "speech_dialogue", "speech_dialogue_check"), 6)
    built = {
        "s1": {**every, "speech_tone": 6, "speech_tone_selection": 6},
        "s2": {**every, "speech_tone": 4, "speech_tone_selection": 4},
    }
    lines = {line.role: line for line in estimate(slate, selection, [], {}, built=built)}
    assert set(lines) == {"speech_generator", "speech_tone_judge"}  # the template validator makes no call
    generator, judge = lines["speech_generator"], lines["speech_tone_judge"]
    assert generator.dialogues == 2 and (generator.calls.mid, generator.calls.low, generator.calls.high) == (20, 10, 30)
    assert generator.tokens_in.mid == 20 * approx_tokens(speech_prompt("speech_tone", "en"))
    assert generator.tokens_out.mid == 20 * RENDERED_COMPLETION_TOKENS and generator.sources == {"rendered"}
    assert judge.calls.mid == 2 * 2 and judge.usd is not None  # two test turns each of the two scenarios left
    # nothing built: each of the 2 x 3 valences x 2 scenarios makes 12 generator calls and 2 selections
    fresh = {line.role: line for line in estimate(slate, selection, [], {})}
    assert fresh["speech_generator"].calls.mid == 12 * 12 and fresh["speech_tone_judge"].calls.mid == 12 * 2
    assert fresh["speech_generator"].dialogues == 12
    assert estimate(slate, dataclasses.replace(selection, speech=False), [], {}) == []  # --no-speech: no build
    notes = other_targets(slate, selection)
    assert "SpeechEQ item validator: embedded template, no calls" in notes
    assert not any("generator" in note for note in notes)


def _call(role, purpose, tokens_in, *, seed_run="r"):
    return {
        "role": role,
        "model_id": "old",
        "purpose": purpose,
        "run_id": seed_run,
        "tokens_in": tokens_in,
        "tokens_out": 10,
        "reasoning_tokens": 0,
        "latency_s": 1.0,
        "cached": False,
    }


def test_voice_cells_are_counted_as_text_dialogues_heard_and_read(tmp_path):
    """A spoken EYT-Bench cell plays its ChatSEEDs twice, heard and read, each with a text dialogue's calls (the
    history of one 4-turn dialogue here), and perceives the voiced turns that are not neutral again. A target that
    also plays EYT-Bench reads the text control from the call cache."""
    slate = load_slate(
        write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=10,
            t_max=4,
            voice={"dialogues_per_pool": 2},
            simulator=remote("sim", URL),
            targets=[
                remote("tgt", URL, benchmarks=["eyt_bench", "eyt_voice"], speech_input="cascaded"),
                remote("ear", URL, benchmarks=["eyt_voice"], speech_input="audio"),
            ],
            judges=[remote("jdg", URL, family="fam-j")],
        )
    )
    history = [_call("simulator", f"simulate:s:{t}", 100) for t in range(1, 5)]
    history += [_call("target", f"{kind}:{t}", 50) for kind in ("perceive", "respond") for t in range(1, 5)]
    history += [_call("judge", f"judge_turn:s:{t}", 200) for t in range(1, 5)] + [_call("judge", "judge_final:s", 300)]
    selection = Selection(["tgt"], ["nemotron_usa"], [], ["tgt", "ear"], speech=False)
    lines = {
        line.model: line
        for line in estimate(
            slate,
            selection,
            history,
            {("tgt", "nemotron_usa"): 10},  # the EYT-Bench cell is played
            {"nemotron_usa": 10},
            design={"nemotron_usa": 10},
            voiced={("ear", "nemotron_usa"): (1, 0)},  # one ChatSEED of ear's heard already
            probe_share=0.5,
        )
    }
    # tgt: 2 heard (its text control is its EYT-Bench cell's, cached); ear: 1 heard and 2 read
    assert lines["tgt"].dialogues == 2 and lines["ear"].dialogues == 3
    assert lines["tgt"].calls.mid == 2 * 8 + 2 * 0.5 * 4  # perception and reply a turn; the probe's perceptions
    assert lines["ear"].calls.mid == 3 * 8 + 1 * 0.5 * 4
    assert lines["ear"].tokens_in.mid == 3 * 8 * 50 + 2 * 50
    assert lines["sim"].dialogues == 5 and lines["sim"].calls.mid == 5 * 4
    assert lines["jdg"].dialogues == 5 and lines["jdg"].calls.mid == 5 * 5 and lines["jdg"].tokens_in.mid == 5 * 1100
    notes = other_targets(slate, selection)
    assert any(note.startswith("spoken EYT-Bench target ear hears audio") and "lower bound" in note for note in notes)
    assert any("tgt: its text control repeats its EYT-Bench cells' requests" in note for note in notes)


def test_refresh_findings_decide_what_counts_as_done(tmp_path):
    """`eyt plan --refresh`: a stale cell plays everything again, a missing or failed one what the warehouse lacks, a
    cell with no finding nothing; a cell whose verdicts alone are stale is judged again; an unregistered target is
    missing."""
    slate = load_slate(write_slate(tmp_path))  # 3 scenarios a subscale, 2 voiced ChatSEEDs a cell
    p = "nemotron_usa"
    done = Done(
        played={("a", p): 2, ("b", p): 3, ("c", p): 1},
        seeds={p: 3},
        design={p: 4},
        speech_left={"x": 0.5, "y": 0.25, "z": 0.5},
        built={"s": dict.fromkeys(SPEECH_BUILD_KINDS, 1)},
        voiced={("v", p): (1, 1)},
    )

    def finding(asset, partition, status):
        return {(asset, partition): Finding(asset, partition, status)}

    findings = {
        **finding("dialogue/dialogue_turns", cell_key("a", p), STALE),
        **finding("dialogue/judge_verdicts", cell_key("a", p), STALE),  # below a's replayed turns: no judging again
        **finding("dialogue/judge_verdicts", cell_key("b", p), STALE),  # a judge's prompt changed
        **finding("dialogue/chat_seeds", p, MISSING),
        **finding("speech/tone_selection", "s", STALE),
        **finding("speech/slm_choices", "x", FAILED),
        **finding("speech/slm_choices", "y", STALE),
        **finding("voice/voiced_turns", cell_key("v", p), STALE),
    }
    registered = {"targets": {"a", "b"}, "speech_targets": {"x", "y", "z"}, "voice_targets": {"v"}}
    after = after_refresh(done, RefreshFindings(findings, registered), slate)
    assert after.played == {("a", p): 0, ("b", p): 4, ("c", p): 1}
    assert after.rejudge == {("b", p): {"judge_turn": 3}}
    assert after.seeds == {p: 3}
    assert after.built == {"s": {**dict.fromkeys(SPEECH_BUILD_KINDS, 3), "speech_tone_selection": 0}}
    assert after.speech_left == {"x": 0.5, "y": 1.0, "z": 0.0}
    assert after.voiced == {("v", p): (0, 2)}
    assert cell_key("a", p) == str(target_pool_key("a", p))
