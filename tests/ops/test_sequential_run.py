"""`eyt run` under the slate's sequential design, end to end on the embedded baselines: the cells play a prefix of
the pool's seeded order in rounds, targets stop once their comparisons are decided, the decisions and savings land
in the warehouse, a second run plays nothing new, and turning the design off extends the same cells to the full N."""

import duckdb
import pytest

from eyt_dagster.eyt_bench.sequential_plan import playing_order
from eyt_dagster.ops import cli

from support.slates import write_slate

pytestmark = [pytest.mark.cli, pytest.mark.slow]

POOL = "nemotron_usa"
N = 40
DESIGN = {"enabled": True, "min_dialogues": 10, "batch": 10, "margin": {"explicit_acc": 0.05, "satisfaction": 0.1}}


def _tables(data):
    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        played = dict(
            con.execute("SELECT target, list(DISTINCT seed_id) FROM dialogue.dialogue_turns GROUP BY 1").fetchall()
        )
        seeds = con.execute("SELECT * FROM dialogue.chat_seeds").df()
        decisions = con.execute("SELECT * FROM dialogue.sequential_decisions").df()
        savings = con.execute("SELECT * FROM dialogue.sequential_savings").df()
    return {t: set(s) for t, s in played.items()}, seeds, decisions, savings


def test_the_sequential_design_plays_prefixes_stops_settled_targets_and_extends_to_the_full_design(
    tmp_path, monkeypatch, capsys
):
    data = tmp_path / "data"
    monkeypatch.setenv("EYT_DATA_DIR", str(data))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    slate = dict(pools={POOL: {"source": "fixture"}}, pool_size=N, dialogues_per_pool=N)
    monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, sequential=DESIGN, **slate)))
    assert cli.main(["run", "--no-speech", "--parallel", "2"]) == 0
    out = capsys.readouterr().out
    assert f"sequential design: {POOL}, look at 10 of {N} ChatSEEDs" in out

    played, seeds, decisions, savings = _tables(data)
    order = playing_order(seeds, 20260521)
    assert len(order) == N
    for target, ids in played.items():
        assert ids == set(order[: len(ids)]), target  # a prefix of the one order
        assert len(ids) in (10, 20, 30, 40)
    assert min(len(ids) for ids in played.values()) < N  # some target stopped early
    # 3 targets: 3 pairs x 2 metrics with a margin
    assert len(decisions) == 6 and set(decisions["metric"]) == {"explicit_acc", "satisfaction"}
    assert set(decisions["verdict"]) <= {"a_ahead", "b_ahead", "within_margin", "undecided"}
    early = decisions[decisions["decided_early"]]
    assert len(early) and (early["decided_items"] < N).all() and (early["verdict"] != "undecided").all()
    for row in decisions.itertuples():
        assert (row.played_a, row.played_b) == (len(played[row.target_a]), len(played[row.target_b]))
    assert dict(zip(savings["target"], savings["not_played"])) == {t: N - len(ids) for t, ids in played.items()}

    # again: the design looks at what is played and finds nothing open, so no cell runs
    assert cli.main(["run", "--no-speech", "--no-reports", "--parallel", "2"]) == 0
    out = capsys.readouterr().out
    assert "eyt_dialogues [" not in out and "next: none, every target stops" in out
    again, *_ = _tables(data)
    assert again == played

    # a target added to the slate catches up: it plays at least the first look, against what the others played
    import yaml

    sequential_slate = yaml.safe_load((tmp_path / "slate.yaml").read_text())
    terse = next(t for t in sequential_slate["targets"] if t["id"] == "terse-baseline")
    sequential_slate["targets"].append({**terse, "id": "terse-twin"})
    (tmp_path / "slate.yaml").write_text(yaml.safe_dump(sequential_slate))
    assert cli.main(["run", "--no-speech", "--no-reports", "--parallel", "2"]) == 0
    out = capsys.readouterr().out
    # it catches up with the most its partners played (20) in one go; the family is larger now (alpha over 6 pairs,
    # not 3), so a comparison settled before may be open again and its targets play on
    first_round = out.split("sequential design:")[1]
    assert "terse-twin to 20" in first_round and "eyt_dialogues [nemotron_usa|terse-twin] to 20" in out
    grown, *_ = _tables(data)
    assert grown["terse-twin"] == set(order[: len(grown["terse-twin"])]) and len(grown["terse-twin"]) >= 10
    assert all(grown[t] >= played[t] for t in played)

    # the design off: the same cells extended to every ChatSEED, the earlier dialogues among them
    monkeypatch.setenv("EYT_SLATE", str(write_slate(tmp_path, **slate)))
    assert cli.main(["run", "--no-speech", "--no-reports", "--parallel", "2"]) == 0
    full, *_ = _tables(data)
    assert all(full[t] == set(order) and played[t] <= full[t] for t in played)
    assert full["terse-twin"] == grown["terse-twin"]  # not in this slate: left as it was (eyt remove-target deletes)
