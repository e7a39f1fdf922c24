"""The figures of one running step as plain data, and the one line they are written as (the run log, the terminal's
plain lines and its live rows). No benchmark and no I/O here: a step names its own unit of work ("dialogues",
"items", ...), and the recorder that fills the figures is resources/models/run_progress.py (docs/operations.md, "Watching
a run")."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EndpointLoad:
    """One endpoint as a step sees it: requests in flight now against its budget (the model's max_concurrency)."""

    name: str
    in_flight: int
    budget: int


@dataclass(frozen=True)
class StepFigures:
    """What one step has done so far: items done of the total, the step's calls (tokens, cost, retries, 429s,
    failures by kind) and the endpoints it calls. `elapsed_s` counts from the start of the step's loop (its first
    report), so the time the step spends preparing it (reading tables, loading a model) never slows the rate the
    ETA is taken at; `preparing` holds until that first report."""

    unit: str
    done: int
    total: int
    elapsed_s: float
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    rate_limited: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    endpoints: tuple[EndpointLoad, ...] = ()
    # wall seconds per item in past runs of the same step (resources/runs/step_history.py); None: no past run
    expected_item_s: float | None = None
    preparing: bool = False  # the step has not started its loop yet (its first report is still to come)

    @property
    def eta_s(self) -> float | None:
        return eta_seconds(self.done, self.total, self.elapsed_s, self.expected_item_s)


def eta_seconds(done: int, total: int, elapsed_s: float, expected_item_s: float | None = None) -> float | None:
    """The time left: at the step's own rate once an item is done (items done per second since the step started);
    before that, the total at the per-item time of past runs of the step (`expected_item_s`) less the time spent,
    never below 0; None (unknown) with neither; 0 once all are done."""
    if total <= 0 or done >= total:
        return 0.0
    if done > 0 and elapsed_s > 0:
        return (total - done) * elapsed_s / done
    if expected_item_s is not None:
        return max(0.0, total * expected_item_s - max(0.0, elapsed_s))
    return None


def duration_text(seconds: float | None) -> str:
    """'unknown', '45 s', '3 min 20 s', '2 h 05 min'."""
    if seconds is None:
        return "unknown"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def count_text(n: int) -> str:
    """1234 -> '1.2k', 2500000 -> '2.5M'."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def failures_text(failures: dict[str, int]) -> str:
    """'none' or 'timeout 2, http 1' (largest first, then by name)."""
    if not any(failures.values()):
        return "none"
    return ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])) if n)


def endpoints_text(endpoints: tuple[EndpointLoad, ...]) -> str:
    """'model-a @ http://host:8000 3/4, model-b @ ... 0/2', or 'none'."""
    if not endpoints:
        return "none"
    return ", ".join(f"{e.name} {e.in_flight}/{e.budget}" for e in endpoints)


def calls_text(figures: StepFigures) -> str:
    """The step's calls and how many of them the call cache answered: '96 (30 cached)'."""
    return f"{figures.calls} ({figures.cache_hits} cached)"


def figures_text(figures: StepFigures) -> str:
    """The call figures as one ASCII line: 'calls 96 (30 cached), tokens 41.2k, cost $0.0312; retries 3, 429s 2,
    failures: timeout 1; in flight: chat @ http://127.0.0.1:8000 3/4'."""
    f = figures
    return (
        f"calls {calls_text(f)}, tokens {count_text(f.tokens)}, cost ${f.cost_usd:.4f}; "
        f"retries {f.retries}, 429s {f.rate_limited}, failures: {failures_text(f.failures)}; "
        f"in flight: {endpoints_text(f.endpoints)}"
    )


def eta_text(figures: StepFigures) -> str:
    """The time left in words: '3 min 20 s' at the step's own rate once an item is done; before that '~4 min 10 s
    (past runs)' from the per-item time of past runs of the step, 'due (past runs: 4 min 10 s)' once that time is
    spent, or 'after the first one (no past run)'; 'unknown' while the total is."""
    f = figures
    if not f.total:
        return "unknown"
    if f.done > 0 or f.done >= f.total:
        return duration_text(f.eta_s)
    if f.expected_item_s is None:
        return "after the first one (no past run)"
    left = f.eta_s or 0.0
    if left > 0:
        return f"~{duration_text(left)} (past runs)"
    return f"due (past runs: {duration_text(f.total * f.expected_item_s)})"


def items_text(figures: StepFigures) -> str:
    """The items done of the total: '12 of 40 dialogues'; '0 of 40 dialogues (preparing)' while the step prepares
    its loop ('?' for a total the step has not reported yet). What every display of a running step writes."""
    f = figures
    total = str(f.total) if f.total or f.done else "?"
    preparing = " (preparing)" if f.preparing else ""
    return f"{f.done} of {total} {f.unit}{preparing}"


def done_text(figures: StepFigures) -> str:
    """'12 of 40 dialogues, ETA 3 min 20 s'; '0 of 40 dialogues (preparing), ETA ...' while the step prepares its
    loop (items_text, then eta_text)."""
    return f"{items_text(figures)}, ETA {eta_text(figures)}"


def progress_line(figures: StepFigures) -> str:
    """The whole figures as one ASCII line: items done, the time left, then the call figures."""
    return f"{done_text(figures)}; {figures_text(figures)}"
