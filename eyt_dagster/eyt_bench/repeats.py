"""Repeated dialogues and repeated verdicts of one target x pool cell: the samples the noise floor is measured on
(docs/eyt-metrics.md#the-noise-floor).

A slate with `repeats: k` plays each ChatSEED k times per target; with `judge_repeats: j` it judges each dialogue j
times. Sample (repeat 0, judge repeat 0) is the cell's own dialogue_turns, verdicts and dialogue_scores, untouched:
`repeats: 1, judge_repeats: 1` changes no row and makes no call. Repeat r > 0 plays the ChatSEED again with the
target's r-th sample (seed `sample_seed(slate seed, r)`, its own cache keys); the simulator keeps its seed, so two
repeats differ only where the target's sampling made them differ. Judge repeat q > 0 asks every judge again with
its q-th sample. Pure logic: the roles and the embedding function are handed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.samples import sample_seed
from eyt_dagster.eyt_bench.dialogue_loop import DialogueResult, run_dialogue
from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues
from eyt_dagster.eyt_bench.encoder_calibration import EncoderCalibration
from eyt_dagster.eyt_bench.intent_similarity import Embed, intent_similarities
from eyt_dagster.eyt_bench.judging import (
    Dialogue,
    final_verdict,
    finished_dialogues,
    turn_verdict,
    verdict_calls,
    verdict_frame,
)
from eyt_dagster.eyt_bench.role_protocols import Judge, Simulator, Target
from eyt_dagster.eyt_bench.table_rows import TURN_COLUMNS, seed_from_row, stat_column_names, turn_rows

SAMPLE_KEYS = ["repeat", "judge_repeat", "sample_seed", "judge_sample_seed"]


def samples(repeats: int, judge_repeats: int) -> list[tuple[int, int]]:
    """Every (repeat, judge repeat) sample past the cell's own (0, 0), in order."""
    return [(r, q) for r in range(repeats) for q in range(judge_repeats) if (r, q) != (0, 0)]


# -- playing the repeats ---------------------------------------------------------------------------


def play_repeats(
    chat_seeds: pd.DataFrame,
    simulator: Simulator,
    targets: Mapping[int, Target],
    *,
    target_id: str,
    t_max: int,
    slate_seed: int,
    workers: int,
    on_done: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, list[tuple[int, DialogueResult]]]:
    """Every ChatSEED of the pool played once more per repeat in `targets` (repeat index -> that sample of the
    target), as one pool of independent dialogues. Rows as dialogue_turns has them, plus `repeat` and the
    `sample_seed` the target was sent; a failed dialogue keeps its answered turns and an error row (turn 0),
    and a rerun finishes it from the call cache."""
    seeds = [seed_from_row(r) for r in chat_seeds[chat_seeds["error"].isna()].to_dict("records")]
    jobs = [(repeat, seed) for repeat in sorted(targets) for seed in seeds]
    results = ordered_map(
        lambda job: (job[0], run_dialogue(job[1], simulator, targets[job[0]], t_max)), jobs, workers, on_done
    )
    rows = []
    for repeat, result in results:
        for row in turn_rows(result, target_id):
            rows.append({**row, "repeat": repeat, "sample_seed": sample_seed(slate_seed, repeat)})
    columns = [*TURN_COLUMNS, *stat_column_names("target_", "simulator_"), "repeat", "sample_seed"]
    return pd.DataFrame(rows, columns=columns), results


# -- judging and scoring them ---------------------------------------------------------------------


@dataclass(frozen=True)
class CellSamples:
    """What one cell's samples are scored from: its own dialogues and their intent similarity (repeat 0), and its
    repeated dialogues. Every sample is judged anew (sample (0, 0), whose verdicts are the cell's own, is not one
    of them), so the cell's verdict tables are not read."""

    chat_seeds: pd.DataFrame
    dialogue_turns: pd.DataFrame
    repeat_dialogues: pd.DataFrame
    intent_similarity: pd.DataFrame

    def turns(self, repeat: int) -> pd.DataFrame:
        if repeat == 0:
            return self.dialogue_turns
        rows = self.repeat_dialogues
        return rows[rows["repeat"] == repeat].drop(columns=["repeat", "sample_seed"])


