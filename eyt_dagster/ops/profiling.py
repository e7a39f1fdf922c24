"""CPU profiles of `eyt`'s processes (EYT_PROFILE_DIR) and their CPU seconds by kind of work (bench/cpu_profile.py).

The switch: with EYT_PROFILE_DIR set, the `eyt` command's process and each worker process it starts
(eyt_dagster/ops/launch.py) run under cProfile and write, when they end, `<label>-<pid>.prof` (pstats' format:
`python -m pstats FILE`, snakeviz) and `<label>-<pid>.json` (the process's own CPU seconds, and a worker's start-up
CPU) into that folder. Unset, nothing here runs.

* Every Python thread is profiled, each with a profiler of its own (`threading.setprofile` starts one in each new
  thread), timed by `time.thread_time`: the CPU time of that thread. A clock of the whole process
  (`time.process_time`) would charge the work of the process's other threads to whatever function the profiled
  thread is in; a wall clock would charge the machine's other load and every wait. So the seconds are this
  process's CPU seconds, not its waits. The threads' profiles are added into the process's one file.
* A worker is profiled from the end of its start-up (the import of the code location, measured as one figure,
  `startup_cpu_s`) to its end, so the profile holds the runs; the `eyt` process from the start of its `main`.
* cProfile adds work to every Python function call (two reads of the clock and its bookkeeping), counted in the
  profiled times: about 1.6 us a call on the development machine, more than most calls cost themselves.
  bench/cpu_profile.py takes it off per bucket, in proportion to the bucket's calls, and also offers py-spy, which
  samples from outside and adds nothing to the run's own work (`folded_buckets` below reads its stacks).

The buckets (`bucket_seconds`): every function's own time (pstats' tottime) goes to the first bucket whose rule
matches the function (its file, or a builtin's name); a function of no bucket (the standard library, json, sqlite3,
pandas, pydantic) hands its time on to its callers, in proportion to the time it spent under each, and they to
theirs, up to the nearest function that has a bucket; time that reaches a root without meeting one is `other`. So
sqlite3 called by the call cache counts as the call cache's, called by Dagster's event log as Dagster's. The part of
a function's time spent under an import (importlib's frames above it) goes to `imports` first, whatever its bucket.
pstats keeps only one level of callers per function, so above the first level the split follows each caller's
cumulative time, an approximation where one function is reached by several paths. py-spy's sampled stacks are whole,
so `stack_bucket` needs no such approximation. Standard library only, cheap to import in every worker.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import marshal
import os
import pstats
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

# pstats' key of a function: (file, first line, name); a builtin has file "~" and line 0
Func = tuple[str, int, str]
# pstats' figures of a function: (primitive calls, calls, own seconds, cumulative seconds, {caller: edge figures});
# an edge is (calls, primitive calls, own seconds, cumulative seconds) of the function when called from that caller
Stats = dict[Func, tuple[int, int, float, float, dict[Func, tuple[int, int, float, float]]]]


class ProcessProfile:
    """cProfile over every Python thread of this process, each thread timed by its own CPU clock."""

    def __init__(self, directory: Path, label: str) -> None:
        self.directory = directory
        self.label = label
        self.startup_cpu_s = time.process_time()  # CPU spent before the profile started
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self._main: cProfile.Profile | None = None
        self._dumped = False

    def _new(self) -> cProfile.Profile:
        profile = cProfile.Profile(time.thread_time)
        with self._lock:
            self._profiles.append(profile)
        return profile

    def _thread_started(self, frame: FrameType, event: str, arg: object) -> None:
        """threading's profile hook: its first event in a new thread hands the thread to a profiler of its own."""
        self._new().enable()

    def start(self) -> None:
        self.startup_cpu_s = time.process_time()
        threading.setprofile(self._thread_started)  # threads started from now on
        self._main = self._new()
        self._main.enable()

    def stats(self) -> Stats:
        """The figures so far of every thread's profiler, added up. Another thread's profiler is read as it stands
        (its calls still open are left out) and never disabled from here: cProfile's disable works on the calling
        thread, and would close the other thread's open calls with this thread's clock."""
        if self._main is not None:
            self._main.disable()
        threading.setprofile(None)  # threads started from now on are not profiled
        with self._lock:
            profiles = list(self._profiles)
        total: Stats = {}
        for profile in profiles:
            profile.snapshot_stats()
            merge_stats(total, profile.stats)  # set by snapshot_stats
        return total

    def dump(self) -> Path:
        """Write `<label>-<pid>.prof` and `<label>-<pid>.json` into the folder; the .prof's path. Once."""
        self.directory.mkdir(parents=True, exist_ok=True)
        base = self.directory / f"{self.label}-{os.getpid()}"
        if self._dumped:
            return base.with_suffix(".prof")
        self._dumped = True
        stats = self.stats()
        with base.with_suffix(".prof").open("wb") as out:
            marshal.dump(stats, out)
        facts = {
            "label": self.label,
            "pid": os.getpid(),
            "cpu_s": time.process_time(),  # every thread's, native ones included
            "startup_cpu_s": self.startup_cpu_s,
            "profiled_s": sum(v[2] for v in stats.values()),
            "threads": len(self._profiles),
        }
        base.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
        return base.with_suffix(".prof")


