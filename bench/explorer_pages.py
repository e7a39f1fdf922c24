"""How long each page of `eyt view` takes on a large warehouse. Not a test: run it by hand.

It writes a synthetic warehouse into a temporary data directory (every target plays the same 65 ChatSEEDs of each
pool, `--turns` turns each, judged by `--judges` judges; a leaderboard row per target x pool; a few human
annotations; a call cache with a ledger row and a reply for every call such a run makes), starts `eyt view` on it
as a subprocess, and times HTTP GETs of each page kind from this process: the leaderboard, a cell's dialogues
(page 1 and its last page), one dialogue, two and five targets side by side, two targets' paired differences, the
judges' disagreements of a cell and one call. Per page it prints the min, median and max over `--reps` requests
(after one request to warm up) and whether the median is under the budget of 300 ms; with several `--targets`
sizes it then prints each page's median per size, to show how page time grows with the number of targets.

    python bench/explorer_pages.py                          # 10, 30 and 100 targets x 2 pools x 65 dialogues
    python bench/explorer_pages.py --targets 100 --reps 10
    python bench/explorer_pages.py --targets 5 --keep /tmp/wh  # keep the data directory (then `eyt view` it)

The SpeechEQ item page is not timed: the synthetic warehouse holds no SpeechEQ tables.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlencode

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eyt_dagster.eyt_bench.taxonomy import POOLS, SUBSCORE_COLUMNS  # noqa: E402
from eyt_dagster.table_registry import catalog  # noqa: E402
from resources.models.call_cache import CallCache  # noqa: E402
from resources.storage.warehouse import store_frame  # noqa: E402

BUDGET_MS = 300.0
DIALOGUES = 65
TURNS = 6
JUDGES = ("judge-a", "judge-b", "judge-c")
SIMULATOR = "sim-a"
SIZES = (10, 30, 100)


def target_name(k: int) -> str:
    return f"target-{k:03d}"


def seed_name(pool: str, i: int) -> str:
    return f"{pool}:p{i:03d}"


def call_key(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def synthesise(
    data: Path,
    n_targets: int,
    pools: tuple[str, ...] = POOLS,
    n_dialogues: int = DIALOGUES,
    n_turns: int = TURNS,
    judges: tuple[str, ...] = JUDGES,
    seed: int = 0,
) -> dict[str, int]:
    """Write the warehouse and call cache under `data`; return each table's row count (and the ledger's)."""
    rng = np.random.default_rng(seed)
    targets = [target_name(k) for k in range(n_targets)]
    seeds = seed_frame(pools, n_dialogues)
    turns, similarity, verdicts, finals, scores = dialogue_frames(targets, pools, n_dialogues, n_turns, judges, rng)
    board = (
        scores.groupby(["target", "pool"], as_index=False)
        .agg(
            n_dialogues=("seed_id", "size"),
            drift=("drift", "mean"),
            ficr=("completed", "mean"),
            satisfaction=("satisfaction", "mean"),
            empathy=("empathy", "mean"),
            persona=("persona", "mean"),
            anthropomorphic=("anthropomorphic", "mean"),
            mean_turns=("n_turns", "mean"),
        )
        .assign(family="chat", is_baseline=False, n_errors=0, explicit_acc=1.0, latent_acc=1.0, emotion_acc=0.8)
        .assign(emotion_macro_f1=0.5)
    )
    first = (targets[0], pools[0], seed_name(pools[0], 0))
    annotations = pd.DataFrame(
        [
            dict(annotator=a, target=first[0], pool=first[1], seed_id=first[2], turn=n, dimension=d, score=3.5)
            for a in ("ann1", "ann2")
            for n in range(1, n_turns + 1)
            for d in ("empathy", "persona", "anthropomorphic")
        ]
    )
    frames = {
        "dialogue.chat_seeds": (seeds, ["pool"]),
        "dialogue.dialogue_turns": (turns, ["pool", "target"]),
        "dialogue.intent_similarity": (similarity, ["pool", "target"]),
        "dialogue.judge_verdicts": (verdicts, ["pool", "target"]),
        "dialogue.final_intent_verdicts": (finals, ["pool", "target"]),
        "dialogue.dialogue_scores": (scores, ["pool", "target"]),
        "dialogue.leaderboard": (board, []),
        "dialogue.human_annotations": (annotations, []),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, rows, partition_by=by, catalog=catalog())
    counts = {table: len(rows) for table, (rows, _) in frames.items()}
    counts["ledger"] = write_calls(data, seeds, turns, verdicts, finals)
    return counts


def seed_frame(pools: tuple[str, ...], n_dialogues: int) -> pd.DataFrame:
    """The chat_seeds rows: `n_dialogues` ChatSEEDs per pool, every target plays them all."""
    return pd.DataFrame(
        [
            dict(
                seed_id=seed_name(p, i),
                pool=p,
                persona_id=f"p{i:03d}",
                persona_text=f"persona {i} of {p}: " + "a long description of someone. " * 12,
                topic="work",
                initial_emotion="anxiety",
                initial_explicit_intent="seeking_advice",
                initial_latent_intent="need_for_security",
                initial_intent_description=f"initial intent of {i}",
                final_intent=f"final intent of {i}",
                first_query=f"first query of {i}",
                raw_reply=json.dumps({"seed": i, "pool": p}),
                simulator=SIMULATOR,
                prompt_hash="seedhash",
            )
            for p in pools
            for i in range(n_dialogues)
        ]
    )


def dialogue_frames(
    targets: list[str],
    pools: tuple[str, ...],
    n_dialogues: int,
    n_turns: int,
    judges: tuple[str, ...],
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The dialogue tables of `targets` x `pools` (each target plays the pool's `n_dialogues` ChatSEEDs for
    `n_turns` turns): dialogue_turns, intent_similarity, judge_verdicts, final_intent_verdicts and a
    dialogue_scores with the columns the explorer shows."""
    cells = [(t, p) for p in pools for t in targets]
    dialogues = [(t, p, seed_name(p, i)) for t, p in cells for i in range(n_dialogues)]
    keys = [(t, p, s, n) for t, p, s in dialogues for n in range(1, n_turns + 1)]
    frame = pd.DataFrame(keys, columns=["target", "pool", "seed_id", "turn"])
    emotions = np.where(rng.random(len(frame)) < 0.8, "anxiety", "joy")
    turns = frame.assign(
        user_text=[f"user message {n} of {s}: " + "some words " * 20 for _, _, s, n in keys],
        gold_explicit_intent="seeking_advice",
        pred_explicit_intent="seeking_advice",
        gold_latent_intent="need_for_security",
        pred_latent_intent="need_for_security",
        gold_emotion="anxiety",
        pred_emotion=emotions,
        gold_intent_description="gold intent",
        pred_intent_description=[f"predicted intent {n}" for *_, n in keys],
        progress="in_progress",
        response_text=[f"reply {n} of {t} to {s}: " + "a considered answer " * 25 for t, _, s, n in keys],
        complete=True,
        simulator=SIMULATOR,
        target_model=frame["target"],
        prompt_hash="turnhash",
    )
    similarity = frame.assign(cos_gold_pred=rng.random(len(frame)), cos_pred_final=rng.random(len(frame)))
    vkeys = [(*k, j) for k in keys for j in judges]
    verdicts = pd.DataFrame(vkeys, columns=["target", "pool", "seed_id", "turn", "judge"])
    grid = rng.choice([0.0, 0.5, 1.0], size=(len(verdicts), len(SUBSCORE_COLUMNS)), p=[0.15, 0.35, 0.5])
    verdicts = pd.concat([verdicts, pd.DataFrame(grid, columns=list(SUBSCORE_COLUMNS))], axis=1).assign(
        rationale=[
            f"{j} on turn {n}: " + "the reply names the feeling and offers a next step. " * 6 for *_, n, j in vkeys
        ],
        raw_reply=[json.dumps({"t": t, "s": s, "n": n, "j": j}) for t, _, s, n, j in vkeys],
        judge_model="judge-model",
    )
    fkeys = [(*d, j) for d in dialogues for j in judges]
    finals = pd.DataFrame(fkeys, columns=["target", "pool", "seed_id", "judge"]).assign(
        completed=rng.random(len(fkeys)) < 0.6,
        satisfaction=rng.integers(1, 6, len(fkeys)),
        rationale="the final intent was reached",
        raw_reply=[json.dumps({"final": True, "t": t, "s": s, "j": j}) for t, _, s, j in fkeys],
        judge_model="judge-model",
    )
    n = len(dialogues)
    scores = pd.DataFrame(dialogues, columns=["target", "pool", "seed_id"]).assign(
        n_turns=n_turns,
        explicit_correct=n_turns,
        latent_correct=n_turns,
        emotion_correct=rng.integers(0, n_turns + 1, n),
        drift=rng.random(n),
        directional_alignment=rng.random(n) - 0.5,
        completed=rng.random(n) < 0.6,
        satisfaction=rng.random(n) * 100,
        empathy=rng.random(n) * 100,
        persona=rng.random(n) * 100,
        anthropomorphic=rng.random(n) * 100,
        n_judged_turns=n_turns,
        n_failed_verdicts=0,
        n_failed_final_verdicts=0,
        alpha=0.1,
        judge_combine="mean",
    )
    return turns, similarity, verdicts, finals, scores


