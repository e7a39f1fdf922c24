"""`eyt run` under the slate's sequential design (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled): the pools
are built, then every cell plays the first look's ChatSEEDs; after each round the design looks at every pool (the
warehouse's dialogue_scores, in the pool's seeded order) and only the targets with a comparison still open play the
next batch. The rounds are ordinary partition runs of `eyt_dialogues`, tagged with how many ChatSEEDs to play, so
each round replays what was played before from the call cache and plays only the new batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from assets.eyt_bench.dialogue_turns import SEQUENTIAL_TAG
from assets.eyt_bench.partitions import partition_tags
from eyt_dagster.eyt_bench.sequential_plan import Look, look
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
    playing = {pool: (tuple(targets), settings.min_dialogues) for pool in pools}
    last: dict[str, Look] = {}
    while playing:
        runs = [
            Run(
                "eyt_dialogues",
                {**partition_tags(target, pool), **tags, SEQUENTIAL_TAG: str(n)},
                f"eyt_dialogues [{pool}|{target}] to {n}",
            )
            for pool, (active, n) in playing.items()
            for target in active
        ]
        ok = execute_runs(instance, runs, parallel)
        for pool, (_, n) in playing.items():
            chat_seeds, scores = _tables(pool, targets)
            last[pool] = look(pool, chat_seeds, scores, targets, settings, slate.seed, n)
            print(f"sequential design: {last[pool].summary()}", flush=True)
        if not ok:
            print("sequential design: a run failed; fix it and run again (what was played comes from the cache)")
            return False, list(last.values())
        playing = {pool: (state.playing_on, state.next_n) for pool, state in last.items() if state.next_n is not None}
    return True, list(last.values())


def _tables(pool: str, targets: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pool's chat_seeds and the targets' dialogue_scores rows, read from the warehouse."""
    import duckdb

    with duckdb.connect(str(warehouse_path()), read_only=True) as con:
        seeds = con.execute("SELECT * FROM dialogue.chat_seeds WHERE pool = ?", [pool]).df()
        scores = con.execute(
            "SELECT * FROM dialogue.dialogue_scores WHERE pool = ? AND list_contains(?, target)", [pool, list(targets)]
        ).df()
    return seeds, scores
