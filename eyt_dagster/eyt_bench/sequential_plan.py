"""EYT-Bench's sequential design on its tables (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled): which
ChatSEEDs a cell plays (a prefix of the pool's seeded order), the per-dialogue values of the targets in that order,
and after a look, which targets play the next batch. The statistics are eyt_dagster/core/sequential.py; this maps
ChatSEEDs, targets and metrics onto it. Pure logic over dialogue.chat_seeds and dialogue.dialogue_scores rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eyt_dagster.core import sequential
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.analysis import per_dialogue
from eyt_dagster.eyt_bench.settings import SequentialSettings
from eyt_dagster.eyt_bench.table_contracts import SEQUENTIAL_DECISIONS_COLUMNS, SEQUENTIAL_SAVINGS_COLUMNS


def design_of(settings: SequentialSettings) -> sequential.SequentialDesign:
    """The slate's settings as the statistics take them."""
    return sequential.SequentialDesign(
        enabled=settings.enabled,
        alpha=settings.alpha,
        min_dialogues=settings.min_dialogues,
        batch=settings.batch,
        margin=dict(settings.margin),
    )


def playing_order(chat_seeds: pd.DataFrame, seed: int) -> list[str]:
    """The pool's usable ChatSEEDs (no error) in the design's playing order: the same for every target."""
    usable = chat_seeds[chat_seeds["error"].isna()] if "error" in chat_seeds.columns else chat_seeds
    return sequential.prefix_order(usable["seed_id"].astype(str), seed)


def played_prefix(chat_seeds: pd.DataFrame, seed: int, n: int) -> pd.DataFrame:
    """The rows of the first `n` ChatSEEDs of the playing order (the failed ones stay, so the cell still says they
    have no dialogue), in the table's order."""
    keep = set(playing_order(chat_seeds, seed)[:n])
    failed = chat_seeds["error"].notna() if "error" in chat_seeds.columns else False
    return chat_seeds[chat_seeds["seed_id"].astype(str).isin(keep) | failed]


def score_array(
    scores: pd.DataFrame, order: Sequence[str], targets: Sequence[str], metrics: Sequence[str]
) -> np.ndarray:
    """targets x ChatSEEDs (in `order`) x metrics of per-dialogue values from dialogue_scores rows of one pool; NaN
    where a target has not played a ChatSEED (or it has no value there)."""
    out = np.full((len(targets), len(order), len(metrics)), np.nan)
    if scores.empty:
        return out
    played = scores.drop_duplicates(["target", "seed_id"]).set_index(["target", "seed_id"])
    for k, metric in enumerate(metrics):
        wide = per_dialogue(played, metric).unstack("seed_id").reindex(index=list(targets), columns=list(order))
        out[:, :, k] = wide.to_numpy(float)
    return out


@dataclass(frozen=True)
class Look:
    """One pool after a look: the decisions so far, the targets that play on and how many ChatSEEDs they will have
    played after the next batch (`next_n`; None when the design is finished in this pool)."""

    pool: str
    n: int
    n_total: int
    result: sequential.SequentialResult
    playing_on: tuple[str, ...]
    next_n: int | None

    def headline(self) -> str:
        """The pool, the look and how many of its comparisons are decided."""
        d = self.result.decisions
        decided = int((d["verdict"] != sequential.UNDECIDED).sum()) if len(d) else 0
        return f"{self.pool}, look at {self.n} of {self.n_total} ChatSEEDs: {decided} of {len(d)} comparisons decided"

    def summary(self) -> str:
        head = self.headline()
        if self.next_n is None:
            return head + "; every target stops here"
        return head + f"; {len(self.playing_on)} target(s) play on to {self.next_n}: {', '.join(self.playing_on)}"


