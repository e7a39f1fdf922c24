"""`eyt bench`: how close a run's schedule comes to the bound set by model latency (see docs/throughput.md).

It starts a localhost OpenAI-compatible server that answers every request after a fixed latency
(eyt_dagster/ops/bench_server.py), writes a slate with every EYT-Bench role on it (simulator, targets, judges;
every model with the same `max_concurrency`), runs `eyt run --no-speech` on that slate in a fresh data
directory, and then again with no latency. Per stage it prints the network calls, the wall time at each
latency, the part the latency adds, the latency-bound ideal and their ratio.

Where the numbers come from:
* wall time of a stage: Dagster's STEP_START to STEP_SUCCESS/STEP_FAILURE event timestamps of its step,
  summed over the runs (partitions) of `eyt run`; the in-process executor runs one step at a time, so
  the sum is the time the stage held the run. The whole: the wall time of the `eyt run` process.
* calls: the call ledger's rows that went to the network (resources/models/call_cache.py), by run and purpose.
* ideal of a stage in one partition: latency x max(the most waves any one endpoint needs,
  ceil(calls to it / its max_concurrency), and the longest chain of dependent calls); summed over the
  partitions (they run one after another). A dialogue's chain is two calls per turn (perception and
  reply side by side, then the simulator); a ChatSEED or a judge verdict is one call (plus its re-asks).
  The whole's ideal is the sum of the stages' ideals.
* latency part = wall time with latency - wall time without; part/ideal = latency part / ideal (how the
  users measured it; below 1 when client work overlaps the waits). wall/bound = wall time with latency /
  max(ideal, wall time without latency): no schedule can beat either bound, so 1.0 is the best possible.
  The run without latency is taken as the bound of the client's own work, but it is a measured time too: when it
  came out longer than the run with latency (the machine's other load, or a row so short that the two runs'
  variation is larger than what the latency adds), the subtraction is below zero. The latency cannot have saved
  time, so such a part is shown as 0 and marked, with the reason under the table (`latency_part`).

While it runs it reports as it goes (`progress`): which run it starts, every line `eyt run` prints (each run's
end, and its progress lines, one per change of state), and how long each run took.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from eyt_dagster.core import env_settings
from eyt_dagster.eyt_bench.taxonomy import PAPER_POOLS
from eyt_dagster.ops.bench_server import LatencyServer
from eyt_dagster.slate import default_slate_path
from eyt_dagster.speech_eq.conditions import CONDITIONS

EYT_STAGES = ("chat_seeds", "dialogue_turns", "judge_verdicts", "final_intent_verdicts")
SPEECH_STAGE = "slm_choices"  # SpeechEQ's forced choices (the speech_eval job), with --speech
STAGES = (*EYT_STAGES, SPEECH_STAGE)
# ledger purpose prefix -> stage (eyt_dagster/eyt_bench/chat_roles.py and eyt_dagster/speech_eq/chat_chooser.py name the purposes)
PURPOSE_STAGE = {
    "chat_seed": "chat_seeds",
    "perceive": "dialogue_turns",
    "respond": "dialogue_turns",
    "simulate": "dialogue_turns",
    "judge_turn": "judge_verdicts",
    "judge_final": "final_intent_verdicts",
    "speech_eq_round1": SPEECH_STAGE,
    "speech_eq_round2": SPEECH_STAGE,
}


@dataclass(frozen=True)
class BenchSettings:
    latency_s: float = 0.2
    pools: tuple[str, ...] = PAPER_POOLS  # both fixture pools of the papers (the Chinese one only with --pool)
    dialogues_per_pool: int = 16
    t_max: int = 10
    targets: int = 1
    judges: int = 1
    max_concurrency: int = 32
    reports: bool = False
    # SpeechEQ subscales to build (embedded template text and espeak-ng audio, no model calls) and to evaluate
    # with one remote audio target; none: no SpeechEQ (`eyt run --no-speech`)
    speech_subscales: tuple[str, ...] = ()
    parallel: int | None = None  # eyt run --parallel (None: its default)
    instance_yaml: str | None = None  # a dagster.yaml for the run's instance instead of the repository's


@dataclass
class StageFigures:
    calls: int = 0
    wall_s: float = 0.0
    ideal_s: float = 0.0


@dataclass
class Measurement:
    latency_s: float
    total_wall_s: float
    stages: dict[str, StageFigures] = field(default_factory=dict)
    max_in_flight: int = 0
    max_in_flight_by_model: dict[str, int] = field(default_factory=dict)
    most_runs_at_once: int = 0  # the most target x pool runs that were executing at the same moment
    # the whole run's ideal when its runs overlapped (None: they ran one after another, the sum of the stages')
    overlapped_ideal_s: float | None = None

    @property
    def total_calls(self) -> int:
        return sum(s.calls for s in self.stages.values())

    @property
    def total_ideal_s(self) -> float:
        if self.overlapped_ideal_s is not None:
            return self.overlapped_ideal_s
        return sum(s.ideal_s for s in self.stages.values())


def _model(model_id: str, family: str, base_url: str, concurrency: int) -> dict[str, Any]:
    return {
        "id": model_id,
        "provider": "openai",
        "model": f"{model_id}-bench",
        "family": family,
        "base_url": base_url,
        "max_concurrency": concurrency,
        "max_tokens": 512,
        "timeout_s": 60.0,
    }


def bench_slate(settings: BenchSettings, base_url: str) -> dict[str, Any]:
    """The default slate with every EYT-Bench role on the bench server (no SpeechEQ target, no ablation judge)."""
    slate = yaml.safe_load(default_slate_path().read_text())
    c = settings.max_concurrency
    slate.update(
        {
            "name": "eyt-bench-throughput",
            "pools": {pool: {"source": "fixture"} for pool in settings.pools},
            "dialogues_per_pool": settings.dialogues_per_pool,
            "t_max": settings.t_max,
            "bootstrap_resamples": 200,
            "simulator": _model("bench-simulator", "bench-sim", base_url, c),
            "targets": [
                _model(f"bench-target-{i}", "bench-target", base_url, c) for i in range(1, settings.targets + 1)
            ],
            "judges": [
                _model(f"bench-judge-{i}", f"bench-judge-{i}", base_url, c) for i in range(1, settings.judges + 1)
            ],
            "replacement_judge": None,
            "reasoning_pairs": [],
        }
    )
    if settings.speech_subscales:
        # every persona condition, so the one subscale's few items make enough calls to fill the budget
        slate["speech"] = {
            **(slate.get("speech") or {}),
            "evaluation": {**((slate.get("speech") or {}).get("evaluation") or {}), "conditions": list(CONDITIONS)},
        }
        slate["targets"].append(
            {
                **_model("bench-speech-1", "bench-speech", base_url, c),
                "benchmarks": ["speech_eq"],
                "speech_input": "audio",
                "audio_format": "wav",
            }
        )
    return slate


def _stage_of(step_key: str) -> str | None:
    name = step_key.rsplit("__", 1)[-1]
    return name if name in STAGES else None


def step_times(dagster_home: Path) -> dict[tuple[str, str], float]:
    """(run id, stage) -> seconds from the step's STEP_START to its STEP_SUCCESS / STEP_FAILURE event."""
    from dagster import DagsterEventType, DagsterInstance

    kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
    out: dict[tuple[str, str], float] = {}
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        for run in instance.get_runs():
            started: dict[str, float] = {}
            for entry in instance.all_logs(run.run_id, of_type=kinds):
                stage = _stage_of(entry.step_key or "")
                if stage is None:
                    continue
                if entry.dagster_event_type == DagsterEventType.STEP_START:
                    started[stage] = entry.timestamp
                elif stage in started:
                    out[(run.run_id, stage)] = entry.timestamp - started.pop(stage)
    return out


