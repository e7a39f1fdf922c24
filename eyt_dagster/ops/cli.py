"""`eyt`: run the benchmark through the Dagster instance from a terminal or cron.

    eyt run                 materialise the whole EYT graph for the slate (every pool, target and report)
    eyt run --target T      only that target's partitions (plus the pools they read and the reports)
    eyt run --subscale S    only that subscale's SpeechEQ items (--no-speech: no SpeechEQ, no spoken EYT-Bench)
    eyt run --parallel N    up to N independent partition runs at once (default 2; also `eyt refresh`)
    eyt run --progress-every S  without a terminal, a progress line per change of a run's state; again after S s
                            without one (default 300)
    eyt plan                the bill before `eyt run` (same flags): calls, tokens, USD, wall time (--json FILE;
                            --refresh: the bill of what `eyt refresh` would run)
    eyt refresh             materialise exactly the missing and stale partitions (--dry-run: only list them)
    eyt remove-target ID    delete a target: its partition keys and its rows in every warehouse table
    eyt migrate             move an older warehouse into Parquet files; re-point the views after a move
    eyt register-targets    add the slate's targets as partitions of their benchmarks' dynamic target sets
    eyt report              write a self-contained HTML report of every table (no UI needed to read it) to
                            $EYT_DATA_DIR/reports/eyt_report.html (--out FILE)
    eyt tables --format F   write the papers' tables (latex, markdown or csv) from the warehouse to
                            $EYT_DATA_DIR/tables/F/ (--out DIR); a table with no rows is not written, and why is said
    eyt speech-export [DIR] write the built SpeechEQ items in the released layout (<subscale>/<id>/...), by default to
                            $EYT_DATA_DIR/speecheq_items
    eyt env                 print the environment lines for other Dagster commands (DAGSTER_HOME)
    eyt dev                 start the Dagster UI and daemon on this project's instance (--automation: with the
                            daemon keeping the slate up to date, docs/refresh.md)
    eyt view                a local read-only web explorer over the warehouse: leaderboard, dialogues, calls
                            (--port N, default a free one; --host, default 127.0.0.1; --export DIR [--target T]
                            [--pool P]: a static copy of a selection of it, opened from file://)
    eyt bench               time `eyt run --no-speech` against a localhost server with a fixed latency, per stage

Runs go through the real Dagster instance (DAGSTER_HOME), so the UI (`eyt dev`) shows every one of them. Each run
executes in a worker process: one that crashes or is killed fails that run only (docs/operations.md).
Exit status is non-zero when any run fails or is skipped; `eyt run` and `eyt refresh` end with a summary. Files a
command writes go under the data directory unless told otherwise, and the command prints where.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from eyt_dagster.automation import slate_keys
from eyt_dagster.core import env_settings
from eyt_dagster.core.env_settings import SettingError, dagster_home, data_dir
from eyt_dagster.eyt_bench.taxonomy import PAPER_POOLS
from eyt_dagster.ops.dead_runs import mark_dead_runs
from eyt_dagster.ops.instance import PROJECT_ROOT, ensure_dagster_home, register_targets
from eyt_dagster.ops.launch import DEFAULT_PARALLEL, execute_runs
from eyt_dagster.ops.progress_display import DEFAULT_EVERY_S, PROGRESS_EVERY_ENV
from eyt_dagster.ops.refresh import asset_parents, refresh
from eyt_dagster.ops.run_plan import eyt_runs
from eyt_dagster.ops.target_removal import delete_target_rows, mark_removed, tables_with_target, target_partitions
from eyt_dagster.slate import Slate, SlateError, load_slate, slate_path_from_env
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from eyt_dagster.ops.plan import Selection
    from eyt_dagster.ops.plan_refresh import RefreshFindings
    from eyt_dagster.ops.refresh_plan import AssetPartition, Finding
    from eyt_dagster.ops.spend import CommandBudget
    from resources.models.cache_backend import CacheBackend


def cmd_run(args: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    slate = load_slate(slate_path_from_env())
    ensure_dagster_home()
    instance = DagsterInstance.get()
    report_dead_runs(instance)
    register_targets(instance, slate)
    chosen = selection(args, slate)
    if chosen is None:
        return 2
    targets, pools = chosen.targets, chosen.pools
    speech_targets, voice_targets = chosen.speech_targets, chosen.voice_targets
    print(
        f"slate '{slate.name}' ({slate_path_from_env()}): EYT-Bench targets {targets}, pools {pools}; "
        f"SpeechEQ targets {speech_targets}; spoken EYT-Bench targets {voice_targets}"
    )
    spend = _command_budget(slate, args.max_cost)
    if spend is None:
        return 2
    _save_estimate(slate, chosen)
    ok = True
    if slate.sequential_on and targets:  # the cells round by round; the rest of the run below, without them
        from eyt_dagster.ops.sequential_run import play_sequentially

        ok, _ = play_sequentially(instance, slate, pools, targets, args.parallel, spend.run_tags)
        targets = []
    runs = eyt_runs(
        pools,
        targets,
        reports=not args.no_reports,
        subscales=args.subscale or sorted(SUBSCALES),
        speech_targets=speech_targets,
        speech=not args.no_speech,
        voice_targets=voice_targets,
        voice_pools={t: slate.voice_pools_of(t) for t in voice_targets},
    )
    runs = [dataclasses.replace(run, tags={**run.tags, **spend.run_tags}) for run in runs]
    ok = (execute_runs(instance, runs, args.parallel) if runs else True) and ok
    _print_spent(spend)
    print(f"warehouse: {env_settings.DATA_DIR.get()}/eyt.duckdb")
    # also after a failed run: the reports run over the partitions that exist, and show the cells that failed
    if not args.no_reports:
        _print_leaderboard()
    if not args.no_speech:
        _print_speech_summary()
    return 0 if ok else 1


def _command_budget(slate: Slate, max_cost: float | None) -> CommandBudget | None:
    """The command's spend caps, their lines printed; None after printing why --max-cost cannot be used."""
    from eyt_dagster.ops.spend import SpendError, command_budget

    try:
        spend = command_budget(slate, max_cost, str(data_dir()), _call_backend())
    except SpendError as exc:
        print(f"eyt: {exc}", file=sys.stderr)
        return None
    for line in spend.start_lines():
        print(line)
    return spend


