"""The dialogue_turns table of one target x pool cell (Algorithm 1): every ChatSEED that was written is played
out between the simulator and the target, one row per turn. A dialogue whose call failed keeps its answered
turns (complete = false, left out of every metric) and an error row (turn 0); a rerun finishes it, its answered
calls coming from the call cache. Pure logic: the roles are handed in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.core.provider_profiles import adaptations_warning
from eyt_dagster.core.replies import CallStats
from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult, TurnHook, run_dialogues
from eyt_dagster.eyt_bench.role_protocols import Simulator, Target
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, seed_from_row, stat_column_names, turn_rows


@dataclass(frozen=True)
class DialogueCell:
    rows: pd.DataFrame
    results: list[DialogueResult]
    target_stats: CallStats
    simulator_stats: CallStats
    warnings: list[str]  # for the run log: seeds without a dialogue, dialogues left unfinished

    @property
    def failed(self) -> list[DialogueResult]:
        """The dialogues a failed call left unfinished (not those a spend cap stopped)."""
        return [r for r in self.results if r.error and r.error_kind != "budget"]

    @property
    def stopped_by_budget(self) -> list[DialogueResult]:
        """The dialogues a spend cap stopped before their next call (eyt_dagster/core/budget.py)."""
        return [r for r in self.results if r.error_kind == "budget"]

    def summary(self) -> dict[str, Any]:
        """What the materialisation reports about the cell."""
        answered = self.rows[(self.rows["turn"] > 0) & self.rows["complete"].astype(bool)]
        unfinished = len(self.failed) + len(self.stopped_by_budget)
        return {
            "dialogues": len(self.results),
            "finished_dialogues": len(self.results) - unfinished,
            "failed_dialogues": len(self.failed),
            "stopped_by_budget": len(self.stopped_by_budget),
            "failed_seed_ids": ", ".join(r.seed.seed_id for r in self.failed[:5]),
            "mean_turns": float(answered.groupby("seed_id")["turn"].max().mean()) if len(answered) else 0.0,
        }


def dialogue_workers(target: ModelRef, simulator: ModelRef) -> int:
    """Dialogues under way at once: enough to fill the target's and the simulator's budgets together (a dialogue
    waits on one of them at a time); each endpoint's gate caps what reaches it (resources/models/endpoint_gates.py)."""
    return target.max_concurrency + (0 if simulator.is_baseline else simulator.max_concurrency)


def play_cell(
    chat_seeds: pd.DataFrame,
    simulator: Simulator,
    target: Target,
    *,
    target_ref: ModelRef,
    simulator_ref: ModelRef,
    pool: str,
    cell: str,
    t_max: int,
    prompt_hash: str,
    slate_seed: int,
    on_done: Callable[[int, int], None] | None = None,
    on_turn: TurnHook | None = None,
) -> DialogueCell:
    """The cell's dialogues (`cell` names it in the warnings, as its partition key does), `on_done(done, total)`
    reporting progress and `on_turn(seed, turn)` seeing each turn as it ends."""
    warnings = []
    seeds = [seed_from_row(r) for r in chat_seeds[chat_seeds["error"].isna()].to_dict("records")]
    if len(seeds) < len(chat_seeds):
        warnings.append(
            f"{len(chat_seeds) - len(seeds)} of {len(chat_seeds)} ChatSEEDs of pool {pool} failed and "
            "have no dialogue; see dialogue.chat_seeds.error and rerun chat_seeds to retry them"
        )
    results = run_dialogues(
        seeds,
        simulator,
        target,
        t_max,
        max_workers=dialogue_workers(target_ref, simulator_ref),
        on_done=on_done,
        on_turn=on_turn,
    )
    rows = [row for result in results for row in turn_rows(result, target_ref.id)]
    df = pd.DataFrame(rows, columns=[*TURN_COLUMNS, *stat_column_names("target_", "simulator_")])
    df["simulator"] = simulator.model_id
    df["target_model"] = target_ref.model
    df["prompt_hash"] = prompt_hash
    df["slate_seed"] = slate_seed
    stopped = [r for r in results if r.error_kind == "budget"]
    if stopped:
        warnings.append(
            f"{len(stopped)} of {len(results)} dialogues in {cell} stopped by budget (not played further, not "
            f"failed): {(stopped[0].error or '')[:300]}"
        )
    failed = [r for r in results if r.error and r.error_kind != "budget"]
    if failed:
        first = failed[0]
        warnings.append(
            f"{len(results) - len(failed)} of {len(results)} dialogues finished in {cell}; see "
            f"dialogue.dialogue_turns.error (rows with turn 0; the answered turns of an unfinished dialogue are kept "
            f"with complete = false and left out of every metric). First: {first.seed.seed_id} after "
            f"{len(first.turns)} turn(s): {(first.error or '')[:300]}. Rerun the partition to finish them: answered "
            "calls come from the call cache."
        )
    target_stats = sum((t.target_stats for r in results for t in r.turns), CallStats())
    simulator_stats = sum((t.simulator_stats for r in results for t in r.turns), CallStats())
    for role, model_id, stats in (
        ("target", target_ref.id, target_stats),
        ("simulator", simulator.model_id, simulator_stats),
    ):
        warning = adaptations_warning(role, model_id, stats.adaptations)
        if warning is not None:
            warnings.append(warning)
    return DialogueCell(
        rows=df, results=results, target_stats=target_stats, simulator_stats=simulator_stats, warnings=warnings
    )
