"""The bill before a run (`eyt plan`): calls, tokens, USD and wall time of the work a run would do, each as an
estimate with a range. Pure arithmetic over plain data (ledger rows as dicts, numbers from the slate); the reading
is in eyt_dagster/ops/plan.py and the method in docs/cost.md.

Two sources of an estimate, per (role, call kind):
- history: the ledger's earlier calls of the same role and kind (any model). Each row is grouped into a unit: one
  dialogue of one model when its purpose names the ChatSEED (`simulate:<seed>:<turn>`, `judge_turn:<seed>:<turn>`,
  `judge_final:<seed>`, `chat_seed:<seed>`), else one run of one model (`perceive:<turn>`, `respond:<turn>`), whose dialogues are its
  `respond:1` calls. The estimate per dialogue is the pooled mean (all calls / all dialogues); its range the lowest and highest
  per-dialogue figure of any unit. Times the dialogues the plan would play.
- rendered prompts: the prompt the role would send, its tokens approximated as ceil(characters / 4), a fixed
  completion length, and one call per turn for t_max turns; the range a stated relative band (RENDERED_BAND).

SpeechEQ's item build is counted per scenario instead of per dialogue (`per_item_history`): a unit is one model's
calls in one run for one subscale, and its scenarios are the distinct `speech_scenario:<subscale>:...` purposes of
that run and subscale.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 4  # the approximation of tokens from characters where no ledger history exists
RENDERED_BAND = 0.5  # a rendered-prompt estimate's range: +-50% of the figure
RENDERED_COMPLETION_TOKENS = 150  # a reply's assumed length where no history exists
RENDERED_LATENCY_S = 2.0  # a call's assumed latency where no history exists


@dataclass(frozen=True)
class Figure:
    """An estimate: the middle figure and its range."""

    mid: float
    low: float
    high: float

    def times(self, n: float) -> Figure:
        return Figure(self.mid * n, self.low * n, self.high * n)

    def plus(self, other: Figure) -> Figure:
        return Figure(self.mid + other.mid, self.low + other.low, self.high + other.high)

    def as_dict(self, digits: int = 4) -> dict[str, float]:
        return {"mid": round(self.mid, digits), "low": round(self.low, digits), "high": round(self.high, digits)}


ZERO = Figure(0.0, 0.0, 0.0)


def band(mid: float, relative: float = RENDERED_BAND) -> Figure:
    """`mid` with a relative range of +-`relative`."""
    return Figure(mid, mid * (1 - relative), mid * (1 + relative))


def approx_tokens(text: str) -> int:
    """Tokens of `text` approximated as ceil(characters / CHARS_PER_TOKEN) (about right for English BPE)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def call_kind(purpose: str) -> str:
    """The kind of a ledger call: its purpose up to the first ':' (`respond:3` -> `respond`)."""
    return purpose.split(":", 1)[0]


# Call kinds whose purpose names the ChatSEED: `<kind>:<seed>:<turn>`, or `<kind>:<seed>` (the seed id may hold ':').
_SEED_AND_TURN = frozenset({"simulate", "judge_turn", "simulator_audit"})
_SEED_ONLY = frozenset({"judge_final", "chat_seed"})


def _dialogue_of(purpose: str) -> str | None:
    kind, _, rest = purpose.partition(":")
    if kind in _SEED_AND_TURN and ":" in rest:
        return rest.rsplit(":", 1)[0]
    if kind in _SEED_ONLY and rest:
        return rest
    return None


@dataclass(frozen=True)
class PerDialogue:
    """Per dialogue of one (role, kind): calls, prompt, completion and reasoning tokens, and the mean latency of a
    network call; `units` the dialogues (or runs) they were measured on, `source` history or rendered."""

    calls: Figure
    tokens_in: Figure
    tokens_out: Figure
    reasoning_tokens: Figure
    latency_s: float
    units: int
    source: str


def per_dialogue_history(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], PerDialogue]:
    """(role, kind) -> its per-dialogue figures from ledger rows (role, model_id, purpose, run_id, tokens_in,
    tokens_out, reasoning_tokens, latency_s, cached). A unit is one model's calls in one run for one ChatSEED (two
    judges of a dialogue are two units); rows without a ChatSEED make one unit per run and model, whose dialogues
    are its `respond:1` calls; such a unit with none of them (its dialogues unknown) is left out."""
    rows = list(rows)
    dialogues_in_run: dict[Any, int] = defaultdict(int)
    for row in rows:
        if row["purpose"] == "respond:1":
            dialogues_in_run[(row.get("run_id"), row.get("model_id"))] += 1

    def unit_of(row: Mapping[str, Any]) -> tuple[Any, int]:
        seed = _dialogue_of(str(row["purpose"]))
        run = (row.get("run_id"), row.get("model_id"))
        return (run, seed), 1 if seed is not None else dialogues_in_run.get(run, 0)

    return _pooled(rows, unit_of)


