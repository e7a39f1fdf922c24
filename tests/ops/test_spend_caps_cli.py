"""`eyt run --max-cost` end to end: worker processes (another process than the command's) read the command's limit
from their runs' tags and stop calling once the slate's models reach it; a second command with more to spend
finishes the cells from the cache. On the localhost server, with priced remote models."""

import json

import duckdb
import pytest

from eyt_dagster.ops import cli
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache
from resources.models.spend_guard import SPEND_LIMIT_TAG

from support.localhost_server import serve
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate

pytestmark = pytest.mark.cli

POOL = "nemotron_usa"
PRICED = {**STUB_ENDPOINT, "price_in_per_mtok": 20.0, "price_out_per_mtok": 80.0}


def _paid(data):
    with CallCache(data / CALL_CACHE_FILE) as cache:
        rows = [row for row in cache.ledger() if not row["cached"]]
    return sum(row["cost_usd"] for row in rows), rows


def test_max_cost_holds_in_the_worker_processes_and_a_second_command_finishes_from_the_cache(
    tmp_path, monkeypatch, capsys
):
    from dagster import DagsterInstance, RunsFilter

    with serve(RolePlay()) as server:
        monkeypatch.setenv("EYT_TEST_KEY", KEY)
        data = tmp_path / "data"
        monkeypatch.setenv("EYT_DATA_DIR", str(data))
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
        models = dict(
            pools={POOL: {"source": "fixture"}},
            dialogues_per_pool=4,
            t_max=4,
            simulator=remote("sim-model", server.base_url, family="fam-sim", **PRICED),
            targets=[remote("model-a", server.base_url, family="fam-target", **PRICED)],
            judges=[remote("judge-model", server.base_url, family="fam-judge", **PRICED)],
        )
        monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, **models)))
        args = ["run", "--no-speech", "--no-reports", "--parallel", "2"]
        assert cli.main([*args, "--max-cost", "0.01"]) == 0
        out = capsys.readouterr().out
        spent, rows = _paid(data)
        per_call = max(row["cost_usd"] for row in rows)
        in_flight = 3 * STUB_ENDPOINT["max_concurrency"]
        with capsys.disabled():
            print(f"spent {spent:.5f} in {len(rows)} calls, at most {per_call:.5f} a call")
        assert 0.01 <= spent <= 0.01 + in_flight * per_call  # passed by at most the calls in flight
        assert "--max-cost: the slate's models stop at $0.0100 in the ledger (now $0.0000)" in out
        assert "stopped by budget" in out and "spent while this command ran: $0.01" in out
        with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
            kinds = con.execute(
                "SELECT DISTINCT error_kind FROM dialogue.dialogue_turns WHERE error IS NOT NULL"
            ).fetchall()
        assert kinds == [("budget",)]
        with DagsterInstance.get() as instance:
            cells = instance.get_runs(RunsFilter(job_name="eyt_dialogues"))
            assert cells and all(r.tags[SPEND_LIMIT_TAG] == "0.01" for r in cells)
            assert all(r.tags["eyt/pid"] != str(__import__("os").getpid()) for r in cells)  # worker processes

        # the command kept what `eyt plan` said of it, with the ledger id its calls come after (reports/run_costs)
        estimate = json.loads((data / "cost" / "estimate.json").read_text())
        assert estimate["ledger_last_id"] == 0 and not estimate["sequential"]
        assert {(line["model"], line["role"]) for line in estimate["lines"]} >= {("model-a", "target")}

        # a slate cap already spent: said at once, and no call is made
        answered = len(server.chat_requests)
        monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, budget={"max_cost_usd": 0.005}, **models)))
        assert cli.main(args) == 0
        out = capsys.readouterr().out
        assert "spend cap: the slate's budget: $0.0050" in out
        assert "budget spent, so no call of these models will be made" in out.split("eyt_pools")[0]  # before any run
        assert len(server.chat_requests) == answered and "left undone: " in out

        monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, **models)))
        assert cli.main([*args, "--max-cost", "5"]) == 0
        capsys.readouterr()
        with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
            left = con.execute("SELECT count(*) FROM dialogue.dialogue_turns WHERE error IS NOT NULL").fetchone()[0]
            played = con.execute("SELECT count(DISTINCT seed_id) FROM dialogue.dialogue_turns").fetchone()[0]
        assert left == 0 and played == 4
        _, after = _paid(data)
        assert len(after) - len(rows) == len(server.chat_requests) - answered  # nothing asked twice