def most_runs_at_once(dagster_home: Path, job: str = "eyt_dialogues") -> int:
    """The most runs of `job` whose start-to-end spans overlapped at one moment."""
    from dagster import DagsterInstance, RunsFilter
    from dagster._core.instance.ref import InstanceRef

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(dagster_home))) as instance:
        spans = [
            (r.start_time, r.end_time)
            for r in instance.get_run_records(RunsFilter(job_name=job))
            if r.start_time is not None and r.end_time is not None
        ]
    return most_at_once(spans)


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most (start, end) spans that overlap at one moment; one ending as another starts does not overlap."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        now += step
        most = max(most, now)
    return most


def ledger_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The network calls of the ledger (cache hits left out), wherever the runs' instance keeps it (the SQLite file
    under data_dir, or the instance's Postgres database: resources/models/cache_backend.py)."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    from resources.models.cache_backend import cache_backend, open_call_cache

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(data_dir / "dagster_home"))) as instance:
        backend = cache_backend(instance)
    with open_call_cache(data_dir, backend) as cache:
        return [
            {"run_id": r["run_id"], "model_id": r["model_id"], "purpose": r["purpose"]}
            for r in cache.ledger()
            if not r["cached"]
        ]


def chain_length(stage: str, purposes: list[str]) -> int:
    """The longest chain of calls that must follow one another in one partition of a stage."""
    if stage == SPEECH_STAGE:  # round 2 follows round 1 of its trajectory (the bench server needs no re-asks)
        return 2 if "speech_eq_round2" in purposes else min(1, len(purposes))
    per_purpose = Counter(purposes)  # a purpose with k rows is a call and its k-1 re-asks
    if stage != "dialogue_turns":
        return max(per_purpose.values(), default=0)
    turns: dict[str, set[str]] = defaultdict(set)
    for purpose in purposes:
        # simulate:<seed id>:<t + 1>, one per answered turn t (the simulator writes the next turn's query)
        if purpose.startswith("simulate:"):
            seed_id, _, next_turn = purpose[len("simulate:") :].rpartition(":")
            turns[seed_id].add(next_turn)
    return 2 * max((len(t) for t in turns.values()), default=0)


