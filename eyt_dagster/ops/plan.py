"""`eyt plan`: the bill before the run. For the selection `eyt run` would make (the same flags), per model and
role: calls, tokens, USD and wall time of the work not already done, each an estimate with a range
(eyt_dagster/core/cost_estimate.py holds the arithmetic; docs/cost.md the method and its limits).

Read-only: the ledger through resources/models/call_reads.py, the warehouse's dialogue_turns files to find the
dialogues already played (a rerun answers them from the call cache, so they cost nothing). No model is called and
nothing is written but the --json file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eyt_dagster.core.cost_actual import ESTIMATE_FILE
from eyt_dagster.core.cost_estimate import (
    RENDERED_BAND,
    ZERO,
    Figure,
    Line,
    PerDialogue,
    fmt,
    per_dialogue_history,
    per_dialogue_rendered,
    per_run_history,
    wall_time,
)
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.slate import Slate

if TYPE_CHECKING:
    import pandas as pd

# EYT-Bench's calls per dialogue of a target x pool cell: ledger role -> the call kinds (purpose prefixes) and, for
# a rendered estimate, the prompt keys each sends and whether it is one call per turn or one per dialogue.
EYT_KINDS: dict[str, tuple[tuple[str, tuple[str, ...], bool], ...]] = {
    "simulator": (("simulate", ("simulator",), True),),
    "target": (("perceive", ("perception",), True), ("respond", ("target",), True)),
    "judge": (("judge_turn", ("judge_turn",), True), ("judge_final", ("judge_final",), False)),
    "simulator_audit": (("simulator_audit", ("simulator",), True),),
}
# A pool's ChatSEEDs (the eyt_pools run): one simulator call per seed, dialogues_per_pool seeds.
SEED_KINDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (("chat_seed", ("seed_generation",), False),)


@dataclass(frozen=True)
class Selection:
    """What `eyt run` would play (eyt_dagster/ops/cli.py `selection`)."""

    targets: list[str]
    pools: list[str]
    speech_targets: list[str]
    voice_targets: list[str]
    speech: bool = True  # False: --no-speech, no SpeechEQ item build either


def _partition(table: str, keys: Mapping[str, str], warehouse: Path) -> pd.DataFrame:
    """One partition's rows of a warehouse table; empty when it has no file (or cannot be read)."""
    import pandas as pd

    from resources.storage.warehouse import read_partition

    try:
        return read_partition(table, dict(keys), path=warehouse)
    except Exception:
        return pd.DataFrame()


def played_dialogues(target: str, pool: str, warehouse: Path) -> int:
    """Dialogues of the cell already in dialogue_turns with no error row: a rerun answers them from the call
    cache. 0 when the table has no file for the cell (or cannot be read)."""
    turns = _partition("dialogue.dialogue_turns", {"target": target, "pool": pool}, warehouse)
    if turns.empty or "seed_id" not in turns:
        return 0
    failed = set(turns.loc[turns["error"].notna(), "seed_id"]) if "error" in turns else set()
    return len(set(turns["seed_id"]) - failed)


def pool_seeds(pool: str, per_pool: int, warehouse: Path) -> tuple[int, int]:
    """A pool's ChatSEEDs: (those already built with no error, which a rerun answers from the call cache; those its
    design plays). The design is `per_pool` (the slate's dialogues_per_pool), fewer when the pool holds fewer
    personas: every row of chat_seeds when it is built, failed ones too, else the rows of persona_pool."""
    seeds = _partition("dialogue.chat_seeds", {"pool": pool}, warehouse)
    if not seeds.empty and "seed_id" in seeds:
        built = int(seeds["error"].isna().sum()) if "error" in seeds else len(seeds)
        return built, min(per_pool, len(seeds))
    personas = _partition("dialogue.persona_pool", {"pool": pool}, warehouse)
    return 0, min(per_pool, len(personas)) if not personas.empty else per_pool


def speech_left(target: str, warehouse: Path) -> float:
    """The share of a SpeechEQ target's evaluation still to do: 1 when slm_choices has no row of it, else its
    error rows' share (a rerun asks again for exactly those; the rest come from the call cache)."""
    choices = _partition("speech.slm_choices", {"target": target}, warehouse)
    if choices.empty:
        return 1.0
    return float(choices["error"].notna().mean()) if "error" in choices else 0.0


def rendered_prompt(keys: Sequence[str], language: str) -> str:
    """The text of the first turn's prompt of these keys: every part rendered with the taxonomy lists; a part that
    needs the conversation (a field only a dialogue fills) counted as its template."""
    from eyt_dagster.eyt_bench.prompts import load_prompts, render

    parts = []
    for key in keys:
        for part, template in load_prompts(language)[key].items():
            try:
                parts.append(render(key, part, language))
            except (KeyError, IndexError, ValueError):
                parts.append(str(template))
    return "\n".join(parts)


def _line(ref: ModelRef, role: str, dialogues: float) -> Line:
    return Line(
        model=ref.id,
        role=role,
        endpoint="" if ref.is_baseline else f"{ref.base_url or ''} {ref.model}",
        max_concurrency=ref.max_concurrency,
        dialogues=dialogues,
        price_in=ref.price_in_per_mtok,
        price_out=ref.price_out_per_mtok,
        embedded=ref.is_baseline,
    )


