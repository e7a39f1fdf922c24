"""What a team does to correct the judge with human labels, done by the tests as a user would: `eyt annotate export`
draws a sheet, simulated people fill in a copy each, `eyt annotate import` reads both back.

The simulated people are the two annotators of the slate's CSV (a1, a2): their sheet labels replace their CSV rows
for the same turns, as an import does. Their scores are invented from the judge's own so the corrected figures
differ from the judge's in known ways: they find the judge half a point too kind on every dimension, except on
Empathy, where they give the reflective baseline's formulaic sympathy almost nothing (0 or 0.5 a turn) and the terse
baseline's plain answers a point more than the judge. So under correction the two baselines swap places on Empathy
in every pool and keep their order elsewhere. Completion is the judge's; satisfaction one point lower. The second
person adds half a point on even turns, so the two agree well but not perfectly.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

from eyt_dagster.eyt_bench.dialogue_scoring import final_verdicts, turn_dimension_scores
from eyt_dagster.ops import cli

PEOPLE = ("a1", "a2")
LOW_EMPATHY_TARGET = "reflective-baseline"


def run_eyt(args: list[str]) -> str:
    """`eyt ARGS` in this process; raises with what it printed unless it exits with 0."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    printed = out.getvalue() + err.getvalue()
    if code != 0:
        raise AssertionError(f"eyt {' '.join(args)} exited {code}:\n{printed}")
    return printed


def _half(x: float) -> float:
    return float(np.clip(np.round(x * 2) / 2, 0.0, 5.0))


def person_score(person: str, target: str, field: str, turn: int, judge: float) -> float:
    """One simulated person's score for a turn's dimension, from the judge's (0-5)."""
    if field == "empathy":
        base = (turn % 2) * 0.5 if target == LOW_EMPATHY_TARGET else judge + 1.0
    else:
        base = judge - 0.5
    extra = 0.5 if person == PEOPLE[1] and turn % 2 == 0 else 0.0
    return _half(base + extra)


def fill_sheets(warehouse: Path, export_dir: Path, out_dir: Path) -> list[Path]:
    """One filled copy of export_dir/sheet.csv per simulated person, written to out_dir."""
    manifest = json.loads((export_dir / "manifest.json").read_text())
    items = {i["item"]: i for i in manifest["items"]}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        dims = turn_dimension_scores(con.execute("SELECT * FROM dialogue.judge_verdicts").df())
        finals = final_verdicts(con.execute("SELECT * FROM dialogue.final_intent_verdicts").df())
    dims = dims.set_index(["target", "pool", "seed_id", "turn"])
    finals = finals.set_index(["target", "pool", "seed_id"])
    with (export_dir / "sheet.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    written = []
    for person in PEOPLE:
        filled = []
        for row in rows:
            item = items[row["item"]]
            key = (item["target"], item["pool"], item["seed_id"])
            row = {**row, "annotator": person}
            if row["turn"] == "final":
                verdict = finals.loc[key]
                row["completed"] = str(int(bool(verdict["completed"])))
                row["satisfaction"] = str(int(max(1, round(float(verdict["satisfaction_1_5"])) - 1)))
            else:
                turn = int(row["turn"])
                judge = dims.loc[(*key, turn)]
                for field in ("empathy", "persona", "anthropomorphic"):
                    row[field] = f"{person_score(person, item['target'], field, turn, float(judge[field])):g}"
            filled.append(row)
        path = out_dir / f"sheet-{person}.csv"
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(filled)
        written.append(path)
    return written


def label_a_sample(slate_path: Path, data: Path, per_cell: int) -> dict[str, str]:
    """Export a sheet of per_cell dialogues per target x pool, fill it as PEOPLE, import both copies; returns what
    each command printed."""
    export_dir = data.parent / "annotation-export"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EYT_DATA_DIR", str(data))
        mp.setenv("EYT_SLATE", str(slate_path))
        mp.delenv("DAGSTER_HOME", raising=False)
        exported = run_eyt(["annotate", "export", "--per-cell", str(per_cell), "--out", str(export_dir)])
        sheets = fill_sheets(data / "eyt.duckdb", export_dir, data.parent)
        imported = run_eyt(["annotate", "import", *map(str, sheets)])
    return {"export": exported, "import": imported}
