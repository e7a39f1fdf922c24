"""Where the CPU of a model call goes: `eyt run` against the bench server at zero latency, profiled, and the CPU
seconds of its processes by kind of work, per model call (docs/throughput.md#where-the-cpu-of-a-call-goes).

Not a test. From the repository root, with the project's virtualenv:

    python bench/cpu_profile.py                          # 2 pools x 16 dialogues, t_max 8, 1 target, 1 judge
    python bench/cpu_profile.py --dialogues 48 --json cpu.json --keep /tmp/cpu
    python bench/cpu_profile.py --profiler cprofile      # cProfile in every process instead of py-spy
    python bench/cpu_profile.py --profiler cprofile --profiles /tmp/cpu/profiled   # the table of a kept run again

The slate is `eyt bench`'s (eyt_dagster/ops/bench.py: simulator, targets and judges on the localhost server, budget
--concurrency each), run as `eyt run --no-speech --no-reports` in a fresh data directory with the server answering
at once: first without a profiler (its CPU is the figure per call), then profiled. The run's model calls are the
call ledger's network rows; its CPU is the kernel's count for `eyt run` and every process under it. The buckets are
eyt_dagster/ops/profiling.py's: where a function's time goes is the bucket of the function itself or of the
nearest caller that has one.

Two profilers:

* py-spy (the default; `pip install py-spy`, or --py-spy PATH; no root needed for a program it starts): samples
  the stacks of every thread of `eyt run` and its workers from outside, 100 times a second, so it adds no work to
  the run's own. It counts a thread that is runnable: running, or waiting for a core. A sample goes to the bucket of
  the frame nearest the running one that has a bucket, or to `imports` when an import is under way anywhere in its
  stack; a sample whose running frame is a wait (a lock, a queue, a socket read: eyt_dagster/ops/profiling.py WAITS)
  is a thread just woken and waiting for a core, and is left out. Each bucket's CPU is its share of the rest times
  the run's CPU (the unprofiled run's). Native threads that are not Python's are not sampled: their CPU is spread
  over the buckets.
* cprofile: EYT_PROFILE_DIR (eyt_dagster/ops/profiling.py), every Python call of every thread counted with the
  thread's CPU clock. It counts calls (how many SQLite statements, Dagster events, JSON dumps), but pays about
  1.6 us of CPU for each, more than most of the calls themselves cost: the seconds of a bucket of many small calls
  are mostly the profiler's. The table takes off the cost per Python call measured as (profiled run's CPU -
  unprofiled run's) / Python calls, in proportion to each bucket's calls: an estimate. Start-up (a worker's import
  of the code location) is measured apart, and a profiled process's CPU that no Python thread's profile holds is
  `outside the profiles`.

The bench server runs in this script's process and is left out: it is not the run's work.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.core import env_settings  # noqa: E402
from eyt_dagster.eyt_bench.taxonomy import PAPER_POOLS  # noqa: E402
from eyt_dagster.ops.bench import PURPOSE_STAGE, BenchSettings, bench_slate, ledger_rows, run_reporting  # noqa: E402
from eyt_dagster.ops.bench_server import LatencyServer  # noqa: E402
from eyt_dagster.ops.profiling import (  # noqa: E402
    BUCKETS,
    OTHER,
    STARTUP_IMPORTS,
    WAITING,
    contributions,
    folded_buckets,
    load_stats,
)

STARTUP_WORKERS = "start-up: workers"
STARTUP_EYT = "start-up: eyt process"
OUTSIDE = "outside the profiles"
NAMES = [b.name for b in BUCKETS] + [OTHER]
ROW_ORDER = [STARTUP_IMPORTS, *NAMES, STARTUP_WORKERS, STARTUP_EYT, OUTSIDE]
FIGURES = "run_figures.json"  # a run's figures, kept in its data directory
EXEC_CPU = "--exec-cpu"  # this script as the program py-spy starts: runs the rest, writes its CPU to a file


@dataclass
class RunFigures:
    """One `eyt run`: its network calls, wall time and the CPU of its processes (the kernel's count)."""

    calls: int
    calls_by_stage: dict[str, int]
    wall_s: float
    cpu_s: float  # user + system of `eyt run` and every process under it
    server_cpu_s: float  # this process's CPU meanwhile: the bench server's threads, and reading the run's output
    dagster_events: int
    dagster_runs: int


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def dagster_events(dagster_home: Path) -> tuple[int, int]:
    """(event log entries, runs) in the instance."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        runs = instance.get_runs()
        return sum(len(instance.all_logs(r.run_id)) for r in runs), len(runs)


def run_once(
    settings: BenchSettings,
    data_dir: Path,
    say: Callable[[str], None],
    *,
    profile_dir: Path | None = None,
    py_spy: tuple[str, int] | None = None,
) -> RunFigures:
    """`eyt run --no-speech --no-reports` on the bench slate at latency 0 in a fresh `data_dir`; with `profile_dir`
    under EYT_PROFILE_DIR, with `py_spy` (its path, samples a second) under py-spy, writing data_dir/stacks.txt."""
    data_dir.mkdir(parents=True)
    with LatencyServer(0.0) as server:
        slate_path = data_dir / "slate.yaml"
        slate_path.write_text(yaml.safe_dump(bench_slate(settings, server.base_url), sort_keys=False))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            env_settings.DATA_DIR.name: str(data_dir),
            env_settings.DAGSTER_HOME.name: str(data_dir / "dagster_home"),
            env_settings.SLATE.name: str(slate_path),
        }
        env.pop(env_settings.PROFILE_DIR.name, None)
        if profile_dir is not None:
            env[env_settings.PROFILE_DIR.name] = str(profile_dir)
        command = [sys.executable, "-m", "eyt_dagster.ops.cli", "run", "--no-speech", "--no-reports"]
        if settings.parallel is not None:
            command += ["--parallel", str(settings.parallel)]
        cpu_file = data_dir / "run_cpu.txt"
        if py_spy is not None:
            spy, rate = py_spy
            record = [spy, "record", "--subprocesses", "--full-filenames", "--nolineno", "--format", "raw"]
            record += ["--rate", str(rate), "--output", str(data_dir / "stacks.txt")]
            command = [*record, "--", sys.executable, __file__, EXEC_CPU, str(cpu_file), "--", *command]
        children, own, started = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF), time.monotonic()
        status, tail, err = run_reporting(command, env, lambda line: say(f"  {line}"))
        wall = time.monotonic() - started
        cpu, server_cpu = _cpu(resource.RUSAGE_CHILDREN) - children, _cpu(resource.RUSAGE_SELF) - own
    if status != 0:
        raise SystemExit(f"eyt run failed (exit {status}):\n{tail[-3000:]}\n{err[-3000:]}")
    if py_spy is not None:  # the kernel's count above holds py-spy's own work too: the run's alone, from inside
        cpu = float(cpu_file.read_text())
    rows = ledger_rows(data_dir)
    stages = Counter(PURPOSE_STAGE.get(r["purpose"].split(":", 1)[0], "other") for r in rows)
    events, runs = dagster_events(data_dir / "dagster_home")
    figures = RunFigures(len(rows), dict(stages), wall, cpu, server_cpu, events, runs)
    (data_dir / FIGURES).write_text(json.dumps(asdict(figures), indent=2) + "\n")
    return figures


def kept_figures(data_dir: Path) -> RunFigures | None:
    """The figures a run kept in its data directory (--keep), if it did."""
    path = data_dir / FIGURES
    return RunFigures(**json.loads(path.read_text())) if path.is_file() else None


def exec_cpu(argv: list[str]) -> int:
    """`--exec-cpu FILE -- COMMAND...`: run COMMAND, write the CPU seconds of it and its processes to FILE."""
    cpu_file, rest = argv[0], argv[2:]
    status = subprocess.run(rest, check=False).returncode
    Path(cpu_file).write_text(f"{_cpu(resource.RUSAGE_CHILDREN)}\n")
    return status


# -- cProfile -------------------------------------------------------------------------------------------------------


@dataclass
class Profiles:
    """A cProfile run's .prof files added up, their (function, bucket) parts, and each process's facts."""

    stats: dict[Any, Any]
    parts: dict[tuple[Any, str], list[float]]  # (function, bucket) -> [own seconds, Python calls]
    processes: list[dict[str, Any]]

    @property
    def python_calls(self) -> float:
        return float(sum(v[1] for v in self.stats.values()))


def read_profiles(profile_dir: Path) -> Profiles:
    stats = load_stats(sorted(profile_dir.glob("*.prof")))
    parts: dict[tuple[Any, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for func, name, amount in contributions(stats):
        parts[(func, name)][0] += amount
    for func, name, amount in contributions(stats, calls=True):
        parts[(func, name)][1] += amount
    processes = [json.loads(p.read_text()) for p in sorted(profile_dir.glob("*.json"))]
    return Profiles(stats, dict(parts), processes)


def profile_rows(profiles: Profiles, overhead_s: float, not_profiled_s: float) -> dict[str, dict[str, float]]:
    """bucket -> {profiled_s, calls (Python calls counted in it), cpu_s (less overhead_s a call)}."""
    rows = {name: {"profiled_s": 0.0, "calls": 0.0, "cpu_s": 0.0} for name in NAMES}
    for (_func, name), (seconds, calls) in profiles.parts.items():
        rows[name]["profiled_s"] += seconds
        rows[name]["calls"] += calls
    for row in rows.values():
        row["cpu_s"] = max(0.0, row["profiled_s"] - overhead_s * row["calls"])
    workers = [p for p in profiles.processes if p["label"] == "worker"]
    eyt = [p for p in profiles.processes if p["label"] == "eyt"]
    rows[STARTUP_WORKERS] = {"profiled_s": 0.0, "calls": 0.0, "cpu_s": sum(p["startup_cpu_s"] for p in workers)}
    rows[STARTUP_EYT] = {"profiled_s": 0.0, "calls": 0.0, "cpu_s": sum(p["startup_cpu_s"] for p in eyt)}
    outside = sum(p["cpu_s"] - p["startup_cpu_s"] - p["profiled_s"] for p in profiles.processes)
    rows[OUTSIDE] = {"profiled_s": 0.0, "calls": 0.0, "cpu_s": max(0.0, outside + not_profiled_s)}
    return rows


def _label(func: Any) -> str:
    file, line, name = func
    return name if file == "~" else f"{_short(file)}:{line}({name})"


def _short(file: str) -> str:
    for marker in ("/site-packages/", str(ROOT) + "/", "/lib/python3"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def top_functions(profiles: Profiles, overhead_s: float, n: int, bucket: str | None = None) -> list[dict[str, Any]]:
    """The n functions of most own CPU (less the profiler's cost) in `bucket` (None: in any; a function of no bucket
    is listed once per bucket its time went to)."""
    found = [
        {
            "function": _label(func),
            "bucket": name,
            "own_s": max(0.0, seconds - overhead_s * calls),
            "profiled_s": seconds,
            "calls": round(calls),
        }
        for (func, name), (seconds, calls) in profiles.parts.items()
        if bucket is None or name == bucket
    ]
    return sorted(found, key=lambda f: -f["own_s"])[:n]


# -- the table ------------------------------------------------------------------------------------------------------


def table(rows: dict[str, dict[str, float]], calls: int, figures: list[tuple[str, float, int]]) -> str:
    """One line per bucket (CPU s, ms per model call, share; samples or profiled seconds and Python calls when the
    rows have them), then the totals in `figures` (label, CPU s, model calls)."""
    sampled = any("samples" in r for r in rows.values())
    extra = f"{'samples':>10}" if sampled else f"{'profiled':>10}{'py calls':>10}"
    head = f"{'bucket':<26}{extra}{'CPU':>9}{'ms/call':>9}{'share':>8}"
    lines = [head, "-" * len(head)]
    total = sum(r["cpu_s"] for r in rows.values())
    for name in [*ROW_ORDER, WAITING]:
        r = rows.get(name)
        if r is None or (sampled and not r["samples"]):
            continue
        if name == WAITING:
            lines.append(f"{name:<26}{r['samples']:>10.0f}{'-':>9}")
            continue
        cells = (
            f"{r['samples']:>10.0f}"
            if sampled
            else f"{r.get('profiled_s', 0.0):>9.2f}s{r.get('calls', 0.0) / 1e6:>9.2f}M"
        )
        lines.append(
            f"{name:<26}{cells}{r['cpu_s']:>8.2f}s{1000 * r['cpu_s'] / max(1, calls):>9.2f}"
            f"{r['cpu_s'] / max(total, 1e-9):>8.1%}"
        )
    lines.append("-" * len(head))
    pad = " " * (len(extra) + 26)
    lines.append(f"{'total of the rows':<26}{pad[26:]}{total:>8.2f}s{1000 * total / max(1, calls):>9.2f}")
    for label, cpu, n in figures:
        lines.append(f"{label:<26}{pad[26:]}{cpu:>8.2f}s{1000 * cpu / max(1, n):>9.2f}  ({n} model calls)")
    return "\n".join(lines)


def find_py_spy(given: str | None) -> str:
    for candidate in (given, shutil.which("py-spy"), str(Path(sys.executable).parent / "py-spy")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise SystemExit("cpu_profile: py-spy not found: `pip install py-spy`, or --py-spy PATH, or --profiler cprofile")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [EXEC_CPU]:
        return exec_cpu(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--pool", action="append", help=f"a fixture pool (repeatable; default {', '.join(PAPER_POOLS)})"
    )
    parser.add_argument("--dialogues", type=int, default=16, help="dialogues_per_pool (16)")
    parser.add_argument("--t-max", type=int, default=8, help="t_max (8)")
    parser.add_argument("--targets", type=int, default=1, help="remote targets (1)")
    parser.add_argument("--judges", type=int, default=1, help="remote judges (1)")
    parser.add_argument("--concurrency", type=int, default=32, help="max_concurrency of every model (32)")
    parser.add_argument("--parallel", type=int, help="eyt run --parallel N (default: eyt run's)")
    parser.add_argument("--profiler", choices=("py-spy", "cprofile"), default="py-spy", help="(py-spy)")
    parser.add_argument("--py-spy", help="the py-spy program (default: on PATH or beside this Python)")
    parser.add_argument("--rate", type=int, default=100, help="py-spy's samples a second (100)")
    parser.add_argument("--no-unprofiled", action="store_true", help="skip the run without a profiler")
    parser.add_argument("--keep", help="keep the data dirs and profiles under this directory (must not exist)")
    parser.add_argument(
        "--profiles", metavar="DIR", help="no run: the table of the profiled run kept in DIR (<--keep>/profiled)"
    )
    parser.add_argument("--overhead-us", type=float, help="cprofile: its cost per Python call to take off")
    parser.add_argument("--top", type=int, default=25, help="cprofile: functions of most own CPU to list (25)")
    parser.add_argument("--detail", type=int, default=0, metavar="N", help="cprofile: N first functions a bucket")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)

    def say(line: str) -> None:
        print(line, flush=True)

    settings = BenchSettings(
        latency_s=0.0,
        pools=tuple(args.pool or PAPER_POOLS),
        dialogues_per_pool=args.dialogues,
        t_max=args.t_max,
        targets=args.targets,
        judges=args.judges,
        max_concurrency=args.concurrency,
        parallel=args.parallel,
    )
    sampled = args.profiler == "py-spy"
    py_spy = (find_py_spy(args.py_spy), args.rate) if sampled and not args.profiles else None
    unprofiled: RunFigures | None = None
    profiled: RunFigures | None = None
    out: dict[str, Any] = {"settings": {**asdict(settings), "pools": list(settings.pools)}, "profiler": args.profiler}
    with tempfile.TemporaryDirectory(prefix="eyt-cpu-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        profiled_dir = Path(args.profiles) if args.profiles else work / "profiled"
        if args.profiles:
            profiled = kept_figures(profiled_dir)
            unprofiled = None if args.no_unprofiled else kept_figures(profiled_dir.parent / "unprofiled")
        else:
            shape = (
                f"{len(settings.pools)} pool(s) x {settings.dialogues_per_pool} dialogues, t_max {settings.t_max}, "
                f"{settings.targets} target(s), {settings.judges} judge(s), budget {settings.max_concurrency}"
            )
            if not args.no_unprofiled:
                say(f"cpu_profile: eyt run without a profiler ({shape})")
                unprofiled = run_once(settings, work / "unprofiled", say)
            say(f"cpu_profile: eyt run under {args.profiler} ({shape})")
            profiled = run_once(
                settings, profiled_dir, say, profile_dir=None if sampled else profiled_dir / "profiles", py_spy=py_spy
            )
        calls = profiled.calls if profiled else len(ledger_rows(profiled_dir))
        if sampled:
            with (profiled_dir / "stacks.txt").open(encoding="utf-8") as stacks:
                samples = folded_buckets(stacks)
        else:
            profiles = read_profiles(profiled_dir / "profiles")
    figures = []
    if unprofiled is not None:
        figures.append(("CPU of the run, unprofiled", unprofiled.cpu_s, unprofiled.calls))
    if profiled is not None:
        figures.append((f"CPU of the run, {args.profiler}", profiled.cpu_s, profiled.calls))
        say(
            f"\ncpu_profile: {profiled.calls} model calls "
            f"({', '.join(f'{k} {v}' for k, v in sorted(profiled.calls_by_stage.items()))}); "
            f"{profiled.dagster_runs} Dagster runs, {profiled.dagster_events} Dagster events; wall "
            + (f"{unprofiled.wall_s:.1f} s unprofiled, " if unprofiled else "")
            + f"{profiled.wall_s:.1f} s under {args.profiler}; the bench server used {profiled.server_cpu_s:.2f} s "
            "of CPU (not counted below)"
        )
    if sampled:
        # the unprofiled run's CPU when there is one: py-spy pauses the run to read it, which costs the run a little
        base = unprofiled.cpu_s if unprofiled else profiled.cpu_s if profiled else 0.0
        busy = sum(n for name, n in samples.items() if name != WAITING)
        rows = {
            name: {
                "samples": samples.get(name, 0.0),
                "cpu_s": 0.0 if name == WAITING else base * samples.get(name, 0.0) / max(busy, 1.0),
            }
            for name in [*ROW_ORDER, WAITING]
        }
        say(
            f"cpu_profile: {busy:.0f} samples of running threads, {samples.get(WAITING, 0):.0f} of threads waking from "
            f"a wait (left out); a bucket's CPU is its share of the first x {base:.2f} s"
        )
    else:
        in_profiles = sum(p["cpu_s"] for p in profiles.processes)
        not_profiled = max(0.0, profiled.cpu_s - in_profiles) if profiled else 0.0
        overhead, measured_by = 1.6e-6, "the development machine's figure"
        if args.overhead_us is not None:
            overhead, measured_by = args.overhead_us / 1e6, "--overhead-us"
        elif profiled is not None and unprofiled is not None and unprofiled.calls == profiled.calls:
            overhead = (profiled.cpu_s - unprofiled.cpu_s) / profiles.python_calls
            measured_by = "the profiled run's CPU less the unprofiled run's, per Python call"
        say(f"cpu_profile: the profiler's cost taken off: {overhead * 1e6:.2f} us a Python call ({measured_by})")
        rows = profile_rows(profiles, overhead, not_profiled)
        top = top_functions(profiles, overhead, args.top)
        out.update(
            overhead_s_per_python_call=overhead,
            overhead_measured_by=measured_by,
            python_calls=profiles.python_calls,
            processes=profiles.processes,
            top=top,
            detail={name: top_functions(profiles, overhead, args.detail, name) for name in NAMES if args.detail},
        )
    say(table(rows, calls, figures))
    if not sampled:
        say(f"\n{'own CPU':>9} {'calls':>9}  bucket / function")
        for f in out["top"]:
            say(f"{f['own_s']:>8.2f}s {f['calls']:>9}  {f['bucket']} / {f['function']}")
        for name, functions in out["detail"].items():
            say(f"\n{name}: {rows[name]['cpu_s']:.2f} s")
            for f in functions:
                say(f"{f['own_s']:>8.2f}s {f['calls']:>9}  {f['function']}")
    if args.json:
        out.update(
            calls=calls,
            profiled=asdict(profiled) if profiled else None,
            unprofiled=asdict(unprofiled) if unprofiled else None,
            buckets=rows,
        )
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