def look(
    pool: str,
    chat_seeds: pd.DataFrame,
    scores: pd.DataFrame,
    targets: Sequence[str],
    settings: SequentialSettings,
    seed: int,
    n: int,
) -> Look:
    """The design in one pool after every target still playing has played `n` ChatSEEDs (stopped ones fewer)."""
    design = design_of(settings)
    order = playing_order(chat_seeds, seed)
    metrics = sorted(design.margin)
    values = score_array(scores, order[:n], targets, metrics)
    result = sequential.run_sequential(values, design, len(order), metrics=metrics, targets=list(targets))
    d = result.decisions
    open_pairs = d[(d["verdict"] == sequential.UNDECIDED) & ~d["undecided_at_n"]]
    playing_on = tuple(t for t in targets if t in set(open_pairs["target_a"]) | set(open_pairs["target_b"]))
    later = [int(p) for p in sequential.look_points(design.min_dialogues, design.batch, len(order)) if p > n]
    next_n = later[0] if playing_on and later else None
    return Look(pool, n, len(order), result, playing_on if next_n else (), next_n)


def next_round(
    pool: str,
    chat_seeds: pd.DataFrame,
    scores: pd.DataFrame,
    targets: Sequence[str],
    settings: SequentialSettings,
    seed: int,
) -> tuple[Look, dict[str, int]]:
    """Where the design stands in one pool from what is already played (a look at the most any target has played),
    and how many ChatSEEDs each target plays next (an empty dict: nothing). For each comparison still open, the
    target that has played fewer ChatSEEDs catches up with the other (a target just added to the slate), and two
    that have played as many both play to their next look; every target plays at least to the first look. So `eyt
    run` again, after an interruption or with a target added, carries on from the warehouse."""
    design = design_of(settings)
    counts = played_counts(scores)
    played = {t: int(counts.get((t, pool), 0)) for t in targets}
    state = look(pool, chat_seeds, scores, targets, settings, seed, max(played.values(), default=0))
    looks = sequential.look_points(design.min_dialogues, design.batch, state.n_total)
    d = state.result.decisions
    open_pairs = d[(d["verdict"] == sequential.UNDECIDED) & ~d["undecided_at_n"]]
    to_play: dict[str, int] = {}

    def ask(target: str, n: int) -> None:
        to_play[target] = max(to_play.get(target, 0), n)

    for a, b in sorted(set(zip(open_pairs["target_a"], open_pairs["target_b"], strict=True))):
        if played[a] != played[b]:
            behind, ahead = (a, b) if played[a] < played[b] else (b, a)
            ask(behind, played[ahead])
            continue
        later = [int(p) for p in looks if p > played[a]]
        if later:
            ask(a, later[0])
            ask(b, later[0])
    first = int(looks[0]) if len(looks) else 0
    for target, n in played.items():
        if n < first:
            ask(target, first)
    return state, {t: n for t, n in to_play.items() if n > played[t]}


def played_counts(scores: pd.DataFrame) -> pd.Series:
    """Dialogues each (target, pool) cell has in dialogue_scores."""
    if scores.empty:
        return pd.Series(dtype="int64")
    return scores.groupby(["target", "pool"])["seed_id"].nunique()


def decisions(
    chat_seeds: pd.DataFrame, scores: pd.DataFrame, targets: Sequence[str], settings: SequentialSettings, seed: int
) -> pd.DataFrame:
    """Every comparison of the design as it stands, per pool, metric and pair: its verdict, at how many ChatSEEDs it was
    decided (and whether before the pool's N), the paired difference and interval then, and what each target
    played. The look is at the most any target of the pool has played (what `eyt run`'s last round looked at)."""
    counts = played_counts(scores)
    frames = []
    for pool, seeds in chat_seeds.groupby("pool", sort=True):
        in_pool = scores[scores["pool"] == pool] if len(scores) else scores
        present = [t for t in targets if (t, pool) in counts.index]
        if len(present) < 2:
            continue
        n = int(max(counts[(t, pool)] for t in present))
        state = look(str(pool), seeds, in_pool, present, settings, seed, n)
        d = state.result.decisions.copy()
        d.insert(0, "pool", pool)
        d["margin"] = d["metric"].map(settings.margin)
        d["n_total"] = state.n_total
        d["decided_early"] = (d["verdict"] != sequential.UNDECIDED) & (d["decided_items"] < state.n_total)
        d["played_a"] = [int(counts[(t, pool)]) for t in d["target_a"]]
        d["played_b"] = [int(counts[(t, pool)]) for t in d["target_b"]]
        frames.append(d)
    if not frames:
        return pd.DataFrame(columns=list(DECISION_COLUMNS))
    out = pd.concat(frames, ignore_index=True).rename(columns={"lo": "ci_low", "hi": "ci_high", "n": "n_paired"})
    return out[list(DECISION_COLUMNS)]