def _save_estimate(slate: Slate, chosen: Selection, refresh: RefreshFindings | None = None) -> None:
    """Keep what `eyt plan` (`eyt plan --refresh` with `refresh`) would say of this command, with the ledger's last
    id, for reports/run_costs (estimated against actual cost per model and role)."""
    from eyt_dagster.ops.plan import save_estimate

    found = _plan_of(slate, chosen, refresh)
    save_estimate(data_dir(), found.data, found.last_id, sequential=slate.sequential_on)


class _PlanRead(NamedTuple):
    text: str
    data: dict[str, Any]
    history_calls: int
    last_id: int  # the ledger's newest row: the calls of a command that starts now come after it


def _plan_of(slate: Slate, chosen: Selection, refresh: RefreshFindings | None = None) -> _PlanRead:
    """`eyt plan`'s text and figures for `chosen` (with `refresh`: of what `eyt refresh` would run), from the
    ledger's history and the warehouse."""
    from eyt_dagster.ops.plan import HISTORY_ROLES, plan
    from resources.models.call_reads import open_call_reads
    from resources.storage.warehouse import warehouse_path

    with open_call_reads(data_dir(), _call_backend()) as reads:
        rows = reads.calls_of_roles(HISTORY_ROLES)
        last = reads.last_ledger_id()
    text, data = plan(slate, chosen, rows, warehouse_path(), refresh)
    return _PlanRead(text, data, len(rows), last)


def _print_spent(spend: CommandBudget) -> None:
    """What the command spent, when a cap applied (the ledger is read again)."""
    from eyt_dagster.ops.spend import spent_by_model

    if spend.budget.active:
        print(spend.end_line(spent_by_model(str(data_dir()), _call_backend())))
        print(_left_undone())


def _left_undone() -> str:
    """How many dialogues a spend cap left unplayed, in how many cells (from the warehouse)."""
    import duckdb

    from resources.storage.warehouse import warehouse_path

    try:
        with duckdb.connect(str(warehouse_path()), read_only=True) as con:
            dialogues, cells = con.execute(
                "SELECT count(DISTINCT (target, pool, seed_id)), count(DISTINCT (target, pool)) "
                "FROM dialogue.dialogue_turns WHERE error_kind = 'budget'"
            ).fetchone() or (0, 0)
    except duckdb.Error:  # no warehouse or no dialogues yet
        dialogues, cells = 0, 0
    if not dialogues:
        return "left undone: nothing stopped by budget"
    return (
        f"left undone: {dialogues} dialogue(s) stopped by budget in {cells} cell(s); raise the cap and run again "
        "(what was answered comes from the cache)"
    )


