"""`eyt plan --refresh`: the bill of what `eyt refresh` would run, from the same findings `eyt refresh --dry-run`
lists (eyt_dagster/ops/refresh.py `AssetState`), read without writing to the instance.

`eyt refresh` first writes three things before it reads the statuses: it marks runs whose process is gone as
failed, registers the slate's targets as dynamic partitions and records the slate's per-target and per-pool
settings that changed (eyt_dagster/settings_sources.py `record_settings`), which is what makes a changed target's
cells stale. `read_findings` does none of that: a setting not recorded yet is found by comparing the slate with the
last recorded observation (`changed_settings`) and its reader partitions are added as stale findings, as recording
it would make them; a target the instance does not have yet counts as missing (`after_refresh`). The rest is
`AssetState` itself, which only reads (the Dagster records, and `evaluate_automation_conditions`, which returns what
the conditions request and stores nothing). A dead run is not marked failed: its partitions read as in progress and
are held back, as they would be for a run still going.

`after_refresh` turns the findings into what the plan counts as done (eyt_dagster/ops/plan_done.py `Done`): a
partition with no finding is done; a stale one is done for nothing (its requests change, so every call is new); a
missing or failed one keeps what the warehouse holds (a rerun answers that from the call cache). See docs/cost.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from eyt_dagster.ops.plan_done import SPEECH_STAGES, Done, speech_scenarios
from eyt_dagster.ops.refresh_plan import MISSING, STALE, AssetPartition, Finding
from eyt_dagster.partitions import TARGET_PARTITION_SETS
from eyt_dagster.slate import Slate

if TYPE_CHECKING:
    from dagster import DagsterInstance, Definitions, PartitionsDefinition

# The EYT-Bench cell's assets whose calls can be made again without playing its dialogues again, by call kind.
REJUDGED = (
    ("dialogue/judge_verdicts", "judge_turn"),
    ("dialogue/final_intent_verdicts", "judge_final"),
    ("dialogue/simulator_audit", "simulator_audit"),
)
# SpeechEQ's build call kinds -> the asset of the stage that makes them.
STAGE_OF_KIND = {kind: table.replace(".", "/") for table, _, kinds in SPEECH_STAGES for kind in kinds}


@dataclass(frozen=True)
class RefreshFindings:
    """What `eyt refresh` would materialise, and why (refresh_plan.Finding per asset partition). `registered`: per
    dynamic target set ("targets", "speech_targets", "voice_targets"), the keys the instance has; None when every
    slate target is registered (`eyt refresh` registers them before it reads the statuses)."""

    findings: Mapping[AssetPartition, Finding]
    registered: Mapping[str, set[str]] | None = None


def cell_key(target: str, pool: str) -> str:
    """A target x pool partition key as Dagster writes it: the dimensions' values in the order of their names."""
    return f"{pool}|{target}"


def _done(finding: Finding | None, whole: int, in_warehouse: int) -> int:
    """What counts as done of a partition's `whole`: all of it with no finding, none of it when stale (its
    requests change), what the warehouse holds when missing or failed (a rerun answers that from the call cache)."""
    if finding is None:
        return whole
    return 0 if finding.status == STALE else in_warehouse


