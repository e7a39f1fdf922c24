"""Asset checks: the contracts on hand-made tables (they must be able to fail), and the checks running with a
real materialisation of one target x pool partition."""

import pandas as pd
import pytest
from dagster import AssetCheckSeverity, DagsterInstance, materialize

from assets.eyt_bench.partitions import TARGETS_PARTITION, target_pool_key
from eyt_dagster.core import table_checks
from eyt_dagster.definitions import ASSETS, CHECKS
from eyt_dagster.eyt_bench import table_checks as eyt_checks
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.jobs import DIALOGUE_ASSETS, POOL_ASSETS
from eyt_dagster.speech_eq import table_checks as speech_checks

from support.pipeline import resources_for
from support.slates import write_slate


@pytest.mark.unit
def test_t_max_contract():
    turns = pd.DataFrame({"seed_id": ["a", "a", "b"], "turn": [1, 2, 7]})
    assert eyt_checks.dialogues_within_t_max(turns, 7).passed
    verdict = eyt_checks.dialogues_within_t_max(turns, 6)
    assert not verdict.passed and verdict.metadata["over_t_max"] == "b" and verdict.metadata["longest"] == 7


@pytest.mark.unit
def test_subscore_contract_ignores_error_rows_only():
    good = {c: 0.5 for c in SUBSCORE_COLUMNS}
    verdicts = pd.DataFrame([{**good, "error": None}, {**{c: None for c in SUBSCORE_COLUMNS}, "error": "HTTP 500"}])
    assert eyt_checks.subscores_in_scale(verdicts, (0.0, 0.5, 1.0)).passed
    verdicts.loc[0, "persona_memory"] = 0.7
    verdict = eyt_checks.subscores_in_scale(verdicts, (0.0, 0.5, 1.0))
    assert not verdict.passed and verdict.metadata["columns_with_bad_values"] == "persona_memory"


@pytest.mark.unit
def test_candidate_contract(tmp_path):
    paths = {name: tmp_path / f"{name}.wav" for name in ("r4", "d4", "r6", "d6")}
    for path in paths.values():
        path.write_bytes(b"RIFF")
    row = {
        "dataset_id": "x",
        "turn4_resonant_path": str(paths["r4"]),
        "turn4_dissonant_path": str(paths["d4"]),
        "turn6_resonant_path": str(paths["r6"]),
        "turn6_dissonant_path": str(paths["d6"]),
    }
    assert speech_checks.one_resonant_candidate_per_test_turn(pd.DataFrame([row])).passed
    same = {**row, "turn6_dissonant_path": row["turn6_resonant_path"]}
    assert "x turn 6" in speech_checks.one_resonant_candidate_per_test_turn(pd.DataFrame([same])).metadata["problems"]
    paths["d4"].unlink()
    assert not speech_checks.one_resonant_candidate_per_test_turn(pd.DataFrame([row])).passed


@pytest.mark.unit
def test_error_rows_are_reported():
    df = pd.DataFrame({"seed_id": ["a", "b", "c"], "error": [None, "timed out", None]})
    verdict = table_checks.no_error_rows(df, "seed_id")
    assert (
        not verdict.passed and verdict.metadata == {"error_rows": 1, "ids": "b"} and "timed out" in verdict.description
    )
    assert table_checks.no_error_rows(df.iloc[[0, 2]], "seed_id").passed


def _turns(*dialogues: tuple[str, str | None, str | None]) -> pd.DataFrame:
    """dialogue_turns rows: per (seed_id, error_role, error_kind) two answered turns, and a turn-0 error row when
    the role is set (the dialogue did not finish)."""
    rows = []
    for seed_id, role, kind in dialogues:
        rows += [{"seed_id": seed_id, "turn": t, "error": None, "error_role": None, "error_kind": None} for t in (1, 2)]
        if role is not None:
            rows.append({"seed_id": seed_id, "turn": 0, "error": "failed", "error_role": role, "error_kind": kind})
    return pd.DataFrame(rows)