# the columns decisions() builds: the table's, but for what the asset adds (the baseline flag, created_at)
DECISION_COLUMNS = tuple(column_names(SEQUENTIAL_DECISIONS_COLUMNS, without=("is_baseline_pair", "created_at")))


def calls_per_dialogue(turns: float, *, target: bool, simulator: bool, judges: int) -> float:
    """The network calls of one dialogue of `turns` answered turns (Algorithm 1 and the judging): the target's
    perception and reply a turn, the simulator's user turn a turn and its last report, each remote judge's verdict a
    turn and its final verdict. Roles played by an embedded baseline make none; retries and re-asks not counted."""
    return (2 * turns if target else 0.0) + ((turns + 1) if simulator else 0.0) + judges * (turns + 1)


def savings(
    chat_seeds: pd.DataFrame,
    turns: pd.DataFrame,
    targets: Sequence[str],
    seed: int,
    remote: Callable[[str], bool] = lambda target: False,
    *,
    remote_simulator: bool = False,
    remote_judges: int = 0,
    judged: Sequence[pd.DataFrame] = (),
) -> pd.DataFrame:
    """Per target and pool: the dialogues played and left unplayed by the design, and estimates of what the unplayed
    ones would have cost: the mean USD of a played dialogue of the cell (its target's and simulator's calls, from
    dialogue_turns' cost columns, and its judges' calls, from the `judged` tables' `judge_cost_usd`: the turn
    verdicts and the final verdicts) and the network calls of a dialogue of the cell's mean length
    (calls_per_dialogue; `remote(target)` says whether the target is a remote model), each times the dialogues
    left."""
    judge_usd = _judge_usd_by_cell(judged)
    rows = []
    for (target, pool), cell in turns.groupby(["target", "pool"], sort=True) if len(turns) else []:
        if target not in targets:
            continue
        n_total = len(playing_order(chat_seeds[chat_seeds["pool"] == pool], seed))
        played = int(cell["seed_id"].nunique())
        answered = cell[cell["turn"] > 0]
        usd = float(answered[["target_cost_usd", "simulator_cost_usd"]].fillna(0).to_numpy().sum())
        usd += judge_usd.get((str(target), str(pool)), 0.0)
        per_dialogue = usd / played if played else 0.0
        left = max(n_total - played, 0)
        mean_turns = float(answered.groupby("seed_id")["turn"].max().mean()) if len(answered) else 0.0
        calls = calls_per_dialogue(
            mean_turns, target=remote(str(target)), simulator=remote_simulator, judges=remote_judges
        )
        rows.append((target, pool, played, n_total, left, usd, per_dialogue * left, calls * left))
    return pd.DataFrame(rows, columns=list(SAVINGS_COLUMNS))


def _judge_usd_by_cell(judged: Sequence[pd.DataFrame]) -> dict[tuple[str, str], float]:
    """The judges' USD per (target, pool), summed over the verdict tables given."""
    out: dict[tuple[str, str], float] = {}
    for table in judged:
        if not len(table) or "judge_cost_usd" not in table:
            continue
        for (target, pool), usd in table.groupby(["target", "pool"])["judge_cost_usd"].sum().items():
            out[(str(target), str(pool))] = out.get((str(target), str(pool)), 0.0) + float(usd)
    return out


# the columns savings() builds: the table's, but for what the asset adds (the baseline flags, created_at)
SAVINGS_COLUMNS = tuple(
    column_names(SEQUENTIAL_SAVINGS_COLUMNS, without=("is_baseline", "self_preference_risk", "created_at"))
)