@dataclass(frozen=True)
class Judging:
    """The judges of every judge repeat, and what verdict rows record."""

    judges: Mapping[int, Sequence[Judge]]  # judge repeat -> that sample of every judge
    judge_models: dict[str, str]
    turn_prompt: str
    final_prompt: str
    slate_seed: int
    workers: int


def _verdict_jobs(
    judging: Judging, dialogues: Mapping[int, list[Dialogue]], wanted: Sequence[tuple[int, int]]
) -> list[tuple[int, int, bool, Judge, Dialogue, int]]:
    """Every verdict call of the wanted samples: (repeat, judge repeat, final, judge, dialogue, turn)."""
    jobs = []
    for repeat, q in wanted:
        for judge in judging.judges[q]:
            for dialogue in dialogues[repeat]:
                jobs += [(repeat, q, False, judge, dialogue, t) for t in range(1, len(dialogue[2]) + 1)]
                jobs.append((repeat, q, True, judge, dialogue, 0))
    return jobs


def _call(job: tuple[int, int, bool, Judge, Dialogue, int]) -> dict[str, Any]:
    _, _, final, judge, dialogue, turn = job
    return final_verdict(judge, dialogue) if final else turn_verdict(judge, dialogue, turn)


def sample_dialogues(cell: CellSamples, repeats: int) -> dict[int, list[Dialogue]]:
    """The finished dialogues of every repeat of the cell (repeat 0: its own), the ones its samples judge."""
    return {r: finished_dialogues(cell.turns(r), cell.chat_seeds) for r in range(repeats)}


def sample_verdicts(cell: CellSamples, *, repeats: int, judge_repeats: int, judges: int) -> int:
    """How many verdict calls `score_samples` makes with `judges` judges per judge repeat: every turn and the final
    verdict of each finished dialogue of each wanted sample (a step knows its total before it builds its judges)."""
    dialogues = sample_dialogues(cell, repeats)
    return sum(
        verdict_calls(judges, dialogues[repeat], final=final)
        for repeat, _ in samples(repeats, judge_repeats)
        for final in (False, True)
    )


def score_samples(
    cell: CellSamples,
    judging: Judging,
    embed: Embed,
    *,
    repeats: int,
    judge_repeats: int,
    alpha: float,
    combine: str,
    calibration: EncoderCalibration | None = None,
    on_done: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The dialogue_scores rows of every sample past (0, 0), each with `repeat` and `judge_repeat`, and every
    verdict row those samples' calls gave (for the failure count and the run log). All verdict calls of all
    samples are one pool of independent calls; `on_done` follows it."""
    wanted = samples(repeats, judge_repeats)
    dialogues = sample_dialogues(cell, repeats)
    jobs = _verdict_jobs(judging, dialogues, wanted)
    rows = ordered_map(_call, jobs, judging.workers, on_done)
    frames, verdict_rows = [], []
    similarity = {0: cell.intent_similarity}
    for repeat, q in wanted:
        verdicts, finals = (
            verdict_frame(
                [row for job, row in zip(jobs, rows) if (job[0], job[1], job[2]) == (repeat, q, final)],
                final=final,
                judge_models=judging.judge_models,
                prompt_hash=judging.final_prompt if final else judging.turn_prompt,
                seed=judging.slate_seed,
            )
            for final in (False, True)
        )
        turns = cell.turns(repeat)
        if repeat not in similarity:  # once per repeat, whatever its judge repeats
            similarity[repeat] = intent_similarities(turns, cell.chat_seeds, embed)[0]
        scores = score_dialogues(turns, verdicts, finals, similarity[repeat], alpha, combine, calibration)
        scores["repeat"], scores["judge_repeat"] = repeat, q
        scores["sample_seed"] = sample_seed(judging.slate_seed, repeat)  # the target's, of this play
        scores["judge_sample_seed"] = sample_seed(judging.slate_seed, q)
        frames.append(scores)
        verdict_rows += [verdicts, finals]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SAMPLE_KEYS)
    calls = pd.concat(verdict_rows, ignore_index=True) if verdict_rows else pd.DataFrame(columns=["error"])
    return out, calls