@pytest.mark.unit
def test_a_cell_that_finished_too_few_dialogues_fails_naming_the_failures():
    failed = _turns(
        ("a", "simulator", "timeout"),
        ("b", "simulator", "timeout"),
        ("c", "simulator", "context_exceeded"),
        ("d", "simulator", "context_exceeded"),
    )
    verdict = eyt_checks.enough_finished_dialogues(failed, 0.1)
    assert not verdict.passed
    assert verdict.description.startswith("0 of 4 dialogues finished; at most 0 may be unfinished")
    assert "unfinished: simulator: 2 refused: context length, 2 timeouts" in verdict.description
    assert verdict.metadata["finished"] == 0 and verdict.metadata["unfinished"] == 4
    # none finished fails whatever the threshold; a threshold the cell stays within passes
    assert not eyt_checks.enough_finished_dialogues(failed, 1.0).passed
    some = _turns(*((f"s{i}", None, None) for i in range(9)), ("s9", "target", "http"))
    assert eyt_checks.enough_finished_dialogues(some, 0.1).passed
    assert not eyt_checks.enough_finished_dialogues(some, 0.0).passed
    two = _turns(*((f"s{i}", None, None) for i in range(8)), ("s8", "target", "http"), ("s9", "simulator", "timeout"))
    verdict = eyt_checks.enough_finished_dialogues(two, 0.1)
    assert not verdict.passed and "target: 1 HTTP error" in verdict.description
    empty = eyt_checks.enough_finished_dialogues(pd.DataFrame(columns=["seed_id", "turn", "error"]), 0.1)
    assert not empty.passed and "no usable ChatSEED" in empty.description


@pytest.mark.unit
def test_few_cut_replies_warns_above_one_in_twenty():
    """20 answered turns: 1 cut reply is 5% (passes), 2 are 10% (warns, naming the fix); error rows (turn 0) do not
    count as replies."""
    turns = pd.DataFrame({"turn": [*range(1, 21), 0], "target_cut_replies": [1, *[0] * 19, None]})
    one = eyt_checks.few_cut_replies(turns)
    assert one.passed and one.metadata == {"replies": 20, "cut_replies": 1, "cut_share": 0.05}
    turns.loc[1, "target_cut_replies"] = 1
    two = eyt_checks.few_cut_replies(turns)
    assert not two.passed and "2 of 20 target replies cut at max_tokens (10%" in two.description
    assert "raise max_tokens" in two.description
    assert eyt_checks.few_cut_replies(pd.DataFrame(columns=["turn", "target_cut_replies"])).passed


@pytest.mark.materialisation
def test_checks_run_with_a_partition_and_pass(tmp_path):
    slate = write_slate(
        tmp_path,
        targets=[{"id": "terse-baseline", "provider": "embedded", "model": "terse", "family": "eyt-baseline-target"}],
    )
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(TARGETS_PARTITION, ["terse-baseline"])
    resources = resources_for(slate, tmp_path)
    pools = materialize(
        [*ASSETS, *CHECKS], selection=POOL_ASSETS, partition_key="nemotron_usa", resources=resources, instance=instance
    )
    result = materialize(
        [*ASSETS, *CHECKS],
        selection=DIALOGUE_ASSETS,
        partition_key=str(target_pool_key("terse-baseline", "nemotron_usa")),
        resources=resources,
        instance=instance,
    )
    evaluations = {
        (e.asset_key.path[-1], e.check_name): e for r in (pools, result) for e in r.get_asset_check_evaluations()
    }
    assert set(evaluations) == {
        ("chat_seeds", "no_error_rows"),
        ("dialogue_turns", "no_error_rows"),
        ("dialogue_turns", "dialogues_within_t_max"),
        ("dialogue_turns", "enough_finished_dialogues"),
        ("dialogue_turns", "few_cut_replies"),
        ("judge_verdicts", "no_error_rows"),
        ("judge_verdicts", "subscores_in_scale"),
    }
    assert all(e.passed for e in evaluations.values())
    assert evaluations[("dialogue_turns", "no_error_rows")].severity == AssetCheckSeverity.WARN
    assert evaluations[("dialogue_turns", "enough_finished_dialogues")].severity == AssetCheckSeverity.ERROR
    # long steps report progress in the run log (what the UI's run view shows while they work)
    messages = [entry.user_message for entry in instance.all_logs(result.run_id)]
    assert any("dialogues done: 4 of 4 (terse-baseline on nemotron_usa)" in m for m in messages)
    # one verdict per judge x dialogue x turn: 2 judges x 4 dialogues x 6 turns (terse runs to T_max = 6)
    assert any("turn verdicts: 48 of 48 done" in m for m in messages)