def estimate(
    slate: Slate,
    selection: Selection,
    history_rows: Sequence[Mapping[str, Any]],
    played: Mapping[tuple[str, str], int],
    seeds: Mapping[str, int] | None = None,
    speech_left: Mapping[str, float] | None = None,
    design: Mapping[str, int] | None = None,
) -> list[Line]:
    """The plan's lines for EYT-Bench: each selected pool's ChatSEEDs less the `seeds` already built, and each
    target x pool cell's ChatSEEDs (`design`, else dialogues_per_pool) less those `played` already, times repeats; every role's model
    gets a line (embedded ones make no calls). A remote SpeechEQ target, with a history of speech_target runs, gets
    one evaluation (its share of `speech_left` still to do) at the figures of a past run (docs/cost.md)."""
    history = per_dialogue_history(history_rows)
    lines: dict[tuple[str, str], Line] = {}
    per_turn = slate.t_max

    def charge(
        ref: ModelRef | None,
        role: str,
        dialogues: float,
        language: str,
        kinds: tuple[tuple[str, tuple[str, ...], bool], ...] | None = None,
    ) -> None:
        if ref is None:
            return
        line = lines.setdefault((ref.id, role), _line(ref, role, 0))
        line.dialogues += dialogues if kinds is None else 0
        if ref.is_baseline or dialogues == 0:
            return
        for kind, keys, each_turn in EYT_KINDS[role] if kinds is None else kinds:
            per: PerDialogue | None = history.get((role, kind))
            if per is None:
                per = per_dialogue_rendered(rendered_prompt(keys, language), per_turn if each_turn else 1)
            line.add(per, dialogues)

    if selection.targets or selection.voice_targets:  # as `eyt run`: the pools only when a target plays them
        for pool in selection.pools:
            to_seed = max(0, (design or {}).get(pool, slate.dialogues_per_pool) - (seeds or {}).get(pool, 0))
            charge(slate.simulator, "simulator", to_seed, slate.pool_language(pool), SEED_KINDS)
    for target_id in selection.targets:
        target = slate.target(target_id)
        for pool in selection.pools:
            # a repeated slate plays each ChatSEED `repeats` times; the dialogues played count the ChatSEEDs done
            planned = (design or {}).get(pool, slate.dialogues_per_pool)
            to_play = max(0, planned - played.get((target_id, pool), 0)) * slate.repeats
            language = slate.pool_language(pool)
            charge(slate.simulator, "simulator", to_play, language)
            charge(target, "target", to_play, language)
            for judge in slate.judges:
                charge(judge, "judge", to_play * slate.judge_repeats, language)
            if slate.replacement_judge is not None:
                charge(slate.replacement_judge, "judge", min(slate.cross_judge_dialogues, to_play), language)
            charge(slate.simulator_audit_model, "simulator_audit", to_play, language)
    by_run = per_run_history([row for row in history_rows if row["role"] == "speech_target"])
    for target_id in selection.speech_targets:
        ref = slate.target(target_id)
        per = by_run.get("speech_target")
        if ref.is_baseline or per is None:
            continue  # a note says so (other_targets)
        share = (speech_left or {}).get(target_id, 1.0)
        line = lines.setdefault((ref.id, "speech_target"), _line(ref, "speech_target", 0))
        line.dialogues += share
        if share:
            line.add(per, share)
    return list(lines.values())


def other_targets(slate: Slate, selection: Selection, estimated_speech: bool = False) -> list[str]:
    """Notes on the work outside EYT-Bench's cells: SpeechEQ's item build and targets and the spoken EYT-Bench's
    targets, free when embedded, not estimated when remote (docs/cost.md#limits)."""
    notes = []
    if selection.speech:  # `eyt run` builds the SpeechEQ items (every subscale, or --subscale's) whatever the targets
        for role in ("generator", "validator", "tone_judge"):
            ref = slate.speech.text_model(role)
            notes.append(
                f"SpeechEQ item {role}: "
                + (f"{ref.id}, a remote model; not estimated by eyt plan" if ref else "embedded template, no calls")
            )
    for benchmark, ids in (("SpeechEQ", selection.speech_targets), ("spoken EYT-Bench", selection.voice_targets)):
        for target_id in ids:
            ref = slate.target(target_id)
            if ref.is_baseline:
                notes.append(f"{benchmark} target {target_id}: embedded baseline, no network calls, costs nothing")
            elif benchmark == "SpeechEQ" and estimated_speech:
                notes.append(f"SpeechEQ target {target_id}: one evaluation at the figures of a past SpeechEQ run")
            else:
                notes.append(
                    f"{benchmark} target {target_id}: a remote model; not estimated by eyt plan (docs/cost.md)"
                )
    return notes


