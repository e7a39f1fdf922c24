"""`eyt run` under the slate's sequential design (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled): the pools
are built; then, round by round, the design looks at every pool (the warehouse's dialogue_scores, in the pool's
seeded order: what this or an earlier command played) and only the targets with a comparison still open play the
next batch, and a target not yet at the first look (new in the slate) plays up to it. The rounds are ordinary partition runs of `eyt_dialogues`, tagged with how many ChatSEEDs to play, so
each round replays what was played before from the call cache and plays only the new batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from assets.eyt_bench.dialogue_turns import SEQUENTIAL_TAG
from assets.eyt_bench.partitions import partition_tags
from eyt_dagster.eyt_bench.sequential_plan import Look, next_round
from eyt_dagster.ops.launch import execute_runs
from eyt_dagster.ops.run_plan import Run
from resources.storage.warehouse import warehouse_path

if TYPE_CHECKING:
    import pandas as pd
    from dagster import DagsterInstance

    from eyt_dagster.slate import Slate


def play_sequentially(
    instance: DagsterInstance,
    slate: Slate,
    pools: Sequence[str],
    targets: Sequence[str],
    parallel: int,
    tags: Mapping[str, str],
) -> tuple[bool, list[Look]]:
    """Build the pools and play the cells round by round until every pool's design is finished (or a run fails);
    True when every run succeeded, with each pool's last look."""
    settings = slate.sequential
    assert settings is not None
    runs = [Run("eyt_pools", {"dagster/partition": pool, **tags}, f"eyt_pools [{pool}]") for pool in pools]
    if not execute_runs(instance, runs, parallel):
        return False, []
    last: dict[str, Look] = {}
    asked: set[tuple[str, str, int]] = set()  # a cell is asked for a prefix once per command (its failed or
    while True:  # unusable dialogues stay short of it: a rerun of the command retries them, not a loop here)
        to_play: dict[str, dict[str, int]] = {}
        for pool in pools:  # look at what is played (also what an earlier command played), then play what is open
            chat_seeds, scores = _tables(pool, targets)
            last[pool], to_play[pool] = next_round(pool, chat_seeds, scores, targets, settings, slate.seed)
            if last[pool].n:
                going = ", ".join(f"{t} to {n}" for t, n in sorted(to_play[pool].items())) or "none, every target stops"
                print(f"sequential design: {last[pool].headline()}; next: {going}", flush=True)
        runs = [
            Run(
                "eyt_dialogues",
                {**partition_tags(target, pool), **tags, SEQUENTIAL_TAG: str(n)},
                f"eyt_dialogues [{pool}|{target}] to {n}",
            )
            for pool, cells in to_play.items()
            for target, n in sorted(cells.items())
            if (pool, target, n) not in asked
        ]
        asked |= {(pool, target, n) for pool, cells in to_play.items() for target, n in cells.items()}
        if not runs:
            return True, list(last.values())
        if not execute_runs(instance, runs, parallel):
            print("sequential design: a run failed; fix it and run again (what was played comes from the cache)")
            return False, list(last.values())


def _tables(pool: str, targets: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pool's chat_seeds and the targets' dialogue_scores rows, read from the warehouse."""
    import duckdb
    import pandas as pd

    with duckdb.connect(str(warehouse_path()), read_only=True) as con:
        seeds = con.execute("SELECT * FROM dialogue.chat_seeds WHERE pool = ?", [pool]).df()
        try:
            scores = con.execute(
                "SELECT * FROM dialogue.dialogue_scores WHERE pool = ? AND list_contains(?, target)",
                [pool, list(targets)],
            ).df()
        except duckdb.CatalogException:  # no cell has been scored yet
            scores = pd.DataFrame(columns=["target", "pool", "seed_id"])
    return seeds, scores