def after_refresh(done: Done, refresh: RefreshFindings, slate: Slate) -> Done:
    """`done` (what the warehouse holds) changed by what `eyt refresh` would run: each EYT-Bench cell by its
    dialogue_turns finding, or, without one, its dialogues judged (audited) again by its verdicts' findings; each
    pool's ChatSEEDs by chat_seeds; each subscale's scenarios per call kind by the stage that makes them; each
    SpeechEQ target by slm_choices; each spoken EYT-Bench cell by voiced_turns and text_turns. A target the instance
    has not registered is missing: what the warehouse holds of it counts as done."""
    found = refresh.findings
    eyt_set, voice_set, speech_set = (TARGET_PARTITION_SETS[b] for b in ("eyt_bench", "eyt_voice", "speech_eq"))

    def known(name: str, target: str) -> bool:
        return refresh.registered is None or target in refresh.registered.get(name, set())

    def design(pool: str) -> int:
        return done.design.get(pool, slate.dialogues_per_pool)

    played, rejudge = {}, {}
    for (target, pool), n in done.played.items():
        key = cell_key(target, pool)
        if not known(eyt_set, target):
            played[(target, pool)] = n
            continue
        turns = found.get(("dialogue/dialogue_turns", key))
        played[(target, pool)] = _done(turns, design(pool), n)
        again = {kind: n for asset, kind in REJUDGED if turns is None and (asset, key) in found}
        if again:
            rejudge[(target, pool)] = again
    voiced = {}
    for (target, pool), (heard, read) in done.voiced.items():
        key, whole = cell_key(target, pool), min(slate.voice.dialogues_per_pool, design(pool))
        if known(voice_set, target):
            heard = _done(found.get(("voice/voiced_turns", key)), whole, heard)
            read = _done(found.get(("voice/text_turns", key)), whole, read)
        voiced[(target, pool)] = (heard, read)
    left = {}  # the share of an evaluation to do, not done
    for target, share in done.speech_left.items():
        finding = found.get(("speech/slm_choices", target))
        if not known(speech_set, target):
            left[target] = share
        else:
            left[target] = 0.0 if finding is None else 1.0 if finding.status == STALE else share
    whole = speech_scenarios(slate)
    built = {
        subscale: {kind: _done(found.get((STAGE_OF_KIND[kind], subscale)), whole, n) for kind, n in kinds.items()}
        for subscale, kinds in done.built.items()
    }
    seeds = {pool: _done(found.get(("dialogue/chat_seeds", pool)), design(pool), n) for pool, n in done.seeds.items()}
    return replace(done, played=played, seeds=seeds, speech_left=left, built=built, voiced=voiced, rejudge=rejudge)


def read_findings(
    instance: DagsterInstance, slate: Slate, include: Callable[[str], bool], defs: Definitions
) -> RefreshFindings:
    """The findings `eyt refresh --dry-run` would list for `slate` (`include` the assets it considers, as
    `--no-speech` says), read without writing to `instance`: settings changed since they were last recorded make
    their readers' partitions stale here, as recording them would."""
    from eyt_dagster.automation import slate_keys
    from eyt_dagster.ops.refresh import AssetState
    from eyt_dagster.settings_sources import changed_settings

    state = AssetState(defs, instance, include, slate_keys(slate), slate)
    extra: dict[AssetPartition, Finding] = {}
    for change in changed_settings(instance, slate):
        source = change.source
        for reader in (source.reader, *source.also_read_by):
            asset = reader.to_user_string()
            if asset not in state.job_of:
                continue  # out of scope (--no-speech)
            pdef = state.partitions_def[state.job_of[asset]]
            # a missing partition stays missing; any other whose settings changed reads as stale once they are recorded
            for key in [p for (a, p), status in state.statuses.items() if a == asset and p and status != MISSING]:
                own = key if source.mapping is None else _target_of(pdef, key)
                if own == change.partition:
                    extra[(asset, key)] = Finding(asset, key, STALE, (change.text() + " (not recorded yet)",))
    findings = state.findings(extra)
    registered = {name: set(instance.get_dynamic_partitions(name)) for name in TARGET_PARTITION_SETS.values()}
    return RefreshFindings({k: f for k, f in findings.items() if k[0] in state.job_of}, registered)


def _target_of(pdef: PartitionsDefinition | None, key: str) -> str | None:
    """The `target` dimension of a target x pool partition key (None for another partitioning)."""
    from dagster import MultiPartitionsDefinition

    if not isinstance(pdef, MultiPartitionsDefinition):
        return None
    return pdef.get_partition_key_from_str(key).keys_by_dimension.get("target")
