"""Running a list of runs that depend on each other, several at once (what `eyt run` and `eyt refresh` do).

Pure scheduling over plain data: `run_all` takes the runs (each naming the earlier runs whose output it reads)
and a `launch` callable, and starts every run whose inputs are done as soon as a slot is free, at most
`parallel` at once. The cells of one target (one per pool) may run side by side: every call to an endpoint takes one
of its `max_concurrency` slots shared by the machine's processes (resources/models/endpoint_slots.py), so the endpoint
gets at most its budget however many runs call it. A partitioned run whose input run failed is skipped; a report still runs over the partitions that
exist. The launcher (a worker process per slot) is in eyt_dagster/ops/launch.py; see docs/operations.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


@dataclass(frozen=True)
class Run:
    """One job run: its tags (the partition), the assets it selects (empty: the whole job) and the indexes of the
    earlier runs it reads from.
    `needs_all_inputs` False: it runs even when an input run failed (a report over the partitions that exist)."""

    job: str
    tags: dict[str, str] = field(default_factory=dict)
    label: str = ""
    assets: tuple[str, ...] = ()
    after: tuple[int, ...] = ()
    needs_all_inputs: bool = True


def check_order(runs: Sequence[Run]) -> None:
    """Each run may only wait for earlier runs (so the list is a valid order and holds no cycle)."""
    for i, run in enumerate(runs):
        wrong = [j for j in run.after if not 0 <= j < i]
        if wrong:
            raise ValueError(f"run {i} ({run.label or run.job}) waits for {wrong}: only earlier runs can be waited for")


def run_all(
    runs: Sequence[Run],
    start: Callable[[int, Run], Future[bool]],
    parallel: int,
    on_skip: Callable[[int, Run], None] = lambda i, run: None,
) -> dict[int, str]:
    """Start the runs through `start(index, run)` (which returns a Future of True on success), at most
    `parallel` at once, each once all its `after` runs have ended; return index -> OK / FAILED / SKIPPED. A run whose `after` holds a failed or skipped run is skipped
    (unless it does not `needs_all_inputs`) (reported through `on_skip`). A future that raises counts as a failure."""
    if parallel < 1:
        raise ValueError(f"parallel must be at least 1, got {parallel}")
    check_order(runs)
    outcome: dict[int, str] = {}
    running: dict[Future[bool], int] = {}
    waiting = list(range(len(runs)))
    while waiting or running:
        changed = True
        while changed and len(running) < parallel:
            changed = False
            for i in list(waiting):
                if len(running) >= parallel:
                    break
                run = runs[i]
                if not all(j in outcome for j in run.after):
                    continue
                if run.needs_all_inputs and any(outcome[j] != OK for j in run.after):
                    waiting.remove(i)
                    outcome[i] = SKIPPED
                    on_skip(i, run)
                    changed = True
                    continue
                waiting.remove(i)
                running[start(i, run)] = i
        if not running:
            if waiting:  # cannot happen with check_order; guards against a silent endless loop
                raise RuntimeError(f"runs {waiting} can never start")
            break
        done, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for future in done:
            i = running.pop(future)
            try:
                outcome[i] = OK if future.result() else FAILED
            except Exception:
                outcome[i] = FAILED
    return outcome


def summary(runs: Sequence[Run], outcome: dict[int, str], seconds: float, width: int = 118) -> str:
    """What `eyt run` and `eyt refresh` print at the end: the counts and, when a run failed or was skipped, the
    labels of the failed, the skipped and the succeeded runs (every run also had its own line when it ended)."""
    by_state = {
        state: [runs[i].label or runs[i].job for i in sorted(outcome) if outcome[i] == state]
        for state in (OK, FAILED, SKIPPED)
    }
    ok = len(by_state[OK]) == len(runs)
    lines = [
        f"{'done' if ok else 'FAILED'} in {seconds:.1f} s: {len(by_state[OK])} run(s) succeeded, "
        f"{len(by_state[FAILED])} failed, {len(by_state[SKIPPED])} skipped"
    ]
    if not ok:
        for state, title in ((FAILED, "failed:"), (SKIPPED, "skipped:"), (OK, "succeeded:")):
            if by_state[state]:
                lines += _packed(f"  {title:<11}", by_state[state], width)
    return "\n".join(lines)


def _packed(head: str, labels: list[str], width: int) -> list[str]:
    """The labels after `head`, comma separated, as few lines as fit in `width` (a label is never broken)."""
    lines, line = [], head
    for n, label in enumerate(labels):
        text = label + ("," if n < len(labels) - 1 else "")
        if line.strip() and len(line) + 1 + len(text) > width and line != head:
            lines.append(line)
            line = " " * len(head)
        line = f"{line}{'' if line.endswith(' ') else ' '}{text}"
    return [*lines, line]


def eyt_runs(
    pools: Sequence[str],
    targets: Sequence[str],
    *,
    reports: bool = True,
    subscales: Sequence[str] = (),
    speech_targets: Sequence[str] = (),
    speech: bool = True,
    voice_targets: Sequence[str] = (),
    voice_pools: Mapping[str, Sequence[str]] | None = None,
) -> list[Run]:
    """The runs of `eyt run`, in an order that is also a valid one-after-another order: each pool, each target x
    pool cell (after its pool), the EYT reports (after every cell), each
    subscale's SpeechEQ items, each speech target's choices (after every subscale, one run per target), the
    build report (after the subscales) and the SEQ reports (after the choices). The spoken EYT-Bench plays,
    for each voice target, its `voice_pools` entry (default: every pool)."""
    from assets.eyt_bench.partitions import partition_tags
    from assets.eyt_voice.partitions import voice_partition_tags

    runs: list[Run] = []
    pool_run = {}
    for pool in pools if targets or voice_targets else []:
        pool_run[pool] = len(runs)
        runs.append(Run("eyt_pools", {"dagster/partition": pool}, f"eyt_pools [{pool}]"))
    cells = []
    for target in targets:
        for pool in pools:
            cells.append(len(runs))
            runs.append(
                Run(
                    "eyt_dialogues",
                    partition_tags(target, pool),
                    f"eyt_dialogues [{pool}|{target}]",
                    after=(pool_run[pool],),
                )
            )
    if reports:
        runs.append(
            Run(
                "eyt_reports",
                label="eyt_reports",
                after=tuple(pool_run.values()) + tuple(cells),
                needs_all_inputs=False,
            )
        )
    voiced = []
    for target in voice_targets:  # the spoken EYT-Bench: its cells after their pools, its reports after them
        for pool in pools if voice_pools is None else [p for p in pools if p in voice_pools.get(target, ())]:
            voiced.append(len(runs))
            runs.append(
                Run(
                    "eyt_voice",
                    voice_partition_tags(target, pool),
                    f"eyt_voice [{pool}|{target}]",
                    after=(pool_run[pool],),
                )
            )
    if voiced and reports:
        runs.append(Run("voice_reports", label="voice_reports", after=tuple(voiced), needs_all_inputs=False))
    if not speech:
        return _with_unified(runs, reports)
    built = []
    for slug in subscales:
        built.append(len(runs))
        runs.append(Run("speech_build", {"dagster/partition": slug}, f"speech_build [{slug}]"))
    evaluated = []
    for target in speech_targets:
        evaluated.append(len(runs))
        runs.append(
            Run(
                "speech_eval",
                {"dagster/partition": target},
                f"speech_eval [{target}]",
                after=tuple(built),
                needs_all_inputs=False,
            )
        )
    runs.append(Run("speech_reports", label="speech_reports", after=tuple(built), needs_all_inputs=False))
    if speech_targets:
        runs.append(Run("seq_reports", label="seq_reports", after=tuple(evaluated), needs_all_inputs=False))
    return _with_unified(runs, reports)


def _with_unified(runs: list[Run], reports: bool) -> list[Run]:
    """The runs, then (with reports) the model cards and paper tables, which read both benchmarks' reports."""
    if reports:
        runs.append(
            Run("unified_reports", label="unified_reports", after=tuple(range(len(runs))), needs_all_inputs=False)
        )
    return runs
