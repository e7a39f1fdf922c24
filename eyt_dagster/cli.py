"""`eyt`: run the benchmark through the Dagster instance from a terminal or cron.

    eyt run                 materialise the whole EYT graph for the slate (every pool, target and report)
    eyt run --target T      only that target's partitions (plus the pools they read and the reports)
    eyt run --subscale S    only that subscale's SpeechEQ items (--no-speech: no SpeechEQ at all)
    eyt register-targets    add the slate's targets as partitions of their benchmarks' dynamic target sets
    eyt report --out FILE   write a self-contained HTML report of every table (no UI needed to read it)
    eyt speech-export DIR   write the built SpeechEQ items in the released layout (<subscale>/<id>/...)
    eyt env                 print the environment lines for other Dagster commands (DAGSTER_HOME)
    eyt dev                 start the Dagster UI (`dagster dev`) on this project's instance

Runs go through the real Dagster instance (DAGSTER_HOME), so `dagster dev` shows every one of them.
Exit status is non-zero when any run fails.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import time

from eyt_dagster.config import SlateError, load_slate, slate_path_from_env
from eyt_dagster.instance import PROJECT_ROOT, ensure_dagster_home, register_targets
from eyt_dagster.partitions import partition_tags
from eyt_dagster.speech.eq import SUBSCALES


# The terminal shows one line per run; every event is still stored in the instance for the UI.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _job(name: str):  # noqa: ANN202
    from eyt_dagster.definitions import defs

    return defs.resolve_job_def(name)


def pools_job():  # noqa: ANN201 - module-level factories so the jobs are reconstructable
    return _job("eyt_pools")


def dialogues_job():  # noqa: ANN201
    return _job("eyt_dialogues")


def reports_job():  # noqa: ANN201
    return _job("eyt_reports")


def speech_job():  # noqa: ANN201
    return _job("speech_build")


def speech_eval_job():  # noqa: ANN201
    return _job("speech_eval")


def speech_reports_job():  # noqa: ANN201
    return _job("speech_reports")


def seq_reports_job():  # noqa: ANN201
    return _job("seq_reports")


def _execute(factory, instance, tags: dict[str, str], label: str) -> bool:  # noqa: ANN001
    from dagster import execute_job, reconstructable

    started = time.monotonic()
    with execute_job(reconstructable(factory), instance=instance, tags=tags, raise_on_error=False,
                     run_config=QUIET) as result:
        ok = result.success
        print(f"  {'ok    ' if ok else 'FAILED'} {label:<48} {time.monotonic() - started:6.1f} s  run {result.run_id[:8]}")
        if not ok:
            for event in result.all_events:
                if event.is_failure and event.step_key:
                    print(f"         step {event.step_key}: {event.message}")
    return ok


def cmd_run(args: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    slate = load_slate(slate_path_from_env())
    ensure_dagster_home()
    instance = DagsterInstance.get()
    register_targets(instance, slate)
    unknown = sorted(set(args.target or []) - {t.id for t in slate.targets})
    if unknown:
        print(f"eyt: target(s) {unknown} are not in the slate {slate_path_from_env()}", file=sys.stderr)
        return 2
    targets = [t.id for t in slate.eyt_targets if not args.target or t.id in args.target]
    speech_targets = [t.id for t in slate.speech_targets if not args.target or t.id in args.target]
    pools = args.pool or list(slate.pools)
    wrong = sorted(set(args.subscale or []) - set(SUBSCALES))
    if wrong:
        print(f"eyt: unknown subscale(s) {wrong}; the EQ-i subscales are {sorted(SUBSCALES)}", file=sys.stderr)
        return 2
    print(f"slate '{slate.name}' ({slate_path_from_env()}): EYT-Bench targets {targets}, pools {pools}; "
          f"SpeechEQ targets {speech_targets}")
    started, ok = time.monotonic(), True
    for pool in pools if targets else []:
        ok &= _execute(pools_job, instance, {"dagster/partition": pool}, f"eyt_pools [{pool}]")
    for target in targets:
        for pool in pools:
            ok &= _execute(dialogues_job, instance, partition_tags(target, pool), f"eyt_dialogues [{pool}|{target}]")
    if not args.no_reports:
        ok &= _execute(reports_job, instance, {}, "eyt_reports")
    if not args.no_speech:
        for slug in args.subscale or sorted(SUBSCALES):
            ok &= _execute(speech_job, instance, {"dagster/partition": slug}, f"speech_build [{slug}]")
        for target in speech_targets:
            ok &= _execute(speech_eval_job, instance, {"dagster/partition": target}, f"speech_eval [{target}]")
        ok &= _execute(speech_reports_job, instance, {}, "speech_reports")
        if speech_targets:
            ok &= _execute(seq_reports_job, instance, {}, "seq_reports")
    print(f"{'done' if ok else 'FAILED'} in {time.monotonic() - started:.1f} s; warehouse: {os.environ.get('EYT_DATA_DIR', 'data')}/eyt.duckdb")
    if ok and not args.no_reports:
        _print_leaderboard()
    if ok and not args.no_speech:
        _print_speech_summary()
    return 0 if ok else 1


def _print_leaderboard() -> None:
    from eyt_dagster.leaderboard import BASELINE_NOTE
    from resources.warehouse import connect

    with connect() as con:
        board = con.execute(
            "SELECT pool, target, is_baseline, n_dialogues, round(explicit_acc, 3) AS explicit_acc, "
            "round(emotion_acc, 3) AS emotion_acc, round(drift, 3) AS drift, round(ficr, 3) AS ficr, "
            "round(satisfaction, 1) AS sat, round(empathy, 1) AS empathy, round(persona, 1) AS persona, "
            "round(anthropomorphic, 1) AS anthro, round(mean_turns, 2) AS turns "
            "FROM dialogue.leaderboard ORDER BY pool, target"
        ).df()
    print(board.to_string(index=False))
    if board["is_baseline"].any():
        print(f"\nis_baseline = True marks an {BASELINE_NOTE}: a reference point, not a model's evaluation.")


def cmd_report(args: argparse.Namespace) -> int:
    import duckdb

    from eyt_dagster.prompts import PROMPT_KEYS, prompt_hash
    from eyt_dagster.report_html import render_report, write_report
    from eyt_dagster.report_sections import REPORT_TABLES, build_sections
    from resources.warehouse import connect, warehouse_path

    slate_path = slate_path_from_env()
    load_slate(slate_path)  # a broken slate fails here with the field named
    if not warehouse_path().exists():
        print(f"eyt: no warehouse at {warehouse_path()}; run `eyt run` first", file=sys.stderr)
        return 2
    names = [name for name, *_ in REPORT_TABLES] + ["leaderboard_intervals"]
    tables = {}
    with connect() as con:
        for name in names:
            try:
                tables[name] = con.execute(f"SELECT * FROM dialogue.{name}").df()
            except duckdb.CatalogException:
                print(f"  (table dialogue.{name} is not materialised yet; left out)")
    baselines = sorted(set(tables.get("leaderboard", {}).get("target", [])) & {
        t.id for t in load_slate(slate_path).targets if t.is_baseline})
    html = render_report(
        build_sections(tables), title="EYT-Bench report", generated_at=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        slate_yaml=slate_path.read_text(), prompt_hashes={key: prompt_hash(key) for key in PROMPT_KEYS},
        baseline_targets=baselines,
    )
    print(f"wrote {write_report(args.out, html)}")
    return 0


def _print_speech_summary() -> None:
    import duckdb

    from resources.warehouse import connect

    with connect() as con:
        summary = con.execute(
            "SELECT subscale, scenarios, items, tones_rejected_bland, pairs_regenerated, pairs_discarded, "
            "round(mean_total_passed, 2) AS mean_contrast FROM speech.speech_build_report ORDER BY subscale"
        ).df()
        generators = ", ".join(r[0] for r in con.execute("SELECT DISTINCT generator FROM speech.scenarios").fetchall())
    print(f"\nSpeechEQ items (text generator: {generators}; 'template-baseline' is an embedded baseline):")
    print(summary.to_string(index=False))
    try:
        with connect() as con:
            board = con.execute(
                "SELECT condition, target, is_baseline, n_items, round(acc1, 3) AS acc1, round(acc2, 3) AS acc2, "
                "round(acc_traj, 3) AS acc_traj, round(seq, 1) AS seq, round(parse_failure_rate, 3) AS parse_fail, "
                "round(mean_latency_s, 4) AS latency_s FROM speech.seq_leaderboard ORDER BY condition, seq DESC"
            ).df()
    except duckdb.CatalogException:
        return
    print("\nSpeechEQ forced choice (SEQ is relative to the cohort of targets listed; chance = 0.5 / 0.5 / 0.25):")
    print(board.to_string(index=False))
    if board["is_baseline"].any():
        print("\nis_baseline = True marks an embedded baseline chooser (or chance): a reference point, not a model's "
              "evaluation.")


def cmd_speech_export(args: argparse.Namespace) -> int:
    import duckdb

    from eyt_dagster.speech.layout import item_from_rows
    from resources.speech_layout import write_released
    from resources.warehouse import connect

    try:
        with connect() as con:
            rows = con.execute("SELECT * FROM speech.eq_items ORDER BY subscale, dataset_id").df()
    except (duckdb.CatalogException, duckdb.IOException):
        print("eyt: no speech.eq_items table yet; run `eyt run` (or the speech_build job) first", file=sys.stderr)
        return 2
    written = write_released([item_from_rows(row) for row in rows.to_dict("records")], Path(args.dir))
    print(f"wrote {len(written)} item folder(s) under {args.dir}")
    return 0


def cmd_register(_: argparse.Namespace) -> int:
    from dagster import DagsterInstance

    ensure_dagster_home()
    new = register_targets(DagsterInstance.get())
    print(f"registered {len(new)} new target partition(s): {new}" if new else "all slate targets are registered")
    return 0


def cmd_env(_: argparse.Namespace) -> int:
    home = ensure_dagster_home()
    print(f"export DAGSTER_HOME={home}")
    print(f"export EYT_SLATE={slate_path_from_env()}")
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    ensure_dagster_home()
    command = ["dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-p", str(args.port)]
    return subprocess.call(command, cwd=PROJECT_ROOT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eyt", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialise the EYT graph for the slate")
    run.add_argument("--target", action="append", help="only this target (repeatable)")
    run.add_argument("--pool", action="append", help="only this pool (repeatable)")
    run.add_argument("--no-reports", action="store_true", help="skip the leaderboard and analysis tables")
    run.add_argument("--no-speech", action="store_true", help="skip building the SpeechEQ items")
    run.add_argument("--subscale", action="append", help="only this EQ-i subscale's SpeechEQ items (repeatable)")
    run.set_defaults(func=cmd_run)
    report = sub.add_parser("report", help="write a self-contained HTML report")
    report.add_argument("--out", default="eyt_report.html", help="output file (default eyt_report.html)")
    report.set_defaults(func=cmd_report)
    export = sub.add_parser("speech-export", help="write SpeechEQ items in the released layout")
    export.add_argument("dir", help="output directory")
    export.set_defaults(func=cmd_speech_export)
    sub.add_parser("register-targets", help="add slate targets as dynamic partitions").set_defaults(func=cmd_register)
    sub.add_parser("env", help="print DAGSTER_HOME / EYT_SLATE export lines").set_defaults(func=cmd_env)
    dev = sub.add_parser("dev", help="start the Dagster UI on this project's instance")
    dev.add_argument("--port", type=int, default=3000)
    dev.set_defaults(func=cmd_dev)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SlateError as exc:
        print(f"eyt: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