def start_if_asked(label: str) -> ProcessProfile | None:
    """Profile this process from now on when EYT_PROFILE_DIR is set, writing its files when it exits (atexit: a
    worker's `_exit_without_teardown`, registered before, still runs after it); None when unset."""
    from eyt_dagster.core.env_settings import PROFILE_DIR

    directory = PROFILE_DIR.get()
    if directory is None:
        return None
    profile = ProcessProfile(directory.resolve(), label)
    profile.start()
    atexit.register(profile.dump)
    return profile


def merge_stats(total: Stats, more: Mapping[Func, Any]) -> None:
    """Add one profile's figures into `total` (pstats' own rule: counts and seconds add, callers too)."""
    for func, (cc, nc, tt, ct, callers) in more.items():
        if func in total:
            total[func] = pstats.add_func_stats(total[func], (cc, nc, tt, ct, callers))  # type: ignore[attr-defined]
        else:
            total[func] = (cc, nc, tt, ct, dict(callers))


def load_stats(paths: Iterable[Path]) -> Stats:
    """The .prof files added up."""
    total: Stats = {}
    for path in paths:
        with path.open("rb") as f:
            merge_stats(total, marshal.load(f))
    return total


# -- buckets --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """A kind of work: the functions whose file's path contains one of `paths` (with "/" on both sides of a folder,
    so "/site-packages/torch/" is torch's), or whose name (a builtin's, "<built-in method ...>") contains one of
    `builtins`, or whose name is one of `names` in a file of `paths_of_names`."""

    name: str
    meaning: str
    paths: tuple[str, ...] = ()
    builtins: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    paths_of_names: tuple[str, ...] = ()

    def matches(self, func: Func) -> bool:
        file, _, name = func
        if file == "~":
            return any(b in name for b in self.builtins)
        path = file.replace("\\", "/")
        if self.names and name in self.names and any(p in path for p in self.paths_of_names):
            return True
        return any(p in path for p in self.paths)


def _site(*packages: str) -> tuple[str, ...]:
    return tuple(f"/site-packages/{p}/" for p in packages) + tuple(f"/site-packages/{p}.py" for p in packages)


OTHER = "other"

# First match wins. Order matters where rules overlap: the validation functions of chat_client.py before the client.
BUCKETS: tuple[Bucket, ...] = (
    Bucket(
        "imports",
        "module code run at import (a worker's start-up is apart: `startup_cpu_s`), the import machinery",
        paths=("<frozen importlib", "<frozen zipimport"),
        builtins=("_imp.", "builtins.__import__"),
        names=("<module>",),
        paths_of_names=("/",),
    ),
    Bucket(
        "embeddings",
        "sentence encoders (ONNX Runtime, sentence-transformers, torch, tokenizers), the intent queue",
        paths=(
            "/resources/text/embedding",
            "/resources/text/onnx_",
            "/resources/text/model_files.py",
            "/resources/text/use_encoder.py",
            "/resources/text/encoding_lock.py",
            "/intent_similarity.py",
            *_site("onnxruntime", "sentence_transformers", "transformers", "tokenizers", "torch", "safetensors"),
            *_site("huggingface_hub"),
        ),
        builtins=("onnxruntime", "torch.", "torch._C", "tokenizers"),
    ),
    Bucket(
        "simulator audit",
        "the simulator audit's checks (leaks, role flips, repetition)",
        paths=("/simulator_audit.py", "/audit_effect.py"),
    ),
    Bucket(
        "language id",
        "language identification of replies and turns (py3langid)",
        paths=("/resources/text/language_id.py", "/language_consistency.py", *_site("py3langid", "langid")),
    ),
    Bucket(
        "call cache, ledger",
        "the call cache's keys, reads and writes, the ledger, call counters (SQLite or Postgres)",
        paths=(
            "/resources/models/call_cache.py",
            "/resources/models/cache_backend.py",
            "/resources/models/call_counters.py",
            "/resources/models/call_reads.py",
            "/resources/models/postgres_stores.py",
        ),
    ),
    Bucket(
        "JSON schema, validation",
        "reply schemas and the replies' validation (pydantic under them), the bench server's schema draws",
        paths=("/eyt_dagster/ops/json_schema_draw.py", *_site("jsonschema")),
        names=(
            "parse_reply",
            "extract_json_object",
            "strip_thinking",
            "describe_validation_error",
            "json_schema_of",
            "_schema_text",
            "response_format_for",
            "with_schema_instruction",
        ),
        paths_of_names=("/resources/models/chat_client.py",),
    ),
    Bucket(
        "model client",
        "the openai SDK, httpx and the project's chat client and transport, endpoint gates and slots",
        paths=(
            "/resources/models/chat_client.py",
            "/resources/models/chat_transport.py",
            "/resources/models/endpoint_gates.py",
            "/resources/models/endpoint_slots.py",
            "/resources/models/spend_guard.py",
            *_site(
                "openai", "httpx", "httpcore", "httpx2", "httpcore2", "h11", "anyio", "sniffio", "certifi", "distro"
            ),
        ),
    ),
    Bucket(
        "bench server",
        "the localhost server, where it runs in a profiled process",
        paths=("/eyt_dagster/ops/bench_server.py", "/http/server.py", "/socketserver.py"),
    ),
    Bucket(
        "warehouse",
        "Parquet and DuckDB: the warehouse's writes and reads (resources/storage/, pyarrow, duckdb)",
        paths=("/resources/storage/", *_site("pyarrow", "duckdb", "fsspec", "s3fs")),
        builtins=("pyarrow", "duckdb"),
    ),
    Bucket(
        "progress",
        "progress heartbeats and files, the launcher's live table and run watch",
        paths=(
            "/assets/_progress.py",
            "/resources/runs/",
            "/resources/models/run_progress.py",
            "/eyt_dagster/core/progress.py",
            "/eyt_dagster/ops/progress_display.py",
        ),
    ),
    Bucket(
        "Dagster",
        "Dagster: events and their storage, step and run machinery, resources, type checks",
        paths=_site("dagster", "dagster_shared", "dagster_pipes", "dagster_postgres", "dagster_graphql"),
    ),
    Bucket(
        "project: steps",
        "the project's own code otherwise: dialogue loop, roles, prompts, persona sampling, table building",
        paths=("/eyt_dagster/", "/assets/", "/resources/"),
    ),
)


IMPORTS = BUCKETS[0].name


def bucket_of(func: Func, buckets: Sequence[Bucket] = BUCKETS) -> str | None:
    for bucket in buckets:
        if bucket.matches(func):
            return bucket.name
    return None


def _sccs(nodes: Iterable[Func], edges: Callable[[Func], Iterable[Func]]) -> list[list[Func]]:
    """The strongly connected components of a graph (Tarjan's algorithm, with an explicit stack: caller chains are
    deeper than Python's recursion limit), each after every component its edges lead to."""
    index: dict[Func, int] = {}
    low: dict[Func, int] = {}
    on_stack: set[Func] = set()
    stack: list[Func] = []
    out: list[list[Func]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[Func, Iterator[Func]]] = [(root, iter(edges(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out


def caller_shares(
    stats: Mapping[Func, Any], classify: Callable[[Func], str | None], sweeps: int = 500
) -> dict[Func, dict[str, float]]:
    """Per function, the fractions of the time spent in it that go to each bucket: its own bucket's whole, or (a
    function of no bucket) the mean of its callers' fractions weighted by the cumulative time it spent under each;
    no caller with time: `other`. The functions of no bucket are taken in the order of their callers (strongly
    connected components, callers first), so each is known once its callers are; those that call one another in a
    cycle (recursion, a builtin calling back into Python) are solved together by repeated sweeps, until no fraction
    moves by more than 1e-9 (or `sweeps` sweeps)."""
    shares: dict[Func, dict[str, float]] = {}
    own = {func: classify(func) for func in stats}
    for func, name in own.items():
        if name is not None:
            shares[func] = {name: 1.0}

    def edges(func: Func) -> list[tuple[Func, float]]:
        return [(c, float(e[3])) for c, e in stats[func][4].items() if e[3] > 0 and c in stats]

    def mean(func: Func) -> dict[str, float]:
        mixed: dict[str, float] = defaultdict(float)
        total = self_weight = 0.0
        for caller, weight in edges(func):
            if caller == func:  # recursion: x = (w_self x + rest) / W, so x = rest / (W - w_self)
                self_weight += weight
                continue
            known = shares.get(caller)
            if not known:  # not known yet (a member of the same cycle before its first sweep)
                continue
            total += weight
            for name, fraction in known.items():
                mixed[name] += fraction * weight
        return {name: amount / total for name, amount in mixed.items()} if total > 0 else {OTHER: 1.0}

    def unknown_callers(func: Func) -> list[Func]:
        return [c for c, _ in edges(func) if own.get(c) is None]

    for component in _sccs([f for f, name in own.items() if name is None], unknown_callers):
        if len(component) == 1:
            shares[component[0]] = mean(component[0])
            continue
        members = set(component)
        for member in component:  # a start: the callers from outside the cycle only
            outside = {c: w for c, w in edges(member) if c not in members}
            shares[member] = mean(member) if outside else {}
        for _ in range(sweeps):
            moved = 0.0
            for member in reversed(component):
                before, after = shares[member], mean(member)
                shares[member] = after
                moved = max([moved, *(abs(after.get(k, 0.0) - before.get(k, 0.0)) for k in after.keys() | before)])
            if moved < 1e-9:
                break
    return shares


def contributions(
    stats: Mapping[Func, Any], classify: Callable[[Func], str | None] = bucket_of, *, calls: bool = False
) -> Iterator[tuple[Func, str, float]]:
    """(function, bucket, amount): each function's own seconds (with `calls`, its calls) by the bucket they go to. A
    function of no bucket hands its amount on to its callers, split by its own seconds (calls) under each caller,
    which pstats keeps exactly, then by `caller_shares` (see the module's docstring)."""
    shares = caller_shares(stats, classify)
    # the part of each function's time spent under an import, whatever its bucket: `imports`
    importing = caller_shares(stats, _importlib) if classify is bucket_of else {}
    at = 1 if calls else 2  # in a function's figures: calls, own seconds
    under = 0 if calls else 2  # in an edge's figures: the same
    for func, figures in stats.items():
        amount = float(figures[at])
        if not amount:
            continue
        imported = importing.get(func, {}).get(IMPORTS, 0.0)
        if imported:
            yield func, IMPORTS, amount * imported
            amount *= 1.0 - imported
        own = classify(func)
        if own is not None:
            yield func, own, amount
            continue
        callers = figures[4]
        weights = {c: float(e[under]) for c, e in callers.items() if e[under] > 0} or {
            c: float(e[0]) for c, e in callers.items() if e[0] > 0
        }
        total = sum(weights.values())
        if total <= 0:
            yield func, OTHER, amount
            continue
        split: dict[str, float] = defaultdict(float)
        for caller, w in weights.items():
            for name, fraction in shares.get(caller, {OTHER: 1.0}).items():
                split[name] += amount * fraction * w / total
        for name, part in split.items():
            yield func, name, part


def _importlib(func: Func) -> str | None:
    return IMPORTS if func[0].startswith("<frozen importlib") else None


def bucket_seconds(
    stats: Mapping[Func, Any], classify: Callable[[Func], str | None] = bucket_of, *, calls: bool = False
) -> dict[str, float]:
    """Each function's own seconds (with `calls`, its calls) summed by bucket (`contributions`); the buckets add up
    to the total of the seconds (calls)."""
    out: dict[str, float] = defaultdict(float)
    for _func, name, amount in contributions(stats, classify, calls=calls):
        out[name] += amount
    return dict(out)


# -- sampled stacks (py-spy's raw format) ---------------------------------------------------------------------------

STARTUP_IMPORTS = "imports: worker start-up"
_NEAREST = tuple(b for b in BUCKETS if b.name != IMPORTS)
_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def parse_folded(line: str) -> tuple[str, list[Func], float] | None:
    """One line of py-spy's raw output (`record --format raw --subprocesses`): (its process, its frames from the
    thread's first to the running one, its samples); None for a line that is not a stack."""
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not stack or not count.isdigit():
        return None
    process = ""
    if stack.startswith("process "):  # `process <pid>:"<command line>"`, whose command line may hold a ";"
        end = stack.find('";')
        process, stack = (stack, "") if end < 0 else (stack[: end + 1], stack[end + 2 :])
    frames: list[Func] = []
    for part in stack.split(";") if stack else []:
        found = _FRAME.match(part)
        if found is None:
            frames.append(("?", 0, part))
        else:
            frames.append((found["file"], int(found["line"] or 0), found["name"]))
    return process, frames, float(count)


WAITING = "waiting (not CPU)"
# A sampled thread whose running frame is one of these is waiting, for a lock, a queue, a socket, a task or the disk:
# py-spy counts a thread that is runnable (and one in a disk wait), and a thread just woken from such a wait is
# runnable until it gets a core (on a busy machine, a while). (file name, py-spy's qualified function name)
WAITS = frozenset(
    {
        ("threading.py", "Condition.wait"),
        ("threading.py", "Condition.__enter__"),
        ("threading.py", "Event.wait"),
        ("threading.py", "Semaphore.acquire"),
        ("threading.py", "Thread.join"),
        ("threading.py", "Thread._wait_for_tstate_lock"),
        ("thread.py", "_worker"),  # concurrent.futures: an idle pool thread in its queue's get
        ("queue.py", "Queue.get"),
        ("selectors.py", "EpollSelector.select"),
        ("selectors.py", "PollSelector.select"),
        ("connection.py", "wait"),  # multiprocessing: a worker waiting for its next run, `eyt` for its workers
        ("connection.py", "Connection._recv"),
        ("sqlite_files.py", "SharedDatabase.use"),  # the lock of a process's one SQLite connection
        ("_synchronization.py", "ThreadLock.__enter__"),  # httpcore's connection pool lock
        ("sync.py", "SyncStream.read"),  # httpcore: a socket read, waiting for the reply
        ("endpoint_slots.py", "MachineSlots.acquire"),  # an endpoint's flock
        # SQLite's commit and close (Dagster's event log opens a connection per event) wait on the disk: a thread
        # in an fsync is counted too. Their CPU is small (0.3 ms a commit and close under cProfile's CPU clock).
        ("default.py", "DefaultDialect.do_commit"),
        ("default.py", "DefaultDialect.do_close"),
    }
)


def is_wait(frame: Func) -> bool:
    file, _, name = frame
    return (file.rsplit("/", 1)[-1], name) in WAITS


def stack_bucket(frames: Sequence[Func]) -> str:
    """The bucket of a whole stack: `waiting (not CPU)` when its running frame is a wait (WAITS); an import under way
    (importlib's frames anywhere in it) is `imports`, or `imports: worker start-up` under a worker's start
    (eyt_dagster/ops/launch.py `_worker_start`); otherwise the bucket of the frame nearest the running one that has a
    bucket; none: `other`."""
    if frames and is_wait(frames[-1]):
        return WAITING
    if any(file.startswith("<frozen importlib") for file, _, _ in frames):
        if any(name == "_worker_start" and file.endswith("launch.py") for file, _, name in frames):
            return STARTUP_IMPORTS
        return IMPORTS
    for frame in reversed(frames):
        name = bucket_of(frame, _NEAREST)
        if name is not None:
            return name
    return OTHER


def folded_buckets(lines: Iterable[str]) -> dict[str, float]:
    """Samples by bucket (`stack_bucket`) of py-spy's raw output."""
    out: dict[str, float] = defaultdict(float)
    for line in lines:
        parsed = parse_folded(line)
        if parsed is not None:
            out[stack_bucket(parsed[1])] += parsed[2]
    return dict(out)