def selection(args: argparse.Namespace, slate: Slate) -> Selection | None:
    """The targets and pools `eyt run`'s flags select (also `eyt plan`'s); None after printing why the flags are
    wrong (a target or pool not in the slate, an unknown subscale)."""
    from eyt_dagster.ops.plan import Selection

    unknown = sorted(set(args.target or []) - {t.id for t in slate.targets})
    if unknown:
        print(f"eyt: target(s) {unknown} are not in the slate {slate_path_from_env()}", file=sys.stderr)
        return None
    unplayed = sorted(set(args.pool or []) - set(slate.pools))
    if unplayed:  # not a partition of the code location either (eyt_dagster/partitions.py)
        print(
            f"eyt: pool(s) {unplayed} are not in the slate {slate_path_from_env()}; its pools are {list(slate.pools)}",
            file=sys.stderr,
        )
        return None
    wrong = sorted(set(args.subscale or []) - set(SUBSCALES))
    if wrong:
        print(f"eyt: unknown subscale(s) {wrong}; the EQ-i subscales are {sorted(SUBSCALES)}", file=sys.stderr)
        return None
    speech = not args.no_speech  # --no-speech: no SpeechEQ (items or targets) and no spoken EYT-Bench
    return Selection(
        targets=[t.id for t in slate.eyt_targets if not args.target or t.id in args.target],
        pools=args.pool or list(slate.pools),
        speech_targets=[t.id for t in slate.speech_targets if (not args.target or t.id in args.target) and speech],
        voice_targets=[t.id for t in slate.voice_targets if (not args.target or t.id in args.target) and speech],
        speech=speech,
        subscales=args.subscale or sorted(SUBSCALES),
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from eyt_dagster.ops.plan import write_json

    slate = load_slate(slate_path_from_env())
    if args.refresh and (args.target or args.pool or args.subscale):
        print(
            "eyt: --refresh plans what `eyt refresh` runs, which takes no --target, --pool or --subscale",
            file=sys.stderr,
        )
        return 2
    chosen = selection(args, slate)
    if chosen is None:
        return 2
    found = _refresh_findings(slate, args) if args.refresh else None
    text, data, history_calls, _ = _plan_of(slate, chosen, found)
    print(
        f"slate '{slate.name}' ({slate_path_from_env()}): EYT-Bench targets {chosen.targets}, pools {chosen.pools}; "
        f"ledger history: {history_calls} call(s)"
    )
    if found is not None:
        print(_refresh_summary(found))
    print(text)
    if slate.sequential_on:
        print(
            "sequential design on: these are the full design's figures, an upper bound; `eyt run` stops each target "
            "once its comparisons are decided (docs/eyt-metrics.md#stopping-when-the-ranking-is-settled)"
        )
    spend = _command_budget(slate, None)  # the slate's caps and what is spent against them
    if spend is not None and not spend.budget.active:
        print("spend caps: none (the slate sets no `budget`; `eyt run --max-cost USD` sets one for a command)")
    fit = spend.fit_line(data["total"]["usd"]) if spend is not None else None
    if fit:
        print(fit)
    if args.json:
        write_json(Path(args.json), data)
        print(f"wrote {args.json}")
    return 0


def _refresh_findings(slate: Slate, args: argparse.Namespace) -> RefreshFindings:
    """What `eyt refresh` (with --no-speech as given) would materialise, read without writing to the instance: an
    instance folder that does not exist yet is not created (every partition then counts as missing)."""
    from dagster import DagsterInstance

    from eyt_dagster.definitions import build_defs
    from eyt_dagster.ops.plan_refresh import read_findings

    home = dagster_home().resolve()
    instance = DagsterInstance.from_config(str(home)) if home.is_dir() else DagsterInstance.ephemeral()
    try:
        return read_findings(instance, slate, _scope(args), build_defs(str(slate_path_from_env())))
    finally:
        instance.dispose()


def _refresh_summary(found: RefreshFindings) -> str:
    """One line: how many asset partitions `eyt refresh` would materialise, by status."""
    from collections import Counter

    counts = Counter(f.status.lower() for f in found.findings.values())
    if not counts:
        return "eyt refresh would run nothing: every asset partition of the slate is fresh"
    listed = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"eyt refresh would materialise {sum(counts.values())} asset partition(s) ({listed}); `eyt refresh --dry-run` lists them"


def _parallel(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"--parallel must be at least 1, got {value}")
    return value


def report_dead_runs(instance: DagsterInstance) -> None:
    """Mark the runs whose process on this host is gone as failed (eyt_dagster/ops/dead_runs.py) and say so."""
    for line in mark_dead_runs(instance):
        print(f"marked failed: {line}")


def _print_leaderboard() -> None:
    import duckdb

    from eyt_dagster.ops.terminal_board import leaderboard_text
    from eyt_dagster.table_registry import catalog
    from resources.storage.warehouse import connect

    try:
        with connect(catalog=catalog()) as con:
            board = con.execute("SELECT * FROM dialogue.leaderboard ORDER BY pool, target").df()
    except (duckdb.CatalogException, duckdb.IOException):
        print("\nleaderboard: not written yet (the eyt_reports run did not finish)")
        return
    print("\n" + leaderboard_text(board))


def cmd_report(args: argparse.Namespace) -> int:
    from eyt_dagster.core.prompts import prompt_hash
    from eyt_dagster.eyt_bench.prompts import PROMPT_KEYS, prompts_path
    from eyt_dagster.ops.report_commands import REPORT_FILE, default_output, report_html
    from eyt_dagster.reporting.html_report import write_report
    from eyt_dagster.speech_eq.prompts import SPEECH_EVAL_PROMPT_KEYS, speech_eval_prompts_path
    from eyt_dagster.table_registry import catalog
    from resources.storage.warehouse import prepare, warehouse_path

    slate_path = slate_path_from_env()
    slate = load_slate(slate_path)  # a broken slate fails here with the field named
    if not warehouse_path().exists():
        print(f"eyt: no warehouse at {warehouse_path()}; run `eyt run` first", file=sys.stderr)
        return 2
    prepare(warehouse_path(), catalog())
    hashes = {key: prompt_hash(key, path=prompts_path()) for key in PROMPT_KEYS}
    for language in sorted({slate.pool_language(p) for p in slate.pools} - {"en"}):  # a Chinese pool's prompts
        hashes.update({f"{key} ({language})": prompt_hash(key, path=prompts_path(language)) for key in PROMPT_KEYS})
    hashes.update({key: prompt_hash(key, path=speech_eval_prompts_path()) for key in SPEECH_EVAL_PROMPT_KEYS})
    html = report_html(warehouse_path(), slate, slate_path.read_text(), hashes)
    out = Path(args.out) if args.out else default_output(data_dir(), REPORT_FILE)
    print(f"wrote {write_report(out, html)}")
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from eyt_dagster.ops.report_commands import TABLES_DIR, default_output, write_paper_tables
    from resources.storage.warehouse import warehouse_path

    slate = load_slate(slate_path_from_env())
    if not warehouse_path().exists():
        print(f"eyt: no warehouse at {warehouse_path()}; run `eyt run` first", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_output(data_dir(), TABLES_DIR / args.format)
    export = write_paper_tables(warehouse_path(), slate, out, args.format)
    for path in export.written:
        print(f"wrote {path}")
    for name, why in export.empty.items():
        print(f"not written: {name}, no rows: {why}")
    for path in export.removed:
        print(f"removed {path}: written by an earlier run, its table has no rows now")
    print(f"{len(export.written)} file(s) in {out}; {len(export.empty)} empty table(s) not written")
    return 0


def _print_speech_summary() -> None:
    import duckdb

    from eyt_dagster.table_registry import catalog
    from resources.storage.warehouse import connect

    try:
        with connect(catalog=catalog()) as con:
            summary = con.execute(
                "SELECT subscale, scenarios, items, tones_rejected_bland, pairs_regenerated, pairs_discarded, "
                "pairs_below_threshold AS published_below_threshold, skipped_folders, "
                "round(mean_total_passed, 2) AS mean_contrast, "
                "source FROM speech.speech_build_report ORDER BY subscale"
            ).df()
            generators = ", ".join(
                r[0] for r in con.execute("SELECT DISTINCT generator FROM speech.scenarios").fetchall()
            )
    except (duckdb.CatalogException, duckdb.IOException, duckdb.BinderException):
        print("\nSpeechEQ items: no build report yet (the speech_reports run did not finish)")
        return
    sources = sorted(set(summary["source"].astype(str))) if len(summary) else []
    imported = sorted({s.split("imported from ", 1)[1] for s in sources if "imported from " in s})
    where = [f"text generator: {generators}; 'template-baseline' is an embedded baseline"] if generators else []
    where += [f"imported from {', '.join(imported)}: published pairs are scored, never dropped"] if imported else []
    print(f"\nSpeechEQ items ({'; '.join(where) or 'none yet'}):")
    print(summary.drop(columns=["source"]).to_string(index=False))
    try:
        with connect(catalog=catalog()) as con:
            board = con.execute(
                "SELECT condition, target, is_baseline, n_items, round(acc1, 3) AS acc1, round(acc2, 3) AS acc2, "
                "round(acc_traj, 3) AS acc_traj, round(seq, 1) AS seq, in_seq_cohort AS in_cohort, "
                "round(parse_failure_rate, 3) AS parse_fail, round(mean_latency_s, 4) AS latency_s, seq_cohort, "
                "seq_cohort_kind, model FROM speech.seq_leaderboard ORDER BY condition, seq DESC"
            ).df()
    except duckdb.CatalogException:
        return
    from eyt_dagster.core.baseline_text import REFERENCE_POINT
    from eyt_dagster.speech_eq.seq_tables import seq_cohort_note, shortcut_notes

    if board.empty:
        print("\nSpeechEQ forced choice: no rows yet (no item was built, or no speech target was evaluated)")
        return
    print("\nSpeechEQ forced choice (chance = 0.5 / 0.5 / 0.25). SEQ is relative to each condition's cohort:")
    print(seq_cohort_note(board))
    print(board.drop(columns=["seq_cohort", "seq_cohort_kind", "model"]).to_string(index=False, na_rep="-"))
    if board["is_baseline"].any():
        print(f"\nis_baseline = True marks an embedded baseline chooser (or chance): {REFERENCE_POINT}.")
    for note in shortcut_notes(board):
        print(f"shortcut: {note}")


def cmd_speech_export(args: argparse.Namespace) -> int:
    import duckdb

    from eyt_dagster.ops.report_commands import SPEECH_EXPORT_DIR, default_output
    from eyt_dagster.speech_eq.release_format import item_from_rows
    from eyt_dagster.table_registry import catalog
    from resources.datasets.speech_release import write_released
    from resources.storage.data_paths import resolve_path_columns
    from resources.storage.warehouse import connect

    try:
        with connect(catalog=catalog()) as con:
            rows = con.execute("SELECT * FROM speech.eq_items ORDER BY subscale, dataset_id").df()
    except (duckdb.CatalogException, duckdb.IOException):
        print("eyt: no speech.eq_items table yet; run `eyt run` (or the speech_build job) first", file=sys.stderr)
        return 2
    rows = resolve_path_columns(rows, data_dir())  # clip paths are stored relative to the data directory
    out = Path(args.dir) if args.dir else default_output(data_dir(), SPEECH_EXPORT_DIR)
    written = write_released([item_from_rows(row) for row in rows.to_dict("records")], out)
    print(f"wrote {len(written)} item folder(s) under {out}")
    return 0


def _scope(args: argparse.Namespace) -> Callable[[str], bool]:
    """Which assets `eyt refresh` considers: everything, or EYT-Bench only (--no-speech: neither SpeechEQ nor the
    spoken EYT-Bench)."""
    return (lambda asset: not asset.startswith(("speech/", "voice/"))) if args.no_speech else (lambda asset: True)


def cmd_refresh(args: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    slate = load_slate(slate_path_from_env())
    ensure_dagster_home()
    instance = DagsterInstance.get()
    report_dead_runs(instance)
    added = register_targets(instance, slate)
    if added:
        print(f"registered new target partition(s): {added}")
    spend = _command_budget(slate, args.max_cost)
    if spend is None:
        return 2
    status = refresh(
        instance,
        _scope(args),
        slate_keys(slate),
        dry_run=args.dry_run,
        backfill=args.backfill,
        forced=None if args.reports else set(),
        reason="--reports",
        slate=slate,
        parallel=args.parallel,
        run_tags=spend.run_tags,
        before_runs=lambda findings: _save_refresh_estimate(slate, args, findings),
    )
    if not args.dry_run:
        _print_spent(spend)
    return status


def _save_refresh_estimate(slate: Slate, args: argparse.Namespace, findings: Mapping[AssetPartition, Finding]) -> None:
    """Keep what `eyt plan --refresh` says of the runs `eyt refresh` is about to launch (its findings, after it
    registered the targets and recorded the settings), for reports/run_costs."""
    from eyt_dagster.ops.plan import Selection
    from eyt_dagster.ops.plan_refresh import RefreshFindings

    speech = not args.no_speech
    chosen = Selection(
        targets=[t.id for t in slate.eyt_targets],
        pools=list(slate.pools),
        speech_targets=[t.id for t in slate.speech_targets] if speech else [],
        voice_targets=[t.id for t in slate.voice_targets] if speech else [],
        speech=speech,
    )
    _save_estimate(slate, chosen, RefreshFindings(findings))


def cmd_remove_target(args: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    from eyt_dagster.ops import refresh_plan as ops
    from eyt_dagster.partitions import TARGET_PARTITION_SETS

    target = args.id
    ensure_dagster_home()
    instance = DagsterInstance.get()
    sets = [name for name in TARGET_PARTITION_SETS.values() if instance.has_dynamic_partition(name, target)]
    tables = [t for t in tables_with_target(target) if t[2]]
    if not sets and not tables:
        print(
            f"eyt: '{target}' is no target partition and has no rows in the warehouse; nothing to delete",
            file=sys.stderr,
        )
        return 2
    try:
        in_slate = target in {t.id for t in load_slate(slate_path_from_env()).targets}
    except SlateError:
        in_slate = False
    if in_slate and not args.force:
        print(
            f"eyt: '{target}' is still in the slate {slate_path_from_env()}: delete it from the slate first, or add "
            f"--force to delete its results anyway (the next `eyt refresh` then evaluates it again from scratch)",
            file=sys.stderr,
        )
        return 2
    print(
        f"target '{target}': partition key in {sets or 'no partition set'}; rows in "
        f"{', '.join(f'{s}.{t} ({n})' for s, t, n in tables) or 'no table'}"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            print("eyt: not a terminal, so no confirmation can be asked: pass --yes to delete", file=sys.stderr)
            return 2
        answer = input(f"Delete target '{target}' and all its rows? This cannot be undone [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    for schema, table, _ in tables:
        deleted = delete_target_rows(target, f"{schema}.{table}")
        print(f"  deleted {deleted:>6} row(s) from {schema}.{table}")
    wiped, unsupported = 0, []
    materialised = target_partitions(instance, sets, target)
    affected = {key.to_user_string() for key in materialised} | {f"{s}/{t}" for s, t, _ in tables}
    for key, partitions in materialised.items():
        try:
            instance.wipe_asset_partitions(key, partitions)
            wiped += len(partitions)
        except NotImplementedError:
            unsupported.append(key.to_user_string())
    for name in sets:
        instance.delete_dynamic_partition(name, target)
        print(f"  deleted partition key '{target}' from the dynamic partitions '{name}'")
    if wiped:
        print(f"  wiped the materialisation records of {wiped} asset partition(s)")
    if unsupported:
        kept = {key: partitions for key, partitions in materialised.items() if key.to_user_string() in unsupported}
        marked = mark_removed(instance, kept, target)
        print(
            f"  kept the materialisation records of {', '.join(unsupported)}: this instance's event log storage "
            f"cannot wipe single partitions (the runs stay in the history); recorded {marked} marker(s) saying the "
            f"rows were deleted, so `eyt refresh` plans '{target}' again while (or once) the slate lists it"
        )
    if args.no_reports:
        print("the report tables still include the target: recompute them with `eyt refresh --reports`")
        return 0
    try:
        keys = slate_keys(load_slate(slate_path_from_env()))
    except SlateError as exc:
        print(
            f"eyt: the reports were not recomputed ({exc}); fix the slate, then run `eyt refresh --reports`",
            file=sys.stderr,
        )
        return 1
    print("recomputing the reports that read the target:")
    return refresh(
        instance,
        lambda asset: True,
        keys,
        forced=ops.descendants(affected, asset_parents()),
        reason=f"target {target} was removed",
        only_forced=True,
    )


def cmd_migrate(_: argparse.Namespace) -> int:
    import logging

    from eyt_dagster.definitions import warehouse_catalog
    from resources.storage.warehouse import prepare, warehouse_path

    logging.basicConfig(level=logging.INFO, format="  %(message)s")
    if prepare(warehouse_path(), warehouse_catalog(), logging.getLogger("eyt")):
        print(f"{warehouse_path()}: views over {warehouse_path().parent / 'warehouse'} are current")
        return 0
    print(
        f"eyt: {warehouse_path()} is open in another process (a `duckdb` shell, a notebook): close it and run "
        f"`eyt migrate` again",
        file=sys.stderr,
    )
    return 1


def cmd_register(_: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    ensure_dagster_home()
    new = register_targets(DagsterInstance.get())
    print(f"registered {len(new)} new target partition(s): {new}" if new else "all slate targets are registered")
    return 0


def cmd_env(_: argparse.Namespace) -> int:
    home = ensure_dagster_home()
    print(f"export DAGSTER_HOME={home}")
    print(f"export {env_settings.SLATE.name}={slate_path_from_env()}")
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    """The Dagster UI and daemon on this project's instance: what `dagster dev` starts, without its command.

    `dagster dev` is superseded (it warns and names `dg dev`, from the dagster-dg-cli package, not a dependency here);
    `dg dev` given a workspace file calls the function below, which starts the webserver, the daemon and one shared
    code server with this interpreter. It runs in this process, so Ctrl-C, SIGTERM and the exit status are the
    server's own. Neither command has a public Python API, hence the private import (docs/operations.md).
    """
    from dagster._cli.dev import dev_command_impl
    from dagster_shared.cli import WorkspaceOpts

    home = ensure_dagster_home()
    if args.automation:
        os.environ[env_settings.AUTOMATION.name] = "on"
    os.environ[env_settings.DATA_DIR.name] = str(data_dir())  # as seen from here, for the processes it starts
    print(f"eyt dev: the Dagster UI on http://127.0.0.1:{args.port} (instance {dagster_home()})", flush=True)
    # From the instance's folder: Dagster warns of a dagster.yaml in the folder it starts from that is not
    # DAGSTER_HOME's, and the repository's root holds the settings DAGSTER_HOME links to.
    os.chdir(home)
    # The server stops its webserver and daemon on KeyboardInterrupt (SIGINT, and SIGTERM mapped to it); a shell that
    # starts a command in the background has SIGINT ignored, which the server would keep and then outlive a SIGTERM.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    dev_command_impl(
        code_server_log_level="warning",
        log_level="info",
        log_format="colored",
        port=str(args.port),
        host=None,
        use_legacy_code_server_behavior=False,
        shutdown_pipe=None,
        verbose=False,
        workspace_opts=WorkspaceOpts(workspace=[str(PROJECT_ROOT / "workspace.yaml")]),
    )
    return 0


def _call_backend() -> CacheBackend:
    """Where the Dagster instance keeps the call cache (resources/models/cache_backend.py), for the explorer's call pages.
    The instance is opened only when its settings name Postgres: opening a SQLite instance writes to it, and the
    explorer must work on a read-only data directory."""
    import yaml
    from dagster import DagsterInstance

    from resources.models.cache_backend import cache_backend

    home = dagster_home()
    settings = home / "dagster.yaml"
    config = (yaml.safe_load(settings.read_text()) or {}) if settings.exists() else {}
    storage = {key: config.get(key) for key in ("storage", "run_storage")}  # comments are not read
    if "postgres" not in str(storage):
        return cache_backend(None)
    ensure_dagster_home()
    with DagsterInstance.get() as instance:
        return cache_backend(instance)


def cmd_view(args: argparse.Namespace) -> int:
    from eyt_dagster.explorer.server import serve
    from resources.models.cache_backend import CacheBackendError

    try:
        backend = _call_backend()
    except CacheBackendError as exc:
        print(f"eyt view: {exc}", file=sys.stderr)
        return 2
    if args.export is not None:
        return cmd_view_export(args, data_dir(), backend)
    if args.target or args.pool or args.force:
        print("eyt view: --target, --pool and --force choose what --export DIR writes", file=sys.stderr)
        return 2
    if not (data_dir() / "warehouse").exists():
        print(f"eyt view: no warehouse under {data_dir()} yet; the pages fill in as `eyt run` writes", flush=True)
    return serve(data_dir(), args.host, args.port, backend)


def cmd_view_export(args: argparse.Namespace, data: Path, backend: CacheBackend | None = None) -> int:
    from eyt_dagster.explorer.export import ExportError, export
    from eyt_dagster.explorer.export_selection import SelectionError

    try:
        written = export(
            data, Path(args.export), args.target or (), args.pool or (), force=args.force, call_backend=backend
        )
    except (ExportError, SelectionError) as exc:
        print(f"eyt view --export: {exc}", file=sys.stderr)
        return 2
    print(written.summary(), flush=True)
    return 1 if written.failed else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from eyt_dagster.ops.bench import BenchSettings, run_bench

    wrong = sorted(set(args.speech or []) - set(SUBSCALES))
    if wrong:
        print(f"eyt bench: unknown subscale(s) {wrong}; the EQ-i subscales are {sorted(SUBSCALES)}", file=sys.stderr)
        return 2
    settings = BenchSettings(
        latency_s=args.latency,
        pools=tuple(args.pool or BenchSettings.pools),
        dialogues_per_pool=args.dialogues,
        t_max=args.t_max,
        targets=args.targets,
        judges=args.judges,
        max_concurrency=args.concurrency,
        reports=args.reports,
        speech_subscales=tuple(args.speech or ()),
        parallel=args.parallel,
        instance_yaml=args.instance_yaml,
    )
    print(
        run_bench(
            settings,
            zero=not args.no_zero,
            keep=Path(args.keep) if args.keep else None,
            json_out=Path(args.json) if args.json else None,
            progress=lambda line: print(line, flush=True),
        )
    )
    return 0


def _run_options(command: argparse.ArgumentParser) -> None:
    """The selection flags of `eyt run` (and `eyt plan`, which estimates the same selection)."""
    command.add_argument("--target", action="append", help="only this target (repeatable)")
    command.add_argument("--pool", action="append", help="only this pool (repeatable)")
    command.add_argument("--no-reports", action="store_true", help="skip the leaderboard and analysis tables")
    command.add_argument(
        "--no-speech",
        action="store_true",
        help="no audio: skip SpeechEQ and the spoken EYT-Bench (text EYT-Bench only)",
    )
    command.add_argument("--subscale", action="append", help="only this EQ-i subscale's SpeechEQ items (repeatable)")
    command.add_argument(
        "--parallel",
        type=_parallel,
        default=DEFAULT_PARALLEL,
        metavar="N",
        help=f"run up to N independent partition runs at once, each in a worker process (default "
        f"{DEFAULT_PARALLEL}; 1: one after another, in one worker); see docs/operations.md",
    )


def _positive_usd(text: str) -> float:
    from eyt_dagster.core.budget import check_cost_limit

    try:
        return check_cost_limit(float(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) if "--max-cost" in str(exc) else f"not an amount: {text!r}") from None


def _max_cost_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-cost",
        type=_positive_usd,
        metavar="USD",
        help="spend at most this much more on the slate's models (the ledger's network calls at the slate's prices); "
        "once reached no new call is sent and what needs one stops by budget (docs/cost.md#spend-caps)",
    )


def _progress_seconds(text: str) -> float:
    try:
        return env_settings.PROGRESS_EVERY.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {env_settings.PROGRESS_EVERY.accepts}, got {text!r}") from None


def _progress_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--progress-every",
        type=_progress_seconds,
        metavar="SECONDS",
        help="without a terminal (cron, CI, a pipe): a progress line for a running run each time its state changes, "
        f"and again after SECONDS without a change (default ${PROGRESS_EVERY_ENV} or {DEFAULT_EVERY_S:g}; 0: no "
        "progress lines); on a terminal a live table instead (docs/operations.md#watching-a-run)",
    )


# The commands that write to the data directory: checked for a writable folder with room before they start.
WRITING_COMMANDS = frozenset(
    {"run", "refresh", "remove-target", "migrate", "register-targets", "bench", "dev", "annotate"}
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="eyt", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialise the EYT graph for the slate")
    _run_options(run)
    _max_cost_option(run)
    _progress_option(run)
    run.set_defaults(func=cmd_run)
    plan = sub.add_parser(
        "plan",
        help="the bill before `eyt run`: calls, tokens, USD and wall time per model and role",
        description="Estimate what `eyt run` with the same flags would spend, per model and role: calls, prompt "
        "and completion tokens, USD from the slate's prices and wall time from the endpoint budgets, each with a "
        "range, from the ledger's history (or the rendered prompts). Dialogues already played cost nothing. "
        "Calls no model and writes nothing but --json FILE (docs/cost.md).",
    )
    _run_options(plan)
    plan.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    plan.add_argument(
        "--refresh",
        action="store_true",
        help="plan what `eyt refresh` would run instead: its missing, stale and failed partitions (a stale cell's "
        "dialogues are played again in full), read without writing to the instance (docs/cost.md#planning-a-refresh)",
    )
    plan.set_defaults(func=cmd_plan)
    report = sub.add_parser("report", help="write a self-contained HTML report")
    report.add_argument(
        "--out", help="output file (default: $EYT_DATA_DIR/reports/eyt_report.html; the path written is printed)"
    )
    report.set_defaults(func=cmd_report)
    tables = sub.add_parser("tables", help="write the papers' tables from the warehouse (LaTeX, Markdown or CSV)")
    tables.add_argument("--format", choices=("latex", "markdown", "csv"), default="markdown")
    tables.add_argument(
        "--out",
        help="output folder (default: $EYT_DATA_DIR/tables/<format>); an empty table is not written, and why is printed",
    )
    tables.set_defaults(func=cmd_tables)
    export = sub.add_parser("speech-export", help="write SpeechEQ items in the released layout")
    export.add_argument("dir", nargs="?", help="output directory (default: $EYT_DATA_DIR/speecheq_items)")
    export.set_defaults(func=cmd_speech_export)
    refresh = sub.add_parser(
        "refresh",
        help="materialise exactly the missing and stale partitions",
        description="List every missing or stale asset partition (what the assets' automation conditions request, "
        "evaluated once through Dagster's public API, plus everything downstream of it; docs/refresh.md) "
        "and materialise exactly those, one run "
        "per job and partition key, in dependency order, up to --parallel at once: no daemon needed. First it "
        "marks runs whose process on this host is gone as failed, registers the slate's targets (a "
        "target added to the slate shows up as missing partitions) and records the settings of every "
        "target and pool that changed (their partitions show up as stale, with the settings named). "
        "Exit status 1 when a run fails, 0 otherwise (also when everything is fresh).",
    )
    refresh.add_argument(
        "--dry-run",
        action="store_true",
        help="only list the partitions and the runs it would launch (it still does the first steps)",
    )
    refresh.add_argument(
        "--backfill",
        action="store_true",
        help="submit the partitions as one Dagster asset backfill (launchPartitionBackfill) instead "
        "of running them here; needs the Dagster daemon: `eyt dev` (dagster dev) or "
        "`dagster-daemon run -w workspace.yaml` with the same DAGSTER_HOME",
    )
    refresh.add_argument(
        "--no-speech", action="store_true", help="only EYT-Bench's text assets (leave SpeechEQ and eyt_voice alone)"
    )
    refresh.add_argument(
        "--parallel",
        type=_parallel,
        default=DEFAULT_PARALLEL,
        metavar="N",
        help=f"run up to N independent runs at once, each in a worker process (default "
        f"{DEFAULT_PARALLEL}; 1: one after another, in one worker)",
    )
    refresh.add_argument(
        "--reports", action="store_true", help="also recompute every report (unpartitioned asset), stale or not"
    )
    _max_cost_option(refresh)
    _progress_option(refresh)
    refresh.set_defaults(func=cmd_refresh)
    remove = sub.add_parser(
        "remove-target",
        help="delete a target's partitions and warehouse rows",
        description="Delete a target for good (removing it from the slate keeps its history): its key in the "
        "dynamic partitions `targets` / `speech_targets`, its rows in every warehouse table with a "
        "`target` column and, where the instance's storage allows it, its partitions' materialisation "
        "records; then recompute the reports that read it. Asks for confirmation on a terminal.",
    )
    remove.add_argument("id", help="the target id (its partition key)")
    remove.add_argument("--yes", action="store_true", help="do not ask for confirmation (required without a terminal)")
    remove.add_argument("--force", action="store_true", help="delete even though the slate still lists the target")
    remove.add_argument("--no-reports", action="store_true", help="do not recompute the reports afterwards")
    remove.set_defaults(func=cmd_remove_target)
    sub.add_parser(
        "migrate",
        help="move an older warehouse's tables into Parquet files; re-point the views after a move",
        description="Export every real table of an older eyt.duckdb into the Parquet layout under "
        "<data dir>/warehouse (one file per partition, every row kept) and replace it by a view; and "
        "re-create any view that is missing or still points at the data directory's old location. "
        "Every run and every eyt command does the same when it starts; see docs/storage.md.",
    ).set_defaults(func=cmd_migrate)
    sub.add_parser("register-targets", help="add slate targets as dynamic partitions").set_defaults(func=cmd_register)
    sub.add_parser("env", help="print DAGSTER_HOME / EYT_SLATE export lines").set_defaults(func=cmd_env)
    bench = sub.add_parser(
        "bench",
        help="measure how close a run comes to the latency bound, per stage",
        description="Start a localhost OpenAI-compatible server answering after --latency seconds, put every "
        "EYT-Bench role on it (each model with --concurrency as max_concurrency), run `eyt run "
        "--no-speech` in a fresh data dir, then again at latency 0, and print per stage: network calls, "
        "wall times, the part the latency adds, the latency-bound ideal and the ratio. It reports as it goes: "
        "the run it starts and the lines `eyt run` prints. See docs/throughput.md.",
    )
    bench.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per request (0.2)")
    bench.add_argument(
        "--pool",
        action="append",
        help=f"a fixture pool (repeatable; default both of the papers': {', '.join(PAPER_POOLS)})",
    )
    bench.add_argument("--dialogues", type=int, default=16, help="dialogues_per_pool (16)")
    bench.add_argument("--t-max", type=int, default=10, help="t_max (10)")
    bench.add_argument("--targets", type=int, default=1, help="remote targets (1)")
    bench.add_argument("--judges", type=int, default=1, help="remote judges (1)")
    bench.add_argument("--concurrency", type=int, default=32, help="max_concurrency of every model (32)")
    bench.add_argument("--reports", action="store_true", help="also materialise the reports (no model calls)")
    bench.add_argument(
        "--speech",
        action="append",
        metavar="SUBSCALE",
        help="also build this SpeechEQ subscale and evaluate it with a remote audio target (repeatable)",
    )
    bench.add_argument("--no-zero", action="store_true", help="skip the run at latency 0")
    bench.add_argument("--parallel", type=int, help="eyt run --parallel N (default: eyt run's)")
    bench.add_argument("--instance-yaml", help="a dagster.yaml for the runs' instance (e.g. other pool limits)")
    bench.add_argument("--keep", help="keep the data dirs (latency-*) under this directory")
    bench.add_argument("--json", help="also write the figures to this JSON file")
    bench.set_defaults(func=cmd_bench)
    dev = sub.add_parser("dev", help="start the Dagster UI on this project's instance")
    dev.add_argument("--port", type=int, default=3000)
    dev.add_argument(
        "--automation",
        action="store_true",
        help="start the automation sensor `eyt_automation` running, so the daemon keeps the slate's "
        "partitions up to date by itself (docs/refresh.md); without it, switch it on in the UI",
    )
    dev.set_defaults(func=cmd_dev)
    view = sub.add_parser("view", help="a local read-only web explorer over the warehouse")
    view.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port to serve on (default: the port of EYT_VIEW_URL, 8765, when free, else a free one; 0: a free one)",
    )
    view.add_argument("--host", default="127.0.0.1", help="the address to serve on (default 127.0.0.1)")
    view.add_argument(
        "--export",
        metavar="DIR",
        help="write a static copy of the explorer (a selection of it) to DIR and exit, no server: open "
        "DIR/index.html from file:// (docs/explorer.md, Static export)",
    )
    view.add_argument("--target", action="append", help="with --export: this target only (repeatable; default all)")
    view.add_argument("--pool", action="append", help="with --export: this pool only (repeatable; default all)")
    view.add_argument("--force", action="store_true", help="with --export: replace an earlier export in DIR")
    view.set_defaults(func=cmd_view)
    from eyt_dagster.ops.annotate_cli import add_annotate_parser

    add_annotate_parser(sub)
    args = parser.parse_args(argv)
    if getattr(args, "progress_every", None) is not None:  # read by the display (eyt_dagster/ops/progress_display.py)
        os.environ[env_settings.PROGRESS_EVERY.name] = f"{args.progress_every:g}"
    from eyt_dagster.ops.environment import EnvironmentFault, check_dagster_home, check_writable, environment_fault

    # its workers' view updates do not warn about each other
    os.environ[env_settings.COMMAND_PID.name] = str(os.getpid())
    from eyt_dagster.ops.profiling import start_if_asked

    start_if_asked("eyt")  # EYT_PROFILE_DIR: this process under cProfile (its workers profile themselves)

    try:
        check_dagster_home(data_dir())
        if args.command in WRITING_COMMANDS:
            check_writable(data_dir())
        return args.func(args)
    except EnvironmentFault as exc:
        print(f"eyt: {exc}", file=sys.stderr)
        return 2
    except (SlateError, SettingError) as exc:  # SettingError: an environment variable with a value it does not take
        print(f"eyt: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the runs' own lines say what was interrupted
        print("eyt: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a read-only or full disk met later: one line, not a traceback
        line = environment_fault(exc, data_dir())
        if line is None:
            raise
        print(f"eyt: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