def write_calls(
    data: Path, seeds: pd.DataFrame, turns: pd.DataFrame, verdicts: pd.DataFrame, finals: pd.DataFrame
) -> int:
    """A reply and a ledger row for every call the warehouse's rows came from (purposes as
    eyt_dagster/eyt_bench/chat_roles.py names them), written in bulk into the call cache's own schema."""
    path = data / "cache" / "model_calls.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with CallCache(path) as cache:
        len(cache)  # creates the schema
    calls: list[tuple[str, str, str, str]] = []  # (role, model id, purpose, reply)
    for s, raw in zip(seeds["seed_id"], seeds["raw_reply"]):
        calls.append(("simulator", SIMULATOR, f"chat_seed:{s}", raw))
    for t, s, n, labels, reply in zip(
        turns["target"], turns["seed_id"], turns["turn"], turns["pred_emotion"], turns["response_text"]
    ):
        calls.append(("target", t, f"perceive:{n}", json.dumps({"emotion": labels})))
        calls.append(("target", t, f"respond:{n}", reply))
        if n > 1:
            calls.append(("simulator", SIMULATOR, f"simulate:{s}:{n}", json.dumps({"user_text": f"{t} {s} {n}"})))
    for j, s, n, raw in zip(verdicts["judge"], verdicts["seed_id"], verdicts["turn"], verdicts["raw_reply"]):
        calls.append(("judge", j, f"judge_turn:{s}:{n}", raw))
    for j, s, raw in zip(finals["judge"], finals["seed_id"], finals["raw_reply"]):
        calls.append(("judge", j, f"judge_final:{s}", raw))
    stamp = "2025-01-01T00:00:00+00:00"
    replies, ledger = {}, []
    for role, model, purpose, reply in calls:
        key = call_key(model, purpose, reply)
        replies[key] = (key, f"{model}-model", reply, 120, 30, 0.8, "stop", stamp)
        ledger.append((stamp, "run-1", role, model, purpose, key, 0, 120, 30, 0.001, 0.8, 0, 1, None, None))
    con = sqlite3.connect(path)
    with con:
        con.executemany(
            "INSERT OR IGNORE INTO replies (key, model, text, tokens_in, tokens_out, latency_s, finish_reason,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            replies.values(),
        )
        con.executemany(
            "INSERT INTO ledger (ts, run_id, role, model_id, purpose, cache_key, cached, tokens_in, tokens_out, "
            "cost_usd, latency_s, retries, ok, error, failure) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ledger,
        )
    con.close()
    return len(ledger)