def _by_run_stage(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The ledger rows of the benchmarked stages, by (run id, stage)."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        stage = PURPOSE_STAGE.get(row["purpose"].split(":", 1)[0])
        if stage is not None:
            grouped[(row["run_id"], stage)].append(row)
    return grouped


def _waves(rows: list[dict[str, Any]], budgets: dict[str, int]) -> int:
    """The most waves any endpoint needs for these calls: ceil(its calls / its budget)."""
    by_model = Counter(r["model_id"] for r in rows)
    return max((math.ceil(n / budgets[m]) for m, n in by_model.items()), default=0)


def stage_ideals(
    rows: list[dict[str, Any]], budgets: dict[str, int], latency_s: float
) -> dict[tuple[str, str], tuple[int, float]]:
    """(run id, stage) -> (network calls, latency-bound ideal in seconds)."""
    out = {}
    for key, group in _by_run_stage(rows).items():
        chain = chain_length(key[1], [r["purpose"] for r in group])
        out[key] = (len(group), max(_waves(group, budgets), chain) * latency_s)
    return out


def overlapped_ideal(rows: list[dict[str, Any]], budgets: dict[str, int], latency_s: float) -> float:
    """The latency-bound ideal of a whole run whose partition runs overlap: no schedule beats the endpoint with the
    most waves over the whole run (its calls / its budget, whichever runs made them), nor the longest chain of
    calls inside one run (its stages follow one another: the sum of their chains)."""
    grouped = _by_run_stage(rows)
    chains: Counter[str] = Counter()
    for (run_id, stage), group in grouped.items():
        chains[run_id] += chain_length(stage, [r["purpose"] for r in group])
    waves = _waves([r for group in grouped.values() for r in group], budgets)
    return max(waves, max(chains.values(), default=0)) * latency_s


Progress = Callable[[str], None]
TAIL_LINES = 60  # of `eyt run`'s output, kept for the error when it fails


def run_reporting(command: Sequence[str], env: dict[str, str], on_line: Progress | None) -> tuple[int, str, str]:
    """Run `command`, handing each line of its stdout to `on_line` as it comes; (exit status, the last TAIL_LINES
    lines of its stdout, its stderr). Its stderr goes to a file meanwhile, so neither pipe can fill and stall it."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    with tempfile.TemporaryFile(mode="w+") as err:
        with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                tail.append(line)
                if on_line is not None and line.strip():
                    on_line(line.rstrip("\n"))
        err.seek(0)
        return proc.returncode, "".join(tail), err.read()


def _prefixed(progress: Progress | None, prefix: str) -> Progress | None:
    if progress is None:
        return None
    report = progress
    return lambda line: report(prefix + line)


def measure(
    settings: BenchSettings, workdir: Path, *, latency_s: float, progress: Progress | None = None
) -> Measurement:
    """One `eyt run` (`--no-speech`, or only the bench's subscales) against the bench server at `latency_s`, in
    a fresh data dir under workdir; `progress` is told each line `eyt run` prints, as it prints it."""
    data_dir = workdir / f"latency-{latency_s:g}"
    data_dir.mkdir(parents=True)
    if settings.instance_yaml:
        (data_dir / "dagster_home").mkdir()
        (data_dir / "dagster_home" / "dagster.yaml").write_text(Path(settings.instance_yaml).read_text())
    with LatencyServer(latency_s) as server:
        slate = bench_slate(settings, server.base_url)
        slate_path = data_dir / "slate.yaml"
        slate_path.write_text(yaml.safe_dump(slate, sort_keys=False))
        env = {
            **os.environ,
            env_settings.DATA_DIR.name: str(data_dir),
            env_settings.DAGSTER_HOME.name: str(data_dir / "dagster_home"),
            env_settings.SLATE.name: str(slate_path),
        }
        speech = [f"--subscale={slug}" for slug in settings.speech_subscales] or ["--no-speech"]
        command = [
            sys.executable,
            "-m",
            "eyt_dagster.ops.cli",
            "run",
            *speech,
            *([] if settings.reports else ["--no-reports"]),
            *([] if settings.parallel is None else ["--parallel", str(settings.parallel)]),
        ]
        started = time.monotonic()
        status, stdout, stderr = run_reporting(command, env, _prefixed(progress, f"  [{latency_s:g} s] "))
        wall = time.monotonic() - started
        max_in_flight = server.max_in_flight
        by_model = dict(server.max_in_flight_by_model)
    if status != 0:
        raise RuntimeError(
            f"eyt run failed (exit {status}) at latency {latency_s:g} s:\n{stdout[-3000:]}\n{stderr[-3000:]}"
        )
    if progress is not None:
        progress(f"eyt bench: eyt run at latency {latency_s:g} s took {wall:.1f} s; reading its step times and calls")
    budgets = {m["id"]: m["max_concurrency"] for m in [slate["simulator"], *slate["targets"], *slate["judges"]]}
    rows = ledger_rows(data_dir)
    ideals = stage_ideals(rows, budgets, settings.latency_s)
    walls = step_times(data_dir / "dagster_home")
    at_once = most_runs_at_once(data_dir / "dagster_home")
    result = Measurement(
        latency_s=latency_s,
        total_wall_s=wall,
        max_in_flight=max_in_flight,
        stages={stage: StageFigures() for stage in STAGES},
        max_in_flight_by_model=by_model,
        most_runs_at_once=at_once,
        overlapped_ideal_s=overlapped_ideal(rows, budgets, settings.latency_s) if at_once > 1 else None,
    )
    for (_run, stage), seconds in walls.items():
        result.stages[stage].wall_s += seconds
    for (_run, stage), (calls, ideal) in ideals.items():
        result.stages[stage].calls += calls
        result.stages[stage].ideal_s += ideal
    return result


def latency_part(wall_s: float, wall0_s: float) -> tuple[float, bool]:
    """The part the latency adds to a wall time: (wall time with it - wall time without it, never below 0; whether
    the subtraction was below 0 and so shown as 0). The run without latency stands in for the client's own work, a
    bound the run with latency cannot beat, but it is measured too: a loaded machine or a short row can make it the
    longer of the two, and a negative part would claim the latency saved time."""
    part = wall_s - wall0_s
    return max(0.0, part), part < 0


CLAMPED = "*"
CLAMPED_NOTE = (
    f"{CLAMPED} the run without latency took longer than the run with it: the difference is the two runs' own "
    "variation (the machine's other load, a row of few calls), not a time the latency saved; the latency's part is "
    "below what this pair of runs can measure, shown as 0"
)


def table(slow: Measurement, fast: Measurement | None) -> str:
    """The per-stage table: calls, wall time at each latency, latency part, ideal and the two ratios."""
    lat = f"{slow.latency_s:g}s"
    head = (
        f"{'stage':<24}{'calls':>7}{'wall@' + lat:>11}{'wall@0s':>10}{'lat. part':>11}{'ideal':>9}"
        f"{'part/ideal':>12}{'wall/bound':>12}"
    )
    lines = [head, "-" * len(head)]
    clamped: list[str] = []

    def line(name: str, calls: int, wall: float, wall0: float | None, ideal: float) -> str:
        part, below = latency_part(wall, wall0) if wall0 is not None else (None, False)
        mark = CLAMPED if below else ""
        if below:
            clamped.append(name)
        ratio = f"{part / ideal:.2f}x{mark}" if part is not None and ideal > 0 else "-"
        bound = max(ideal, wall0 or 0.0)
        return (
            f"{name:<24}{calls:>7}{wall:>10.2f}s{(f'{wall0:.2f}s' if wall0 is not None else '-'):>10}"
            f"{(f'{part:.2f}s{mark}' if part is not None else '-'):>11}{ideal:>8.2f}s{ratio:>12}"
            f"{(f'{wall / bound:.2f}x' if bound > 0 else '-'):>12}"
        )

    for stage in STAGES:
        s = slow.stages.get(stage)
        if s is None or (stage == SPEECH_STAGE and not s.calls and not s.wall_s):
            continue  # no SpeechEQ in this run (or a JSON written before it was measured)
        lines.append(
            line(
                stage,
                s.calls,
                s.wall_s,
                fast.stages[stage].wall_s if fast and stage in fast.stages else None,
                s.ideal_s,
            )
        )
    lines.append(
        line(
            "whole (eyt run)",
            slow.total_calls,
            slow.total_wall_s,
            fast.total_wall_s if fast else None,
            slow.total_ideal_s,
        )
    )
    if clamped:
        lines.append(CLAMPED_NOTE)
    return "\n".join(lines)


def _per_model(counts: dict[str, int]) -> str:
    return ", ".join(f"{model.removesuffix('-bench')} {n}" for model, n in sorted(counts.items())) or "-"


def from_json(path: Path) -> tuple[Measurement, Measurement | None]:
    """The measurements an earlier `eyt bench --json` wrote (to print them with this table)."""
    runs = [
        Measurement(
            latency_s=r["latency_s"],
            total_wall_s=r["total_wall_s"],
            max_in_flight=r["max_in_flight"],
            stages={k: StageFigures(**v) for k, v in r["stages"].items()},
            most_runs_at_once=r.get("most_runs_at_once", 0),
            overlapped_ideal_s=r.get("overlapped_ideal_s"),
        )
        for r in json.loads(path.read_text())["runs"]
    ]
    return runs[0], (runs[1] if len(runs) > 1 else None)


def run_bench(
    settings: BenchSettings,
    *,
    zero: bool = True,
    keep: Path | None = None,
    json_out: Path | None = None,
    progress: Progress | None = None,
) -> str:
    """Both measurements and the report text (also written as JSON to json_out when given); `progress` is told what
    the bench is doing as it goes (the run it starts, `eyt run`'s lines, how long each run took)."""
    latencies = [settings.latency_s, *([0.0] if zero else [])]
    with tempfile.TemporaryDirectory(prefix="eyt-bench-") as tmp:
        workdir = keep or Path(tmp)
        found = []
        for n, latency in enumerate(latencies, start=1):
            if progress is not None:
                progress(
                    f"eyt bench: run {n} of {len(latencies)}: eyt run against the bench server at latency {latency:g} s "
                    f"({len(settings.pools)} pool(s) x {settings.dialogues_per_pool} dialogues)"
                )
            found.append(measure(settings, workdir, latency_s=latency, progress=progress))
    slow, fast = found[0], (found[1] if zero else None)
    s = settings
    text = (
        f"eyt bench: {len(s.pools)} pool(s) x {s.dialogues_per_pool} dialogues, t_max {s.t_max}, "
        f"{s.targets} target(s), {s.judges} judge(s), "
        + (f"SpeechEQ subscale(s) {', '.join(s.speech_subscales)} with 1 audio target, " if s.speech_subscales else "")
        + f"max_concurrency {s.max_concurrency}, latency "
        f"{s.latency_s:g} s, --parallel {s.parallel or 'default'} (server held at most {slow.max_in_flight} "
        f"requests at once; most per model: {_per_model(slow.max_in_flight_by_model)}; most target x pool runs "
        f"at once: {slow.most_runs_at_once})\n"
        + table(slow, fast)
        + "\nwall: Dagster step start to end, summed over partitions; ideal: latency x max(waves per endpoint, "
        "longest dependent chain); part/ideal = (wall@L - wall@0) / ideal; wall/bound = wall@L / max(ideal, "
        "wall@0) (docs/throughput.md)"
        + (
            "\nruns overlapped: the whole's ideal is that of the overlapped runs (the endpoint with the most waves "
            "over the run, or the longest chain in one partition run); a stage row sums partitions that shared the "
            "CPU, so read stage rows from a run with --parallel 1"
            if slow.overlapped_ideal_s is not None
            else ""
        )
    )
    if json_out is not None:
        json_out.write_text(
            json.dumps(
                {
                    "settings": {**s.__dict__, "pools": list(s.pools), "speech_subscales": list(s.speech_subscales)},
                    "runs": [
                        {
                            "latency_s": m.latency_s,
                            "total_wall_s": m.total_wall_s,
                            "max_in_flight": m.max_in_flight,
                            "max_in_flight_by_model": m.max_in_flight_by_model,
                            "most_runs_at_once": m.most_runs_at_once,
                            "overlapped_ideal_s": m.overlapped_ideal_s,
                            "stages": {k: v.__dict__ for k, v in m.stages.items()},
                        }
                        for m in (slow, fast)
                        if m
                    ],
                },
                indent=2,
            )
        )
    return text