# The call kind every SpeechEQ scenario makes once (`speech_scenario:<subscale>:<valence>:<index>`): its distinct
# purposes in a run count that run's scenarios of the subscale.
SCENARIO_KIND = "speech_scenario"


def _subscale_of(purpose: str) -> str:
    """The subscale a SpeechEQ build call names: `speech_<kind>:<subscale>:...`."""
    parts = purpose.split(":")
    return parts[1] if len(parts) > 1 else ""


def per_item_history(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], PerDialogue]:
    """(role, kind) -> its figures per SpeechEQ scenario from the ledger rows of the item build (roles
    speech_generator, speech_validator, speech_tone_judge). A unit is one model's calls in one run for one subscale;
    its scenarios are the distinct `speech_scenario` purposes of that run and subscale (any model); a unit of a run
    and subscale with none (a run that built only later stages) is left out. Pooled mean and lowest / highest unit
    per scenario, as per_dialogue_history."""
    rows = list(rows)
    scenarios: dict[Any, set[str]] = defaultdict(set)
    for row in rows:
        purpose = str(row["purpose"])
        if call_kind(purpose) == SCENARIO_KIND:
            scenarios[(row.get("run_id"), _subscale_of(purpose))].add(purpose)

    def unit_of(row: Mapping[str, Any]) -> tuple[Any, int]:
        subscale = _subscale_of(str(row["purpose"]))
        return (row.get("run_id"), row.get("model_id"), subscale), len(scenarios.get((row.get("run_id"), subscale), ()))

    return _pooled(rows, unit_of)


def _pooled(
    rows: Sequence[Mapping[str, Any]], unit_of: Callable[[Mapping[str, Any]], tuple[Any, int]]
) -> dict[tuple[str, str], PerDialogue]:
    """(role, kind) -> figures per item: `unit_of(row)` gives a row's unit and the items (dialogues, scenarios) that
    unit holds (0: left out). The pooled mean (all calls or tokens / all items) and the lowest and highest per-item
    figure of any unit."""
    units: dict[tuple[str, str], dict[Any, list[float]]] = defaultdict(dict)
    latency: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        key = (str(row["role"]), call_kind(str(row["purpose"])))
        unit, n = unit_of(row)
        if n == 0:
            continue
        sums = units[key].setdefault(unit, [0.0, 0.0, 0.0, 0.0, float(n)])
        sums[0] += 1
        sums[1] += row.get("tokens_in") or 0
        sums[2] += row.get("tokens_out") or 0
        sums[3] += row.get("reasoning_tokens") or 0
        if not row.get("cached"):
            latency[key].append(float(row.get("latency_s") or 0.0))
    result = {}
    for key, by_unit in units.items():
        values = list(by_unit.values())
        items = sum(v[4] for v in values)
        figures = [
            Figure(
                sum(v[i] for v in values) / items, min(v[i] / v[4] for v in values), max(v[i] / v[4] for v in values)
            )
            for i in range(4)
        ]
        result[key] = _from_history(figures, latency.get(key, []), len(values))
    return result


def _from_history(figures: Sequence[Figure], times: Sequence[float], units: int) -> PerDialogue:
    """Calls, prompt, completion and reasoning tokens (in that order) and the uncached calls' latencies of `units`
    units of history."""
    return PerDialogue(
        calls=figures[0],
        tokens_in=figures[1],
        tokens_out=figures[2],
        reasoning_tokens=figures[3],
        latency_s=sum(times) / len(times) if times else 0.0,
        units=units,
        source="history",
    )