def pages(n_targets: int, n_dialogues: int) -> dict[str, str]:
    """The URLs timed, one per page kind."""
    pool, a, b = POOLS[0], target_name(0), target_name(1)
    sid = seed_name(pool, 7)
    five = [target_name(k) for k in range(min(5, n_targets))]
    last = -(-n_dialogues // 50)
    key = call_key(a, "respond:1", next_reply(a, sid))
    return {
        "leaderboard": "/",
        "dialogues, page 1": "/dialogues?" + urlencode({"target": a, "pool": pool, "sort": "empathy"}),
        "dialogues, last page": "/dialogues?" + urlencode({"target": a, "pool": pool, "sort": "empathy", "page": last}),
        "one dialogue": f"/dialogue/{quote(a, safe='')}/{quote(sid, safe='')}",
        "compare 2": "/compare?" + urlencode([("seed", sid), ("target", a), ("target", b)]),
        f"compare {len(five)}": "/compare?" + urlencode([("seed", sid), *(("target", t) for t in five)]),
        "pairs": "/pairs?" + urlencode({"pool": pool, "a": a, "b": b, "metric": "empathy"}),
        "judges": "/judges?" + urlencode({"target": a, "pool": pool}),
        "one call": f"/call/{key}",
    }


def next_reply(target: str, sid: str) -> str:
    return f"reply 1 of {target} to {sid}: " + "a considered answer " * 25


class Viewer:
    """`eyt view` on a data directory, as a subprocess on a free port."""

    def __init__(self, data: Path) -> None:
        env = {**os.environ, "EYT_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "eyt_dagster.ops.cli", "view"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.search(r"http://[^/]+/", line)
        if not found:
            self.process.terminate()
            raise RuntimeError(f"eyt view did not print its URL: {line!r}")
        self.url = found.group(0).rstrip("/")

    def get(self, path: str) -> tuple[int, float]:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(self.url + path, timeout=60) as answer:
                answer.read()
                status = answer.status
        except urllib.error.HTTPError as error:
            status = error.code
        return status, (time.perf_counter() - started) * 1000

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def time_pages(data: Path, urls: dict[str, str], reps: int) -> dict[str, list[float]]:
    viewer = Viewer(data)
    try:
        out = {}
        for name, url in urls.items():
            status, _ = viewer.get(url)  # warm-up: the first request imports what the page needs
            if status != 200:
                raise RuntimeError(f"{name}: {url} answered {status}")
            out[name] = [viewer.get(url)[1] for _ in range(reps)]
        return out
    finally:
        viewer.stop()


def run(n_targets: int, reps: int, keep: Path | None, n_dialogues: int, n_turns: int) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="eyt-explorer-bench-"))
    data = keep or folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        counts = synthesise(data, n_targets, n_dialogues=n_dialogues, n_turns=n_turns)
        made = time.perf_counter() - started
        shown = ", ".join(f"{t.split('.')[-1]} {c:,}" for t, c in counts.items())
        print(
            f"\n{n_targets} targets x {len(POOLS)} pools x {n_dialogues} dialogues x {n_turns} turns, {len(JUDGES)} judges"
        )
        print(f"  rows: {shown} (written in {made:.1f} s)")
        timings = time_pages(data, pages(n_targets, n_dialogues), reps)
        print(f"  {'page':<22} {'min ms':>8} {'median':>8} {'max ms':>8}  under {BUDGET_MS:.0f} ms")
        for name, ms in timings.items():
            median = statistics.median(ms)
            verdict = "yes" if median < BUDGET_MS else "NO"
            print(f"  {name:<22} {min(ms):>8.1f} {median:>8.1f} {max(ms):>8.1f}  {verdict}")
        return {name: statistics.median(ms) for name, ms in timings.items()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=list(SIZES), help="warehouse sizes, in targets")
    parser.add_argument("--dialogues", type=int, default=DIALOGUES, help="dialogues per target and pool")
    parser.add_argument("--turns", type=int, default=TURNS, help="turns per dialogue")
    parser.add_argument("--reps", type=int, default=7, help="timed requests per page")
    parser.add_argument("--keep", type=Path, help="write the (last) warehouse here and keep it")
    args = parser.parse_args(argv)
    medians = {n: run(n, args.reps, args.keep, args.dialogues, args.turns) for n in args.targets}
    if len(medians) > 1:
        print("\nmedian ms per page, by number of targets")
        sizes = list(medians)
        print(f"  {'page':<22}" + "".join(f"{n:>9}" for n in sizes))
        for name in medians[sizes[0]]:
            print(f"  {name:<22}" + "".join(f"{medians[n].get(name, float('nan')):>9.1f}" for n in sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