def report(lines: Sequence[Line], notes: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The printed plan and the same figures as JSON data."""
    whole, per_endpoint = wall_time(lines)
    paid = [line for line in lines if not line.embedded]
    total_calls = reduce(Figure.plus, (line.calls for line in paid), ZERO)
    total_usd = reduce(Figure.plus, (cost for cost in (line.usd for line in paid) if cost is not None), ZERO)
    unpriced = sorted({line.model for line in paid if line.usd is None and line.calls.high > 0})
    head = f"{'model':<26} {'role':<16} {'units':>9}  {'calls':<22} {'prompt tokens':<28} {'completion tokens':<26} "
    rows = [head + "USD"]
    for line in lines:
        if line.embedded:
            rows.append(
                f"{line.model:<26} {line.role:<16} {line.dialogues:>9.0f}  embedded baseline: no network calls, $0"
            )
            continue
        completion = fmt(line.tokens_out)
        if line.reasoning_tokens.high > 0:
            completion += f" (reasoning {fmt(line.reasoning_tokens)})"
        cost = line.usd
        money = fmt(cost, 4) if cost is not None else "unpriced"
        source = "+".join(sorted(line.sources)) or "-"
        rows.append(
            f"{line.model:<26} {line.role:<16} {line.dialogues:>9.0f}  {fmt(line.calls):<22} {fmt(line.tokens_in):<28} "
            f"{completion:<26} {money}  ({source})"
        )
    rows.append("")
    if not paid or total_calls.high == 0:
        rows.append("paid calls: none (every model is an embedded baseline, or every dialogue is already played)")
    else:
        rows.append(f"network calls: {fmt(total_calls)}")
        rows.append(
            f"USD: {fmt(total_usd, 4)}" + (f" + unpriced models {unpriced} (no price in the slate)" if unpriced else "")
        )
        for endpoint, seconds in per_endpoint.items():
            budget = min(line.max_concurrency for line in paid if line.endpoint == endpoint)
            rows.append(f"  endpoint {endpoint} (max_concurrency {budget}): {fmt(seconds, 1)} s")
        rows.append(f"wall time (slowest endpoint; endpoints in parallel): {fmt(whole, 1)} s")
    rows += [f"note: {note}" for note in notes]
    rows.append(
        f"ranges: [lowest-highest] per-dialogue figure of the ledger's history (history), or +-{RENDERED_BAND:.0%} "
        "of a rendered first-turn prompt (rendered); docs/cost.md"
    )
    data = {
        "lines": [
            {
                "model": line.model,
                "role": line.role,
                "embedded": line.embedded,
                "dialogues": line.dialogues,
                "calls": line.calls.as_dict(),
                "tokens_in": line.tokens_in.as_dict(),
                "tokens_out": line.tokens_out.as_dict(),
                "reasoning_tokens": line.reasoning_tokens.as_dict(),
                "usd": _usd_data(line),
                "call_seconds": line.call_seconds.as_dict(2),
                "endpoint": line.endpoint,
                "max_concurrency": line.max_concurrency,
                "sources": sorted(line.sources),
            }
            for line in lines
        ],
        "total": {
            "calls": total_calls.as_dict(),
            "usd": total_usd.as_dict(6),
            "unpriced_models": unpriced,
            "wall_time_s": whole.as_dict(2),
            "wall_time_s_per_endpoint": {e: f.as_dict(2) for e, f in per_endpoint.items()},
        },
        "notes": list(notes),
    }
    return "\n".join(rows), data


# The ledger roles whose past calls the plan estimates from.
HISTORY_ROLES = ("simulator", "target", "judge", "simulator_audit", "speech_target")


def plan(
    slate: Slate, selection: Selection, history_rows: Sequence[Mapping[str, Any]], warehouse: Path
) -> tuple[str, dict[str, Any]]:
    """The plan of `selection` on `slate` given the ledger's history rows and the warehouse at `warehouse`."""
    played = {(t, p): played_dialogues(t, p, warehouse) for t in selection.targets for p in selection.pools}
    built_and_design = {p: pool_seeds(p, slate.dialogues_per_pool, warehouse) for p in selection.pools}
    seeds = {p: built for p, (built, _) in built_and_design.items()}
    design = {p: planned for p, (_, planned) in built_and_design.items()}
    left = {t: speech_left(t, warehouse) for t in selection.speech_targets if not slate.target(t).is_baseline}
    lines = estimate(slate, selection, history_rows, played, seeds, left, design)
    with_history = any(row["role"] == "speech_target" for row in history_rows)
    text, data = report(lines, other_targets(slate, selection, with_history))
    data["played"] = {f"{t}|{p}": n for (t, p), n in played.items()}
    data["design"] = design
    data["seeds_built"] = seeds
    return text, data


def _usd_data(line: Line) -> dict[str, float] | str:
    cost = line.usd
    return cost.as_dict(6) if cost is not None else "unpriced"


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def save_estimate(data_dir: Path, data: Mapping[str, Any], ledger_last_id: int, *, sequential: bool) -> Path:
    """Write a command's plan (`plan`'s data) with the ledger id its calls come after, atomically."""
    path = data_dir / ESTIMATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        **data,
        "ledger_last_id": ledger_last_id,
        "estimated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "sequential": sequential,
    }
    tmp = path.with_suffix(".tmp")
    write_json(tmp, record)
    tmp.replace(path)
    return path