def per_run_history(rows: Iterable[Mapping[str, Any]]) -> dict[str, PerDialogue]:
    """role -> its figures per run from ledger rows: one unit per run and model (a SpeechEQ target's evaluation of
    every built item is one run); the pooled mean per run and the lowest and highest run."""
    units: dict[str, dict[Any, list[float]]] = defaultdict(dict)
    latency: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        role = str(row["role"])
        sums = units[role].setdefault((row.get("run_id"), row.get("model_id")), [0.0, 0.0, 0.0, 0.0])
        sums[0] += 1
        sums[1] += row.get("tokens_in") or 0
        sums[2] += row.get("tokens_out") or 0
        sums[3] += row.get("reasoning_tokens") or 0
        if not row.get("cached"):
            latency[role].append(float(row.get("latency_s") or 0.0))
    result = {}
    for role, by_unit in units.items():
        values = list(by_unit.values())
        figures = [
            Figure(sum(v[i] for v in values) / len(values), min(v[i] for v in values), max(v[i] for v in values))
            for i in range(4)
        ]
        result[role] = _from_history(figures, latency.get(role, []), len(values))
    return result


def per_dialogue_rendered(prompt: str, calls_per_dialogue: float) -> PerDialogue:
    """Per dialogue of a role with no history: `calls_per_dialogue` calls (t_max for a per-turn role, 1 for a final
    verdict) of `prompt`'s approximate tokens and RENDERED_COMPLETION_TOKENS each, a +-RENDERED_BAND range. The
    prompt is the first turn's: later turns carry the conversation so far, which this leaves out."""
    return PerDialogue(
        calls=band(calls_per_dialogue),
        tokens_in=band(approx_tokens(prompt) * calls_per_dialogue),
        tokens_out=band(RENDERED_COMPLETION_TOKENS * calls_per_dialogue),
        reasoning_tokens=ZERO,
        latency_s=RENDERED_LATENCY_S,
        units=0,
        source="rendered",
    )


def usd(tokens_in: Figure, tokens_out: Figure, price_in: float, price_out: float) -> Figure | None:
    """The cost at prices in USD per million tokens; None when the model has no prices (unpriced)."""
    if price_in == 0 and price_out == 0:
        return None
    return tokens_in.times(price_in / 1e6).plus(tokens_out.times(price_out / 1e6))


@dataclass
class Line:
    """One model in one role: what the plan would cost there."""

    model: str
    role: str
    endpoint: str  # base_url + model name: calls to one endpoint share its budget; "" for an embedded baseline
    max_concurrency: int
    dialogues: float
    calls: Figure = ZERO
    tokens_in: Figure = ZERO
    tokens_out: Figure = ZERO
    reasoning_tokens: Figure = ZERO
    price_in: float = 0.0  # USD per million prompt tokens
    price_out: float = 0.0  # USD per million completion tokens
    embedded: bool = False
    call_seconds: Figure = ZERO  # calls x latency, per call kind: the time its calls take one after another
    sources: set[str] = field(default_factory=set)

    def add(self, per: PerDialogue, dialogues: float) -> None:
        self.calls = self.calls.plus(per.calls.times(dialogues))
        self.tokens_in = self.tokens_in.plus(per.tokens_in.times(dialogues))
        self.tokens_out = self.tokens_out.plus(per.tokens_out.times(dialogues))
        self.reasoning_tokens = self.reasoning_tokens.plus(per.reasoning_tokens.times(dialogues))
        self.call_seconds = self.call_seconds.plus(per.calls.times(dialogues * per.latency_s))
        self.sources.add(per.source)

    @property
    def usd(self) -> Figure | None:
        """The cost at the model's prices; None for a remote model without prices (unpriced); 0 when embedded."""
        if self.embedded:
            return ZERO
        return usd(self.tokens_in, self.tokens_out, self.price_in, self.price_out)


def wall_time(lines: Sequence[Line]) -> tuple[Figure, dict[str, Figure]]:
    """The critical path: per endpoint, its calls x latency / max_concurrency; endpoints run in parallel, so the
    whole is the slowest endpoint. Returns (whole, per endpoint)."""
    per: dict[str, Figure] = {}
    budget: dict[str, int] = {}
    for line in lines:
        if line.embedded:
            continue
        per[line.endpoint] = per.get(line.endpoint, ZERO).plus(line.call_seconds)
        budget[line.endpoint] = min(budget.get(line.endpoint, line.max_concurrency), line.max_concurrency)
    per = {e: f.times(1 / budget[e]) for e, f in per.items()}
    if not per:
        return ZERO, per
    return Figure(*(max(getattr(f, part) for f in per.values()) for part in ("mid", "low", "high"))), per


def fmt(figure: Figure, digits: int = 0) -> str:
    """`mid [low-high]`; an exact figure (low == high) without its range."""

    def one(value: float) -> str:
        return f"{value:,.{digits}f}"

    if figure.low == figure.high:
        return one(figure.mid)
    return f"{one(figure.mid)} [{one(figure.low)}-{one(figure.high)}]"
