"""`eyt plan`: the bill before the run. For the selection `eyt run` would make (the same flags), or with `--refresh`
for what `eyt refresh` would run, per model and role: calls, tokens, USD and wall time of the work not already
done, each an estimate with a range (eyt_dagster/core/cost_estimate.py holds the arithmetic; docs/cost.md the
method and its limits).

Read-only: the ledger through resources/models/call_reads.py, the warehouse's files for what is already done
(eyt_dagster/ops/plan_done.py; a rerun answers it from the call cache, so it costs nothing) and, with --refresh,
the Dagster instance's records (eyt_dagster/ops/plan_refresh.py). No model is called and nothing is written but
the --json file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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
    per_item_history,
    per_run_history,
    wall_time,
)
from eyt_dagster.core.model_ref import ModelRef
from eyt_dagster.ops.plan_done import Done, speech_scenarios, warehouse_done
from eyt_dagster.ops.plan_done import Selection as Selection  # `eyt plan`'s selection, named here too
from eyt_dagster.slate import Slate
from eyt_dagster.speech_eq.settings import SpeechTextRole
from eyt_dagster.speech_eq.vocabulary import CONTEXT_TURNS, TEST_TURNS

if TYPE_CHECKING:
    from eyt_dagster.ops.plan_refresh import RefreshFindings

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
# The spoken EYT-Bench's prosody probe: one more perception of a voiced user turn whose gold emotion is not neutral.
PROBE_KINDS: tuple[tuple[str, tuple[str, ...], bool], ...] = (("perceive", ("perception",), True),)

# SpeechEQ's item build, per scenario: the slate's text role -> its ledger role and the call kinds it makes, each
# with its prompt key and the calls one scenario makes when nothing is asked twice. A scenario has one tone slot per
# context turn and three per test turn (the resonant persona and its two dissonant ones).
TONE_SLOTS = len(CONTEXT_TURNS) + 3 * len(TEST_TURNS)
SPEECH_KINDS: dict[SpeechTextRole, tuple[str, tuple[tuple[str, int], ...]]] = {
    "generator": ("speech_generator", (("speech_scenario", 1), ("speech_dialogue", 1), ("speech_tone", TONE_SLOTS))),
    "validator": ("speech_validator", (("speech_dialogue_check", 1),)),
    "tone_judge": ("speech_tone_judge", (("speech_tone_selection", len(TEST_TURNS)),)),
}


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


def speech_prompt(key: str, language: str) -> str:
    """The system and user text of one SpeechEQ build prompt as templates (they need the scenario, its dialogue or
    its tone options, which only the build fills in)."""
    from eyt_dagster.core.prompts import load_prompts
    from eyt_dagster.speech_eq.prompts import SPEECH_PROMPT_KEYS, speech_prompts_path

    prompt = load_prompts(speech_prompts_path(language), SPEECH_PROMPT_KEYS)[key]
    return "\n".join(str(prompt.get(part, "")) for part in ("system", "user"))


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
    *,
    built: Mapping[str, Mapping[str, int]] | None = None,
    voiced: Mapping[tuple[str, str], tuple[int, int]] | None = None,
    rejudge: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    probe_share: float = 1.0,
) -> list[Line]:
    """The plan's lines (docs/cost.md): each selected pool's ChatSEEDs less the `seeds` already built; each target x
    pool cell's ChatSEEDs (`design`, else dialogues_per_pool) less those `played` already, times repeats, and the
    dialogues of a cell judged again without being played (`rejudge`); the SpeechEQ item build of each selected
    subscale less the scenarios `built` per call kind; each spoken EYT-Bench cell's ChatSEEDs, heard and read, less
    those `voiced` already, as text dialogues of the same call shape, with the prosody probe's perceptions
    (`probe_share` of the voiced turns); and a remote SpeechEQ target, with a history of speech_target runs, one
    evaluation (its share of `speech_left` still to do) at the figures of a past run. Every role's model gets a line
    (embedded ones make no calls)."""
    history = per_dialogue_history(row for row in history_rows if row["role"] in EYT_KINDS)
    lines: dict[tuple[str, str], Line] = {}
    per_turn = slate.t_max
    design = design or {}

    def charge(
        ref: ModelRef | None,
        role: str,
        dialogues: float,
        language: str,
        kinds: tuple[tuple[str, tuple[str, ...], bool], ...] | None = None,
        units: float | None = None,
    ) -> None:
        """`dialogues` of `role`'s call kinds (all of them, or `kinds`) on `ref`'s line; its units column counts
        `units`, else the dialogues (none for a ChatSEED or a probe: their calls are not dialogues)."""
        if ref is None:
            return
        line = lines.setdefault((ref.id, role), _line(ref, role, 0))
        line.dialogues += units if units is not None else dialogues if kinds is None else 0
        if ref.is_baseline or dialogues == 0:
            return
        for kind, keys, each_turn in EYT_KINDS[role] if kinds is None else kinds:
            per: PerDialogue | None = history.get((role, kind))
            if per is None:
                per = per_dialogue_rendered(rendered_prompt(keys, language), per_turn if each_turn else 1)
            line.add(per, dialogues)

    def only(role: str, *names: str) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
        return tuple(k for k in EYT_KINDS[role] if k[0] in names)

    if selection.targets or selection.voice_targets:  # as `eyt run`: the pools only when a target plays them
        for pool in selection.pools:
            to_seed = max(0, design.get(pool, slate.dialogues_per_pool) - (seeds or {}).get(pool, 0))
            charge(slate.simulator, "simulator", to_seed, slate.pool_language(pool), SEED_KINDS)
    for target_id in selection.targets:
        target = slate.target(target_id)
        for pool in selection.pools:
            # a repeated slate plays each ChatSEED `repeats` times; the dialogues played count the ChatSEEDs done
            planned = design.get(pool, slate.dialogues_per_pool)
            to_play = max(0, planned - played.get((target_id, pool), 0)) * slate.repeats
            language = slate.pool_language(pool)
            charge(slate.simulator, "simulator", to_play, language)
            charge(target, "target", to_play, language)
            for judge in slate.judges:
                charge(judge, "judge", to_play * slate.judge_repeats, language)
            if slate.replacement_judge is not None:
                charge(slate.replacement_judge, "judge", min(slate.cross_judge_dialogues, to_play), language)
            charge(slate.simulator_audit_model, "simulator_audit", to_play, language)
            again = (rejudge or {}).get((target_id, pool), {})  # judged (audited) again, not played again
            for kind in ("judge_turn", "judge_final"):
                for judge in slate.judges:
                    n = again.get(kind, 0) * slate.repeats * slate.judge_repeats
                    counted = kind == "judge_turn" or not again.get("judge_turn")  # a dialogue's units once
                    charge(judge, "judge", n, language, only("judge", kind), units=n if counted else 0)
            audit = again.get("simulator_audit", 0) * slate.repeats
            charge(slate.simulator_audit_model, "simulator_audit", audit, language)
    for target_id in selection.voice_targets:  # the spoken EYT-Bench: text dialogues' call shape, heard and read
        ref = slate.target(target_id)
        shared = target_id in selection.targets  # its text control sends its EYT-Bench cell's requests: cached
        for pool in (p for p in selection.pools if p in slate.voice_pools_of(target_id)):
            seeds_n = min(slate.voice.dialogues_per_pool, design.get(pool, slate.dialogues_per_pool))
            heard, read = (voiced or {}).get((target_id, pool), (0, 0))
            to_hear, to_read = max(0, seeds_n - heard), 0 if shared else max(0, seeds_n - read)
            language = slate.pool_language(pool)
            for n in (to_hear, to_read):
                charge(slate.simulator, "simulator", n, language)
                charge(ref, "target", n, language)
                for judge in slate.judges:
                    charge(judge, "judge", n, language)
            charge(ref, "target", to_hear * probe_share, language, PROBE_KINDS)
    _speech_build(slate, selection, built or {}, history_rows, lines)
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


def _speech_build(
    slate: Slate,
    selection: Selection,
    built: Mapping[str, Mapping[str, int]],
    history_rows: Sequence[Mapping[str, Any]],
    lines: dict[tuple[str, str], Line],
) -> None:
    """SpeechEQ's item build of each selected subscale (`eyt run` builds them whatever the targets): per scenario not
    yet `built` (per call kind), each remote text role's calls, from the ledger's history of the build
    (per_item_history, any model) or from its prompt templates (calls per scenario as SPEECH_KINDS)."""
    if not selection.speech:
        return
    ledger_roles = {ledger_role for ledger_role, _ in SPEECH_KINDS.values()}
    history = per_item_history(row for row in history_rows if row["role"] in ledger_roles)
    scenarios, language = speech_scenarios(slate), slate.speech.language
    for role, (ledger_role, kinds) in SPEECH_KINDS.items():
        ref = slate.speech.text_model(role)
        if ref is None:
            continue  # the embedded template: a note says so (other_targets)
        line = lines.setdefault((ref.id, ledger_role), _line(ref, ledger_role, 0))
        for subscale in selection.subscales:
            todo = {kind: max(0, scenarios - built.get(subscale, {}).get(kind, 0)) for kind, _ in kinds}
            line.dialogues += max(todo.values())
            for kind, calls in kinds:
                if todo[kind]:
                    per = history.get((ledger_role, kind)) or per_dialogue_rendered(
                        speech_prompt(kind, language), calls
                    )
                    line.add(per, todo[kind])


def other_targets(slate: Slate, selection: Selection, estimated_speech: bool = False) -> list[str]:
    """Notes on what the lines leave out or count in a particular way (docs/cost.md#limits): the embedded SpeechEQ
    text roles, a remote TTS endpoint (not in the ledger), SpeechEQ targets (free when embedded, estimated only from a
    past SpeechEQ run) and the spoken EYT-Bench's targets (an audio target's clips are not in its token figures)."""
    notes = []
    speech = slate.speech
    if selection.speech:  # `eyt run` builds the SpeechEQ items (every subscale, or --subscale's) whatever the targets
        for role in SPEECH_KINDS:
            if speech.text_model(role) is None:
                notes.append(f"SpeechEQ item {role}: embedded template, no calls")
        if speech.source == "released":
            notes.append("SpeechEQ items come from the released layout: no text model is called to build them")
        if speech.tts is not None and not speech.tts.is_baseline:
            notes.append(f"SpeechEQ TTS {speech.tts.id}: a remote speech endpoint, not in the ledger; not estimated")
    for target_id in selection.speech_targets:
        ref = slate.target(target_id)
        if ref.is_baseline:
            notes.append(f"SpeechEQ target {target_id}: embedded baseline, no network calls, costs nothing")
        elif estimated_speech:
            notes.append(f"SpeechEQ target {target_id}: one evaluation at the figures of a past SpeechEQ run")
        else:
            notes.append(
                f"SpeechEQ target {target_id}: a remote model with no SpeechEQ run in the ledger; not estimated "
                "(docs/cost.md)"
            )
    for target_id in selection.voice_targets:
        ref = slate.target(target_id)
        if ref.is_baseline:
            notes.append(
                f"spoken EYT-Bench target {target_id}: embedded baseline, no network calls of its own (its cells' "
                "simulator and judge calls are in their lines)"
            )
        elif ref.speech_input == "audio":
            notes.append(
                f"spoken EYT-Bench target {target_id} hears audio: its calls are counted as a text target's, whose "
                "prompt tokens leave out the clips' audio tokens"
                + (" and whose completions leave out the spoken reply's" if ref.audio_out is not None else "")
                + ": its tokens and USD are a lower bound"
            )
        if target_id in selection.targets:
            notes.append(
                f"spoken EYT-Bench target {target_id}: its text control repeats its EYT-Bench cells' requests, "
                "answered from the call cache (not counted)"
            )
    if selection.voice_targets and slate.voice.tts is not None and not slate.voice.tts.is_baseline:
        notes.append(
            f"spoken EYT-Bench TTS {slate.voice.tts.id}: a remote speech endpoint, not in the ledger; not estimated"
        )
    return notes


def report(lines: Sequence[Line], notes: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The printed plan and the same figures as JSON data."""
    whole, per_endpoint = wall_time(lines)
    paid = [line for line in lines if not line.embedded]
    total_calls = reduce(Figure.plus, (line.calls for line in paid), ZERO)
    total_usd = reduce(Figure.plus, (cost for cost in (line.usd for line in paid) if cost is not None), ZERO)
    unpriced = sorted({line.model for line in paid if line.usd is None and line.calls.high > 0})
    head = f"{'model':<26} {'role':<18} {'units':>7}  {'calls':<22} {'prompt tokens':<28} {'completion tokens':<26} "
    rows = [head + "USD"]
    for line in lines:
        if line.embedded:
            rows.append(
                f"{line.model:<26} {line.role:<18} {line.dialogues:>7.0f}  embedded baseline: no network calls, $0"
            )
            continue
        completion = fmt(line.tokens_out)
        if line.reasoning_tokens.high > 0:
            completion += f" (reasoning {fmt(line.reasoning_tokens)})"
        cost = line.usd
        money = fmt(cost, 4) if cost is not None else "unpriced"
        source = "+".join(sorted(line.sources)) or "-"
        rows.append(
            f"{line.model:<26} {line.role:<18} {line.dialogues:>7.0f}  {fmt(line.calls):<22} {fmt(line.tokens_in):<28} "
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
        f"ranges: [lowest-highest] per-dialogue (per-scenario) figure of the ledger's history (history), or "
        f"+-{RENDERED_BAND:.0%} of a rendered first-turn prompt (rendered); docs/cost.md"
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
HISTORY_ROLES = (
    "simulator",
    "target",
    "judge",
    "simulator_audit",
    "speech_target",
    *(ledger_role for ledger_role, _ in SPEECH_KINDS.values()),
)


def plan(
    slate: Slate,
    selection: Selection,
    history_rows: Sequence[Mapping[str, Any]],
    warehouse: Path,
    refresh: RefreshFindings | None = None,
) -> tuple[str, dict[str, Any]]:
    """The plan of `selection` on `slate` given the ledger's history rows and the warehouse at `warehouse`; with
    `refresh`, of what `eyt refresh` would run given those findings (eyt_dagster/ops/plan_refresh.py)."""
    done: Done = warehouse_done(slate, selection, warehouse)
    if refresh is not None:
        from eyt_dagster.ops.plan_refresh import after_refresh

        done = after_refresh(done, refresh, slate)
    lines = estimate(
        slate,
        selection,
        history_rows,
        done.played,
        done.seeds,
        done.speech_left,
        done.design,
        built=done.built,
        voiced=done.voiced,
        rejudge=done.rejudge,
        probe_share=done.probe_share,
    )
    with_history = any(row["role"] == "speech_target" for row in history_rows)
    text, data = report(lines, other_targets(slate, selection, with_history))
    data["command"] = "refresh" if refresh is not None else "run"
    data["played"] = {f"{t}|{p}": n for (t, p), n in done.played.items()}
    data["design"] = done.design
    data["seeds_built"] = done.seeds
    data["scenarios_built"] = {s: dict(kinds) for s, kinds in done.built.items()}
    data["voiced"] = {f"{t}|{p}": list(n) for (t, p), n in done.voiced.items()}
    data["rejudge"] = {f"{t}|{p}": dict(kinds) for (t, p), kinds in done.rejudge.items()}
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
