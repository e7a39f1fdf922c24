"""`eyt tables`: every paper table with rows from the warehouse, the same cells in LaTeX, Markdown and CSV, equal
to the warehouse tables, baselines marked, a provenance footnote, and byte-identical on a rerun; a table with no
rows is not written, and the command says why it has none; by default the files go under the data directory."""

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from eyt_dagster.ops.report_commands import write_paper_tables
from eyt_dagster.reporting import paper_tables as pt
from eyt_dagster.reporting import table_formats as tf
from eyt_dagster.slate import load_slate


@pytest.fixture(scope="module")
def exported(warehouse, tmp_path_factory):
    con, _ = warehouse
    database = Path(
        con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    )
    slate = load_slate(database.parent.parent / "slate.yaml")
    out = tmp_path_factory.mktemp("tables")
    exports = {fmt: write_paper_tables(database, slate, out / fmt, fmt) for fmt in tf.FORMATS}
    assert len({tuple(e.empty) for e in exports.values()}) == 1  # the same tables empty in every format
    return con, database, slate, out, exports["markdown"].empty


# The session warehouse's empty tables: its slate declares no reasoning pair, no SpeechEQ target reads the oracle
# text, and it names no human ranking of the SpeechEQ targets.
EMPTY = {
    "eyt_thinking": "it needs a reasoning pair (the slate's reasoning_pairs) whose targets ran",
    "seq_oracle": "no SpeechEQ target ran the oracle text check (a target with speech_input: oracle_text)",
    "seq_human": "it needs a human ranking of the SpeechEQ targets (the slate's speech.evaluation.human_ranking)",
}


def markdown_cells(text: str) -> pd.DataFrame:
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    split = [[c.strip().replace("\\|", "|") for c in line[2:-2].split(" | ")] for line in rows]
    return pd.DataFrame(split[2:], columns=split[0])


def latex_cells(text: str) -> pd.DataFrame:
    unescape = {v: k for k, v in tf.LATEX_ESCAPES.items()}
    body = text.split("\\toprule\n", 1)[1].split("\\bottomrule", 1)[0]
    lines = [line.removesuffix(" \\\\") for line in body.splitlines() if line and line != "\\midrule"]

    def plain(cell: str) -> str:
        for escaped in sorted(unescape, key=len, reverse=True):
            cell = cell.replace(escaped, unescape[escaped])
        return cell

    split = [[plain(c) for c in line.split(" & ")] for line in lines]
    return pd.DataFrame(split[1:], columns=split[0])


def csv_cells(text: str) -> pd.DataFrame:
    rows = list(csv.reader(io.StringIO(text)))
    return pd.DataFrame(rows[1:], columns=rows[0])


@pytest.mark.materialisation
def test_every_format_holds_the_same_cells(exported):
    _, _, _, out, empty = exported
    assert empty == EMPTY
    for fmt, extension in tf.FORMATS.items():  # an empty table has no file
        assert {p.stem for p in (out / fmt).iterdir() if p.suffix == extension} == set(pt.TABLES) - set(EMPTY), fmt
    for name in set(pt.TABLES) - set(EMPTY):
        md = markdown_cells((out / "markdown" / f"{name}.md").read_text())
        tex = latex_cells((out / "latex" / f"{name}.tex").read_text())
        table = csv_cells((out / "csv" / f"{name}.csv").read_text())
        assert list(md.columns) == list(tex.columns) == list(table.columns), name
        pd.testing.assert_frame_equal(md, tex, obj=name)
        pd.testing.assert_frame_equal(md, table, obj=name)


@pytest.mark.materialisation
def test_main_tables_equal_the_warehouse(exported):
    con, _, _, out, _ = exported
    md = markdown_cells((out / "markdown" / "eyt_subjective.md").read_text()).set_index("Model")
    board = con.execute("SELECT * FROM dialogue.leaderboard").df()
    bounds = con.execute("SELECT * FROM dialogue.leaderboard_intervals").df().set_index(["target", "pool", "metric"])
    assert len(md) == board["target"].nunique()
    for row in board.to_dict("records"):
        label = f"{row['target']} \u2020"  # every fixture EYT target is an embedded baseline
        pool = {"nemotron_usa": "Nemo.", "personamem_v2": "PM"}[row["pool"]]
        lo, hi = bounds.loc[(row["target"], row["pool"], "empathy"), ["ci_low", "ci_high"]]
        assert md.loc[label, f"{pool} Emp."] == f"{row['empathy']:.1f} [{lo:.1f}, {hi:.1f}]"
    seq = markdown_cells((out / "markdown" / "seq_main.md").read_text()).set_index("Model")
    board = con.execute("SELECT * FROM speech.seq_leaderboard WHERE condition = 'default'").df()
    assert len(seq) == len(board)
    for row in board.to_dict("records"):
        cell = seq.loc[f"{row['target']} \u2020"]
        if row["target"] != "chance":
            assert cell["Acc_traj"] == f"{row['acc_traj']:.3f} [{row['acc_traj_low']:.3f}, {row['acc_traj_high']:.3f}]"
        assert cell["SEQ"] == f"{row['seq']:.1f}"
    assert list(seq.index)[-1] == "chance \u2020"  # chance last


@pytest.mark.materialisation
def test_provenance_footnote_and_baseline_marks(exported):
    con, _, slate, out, _ = exported
    text = (out / "markdown" / "eyt_objective.md").read_text()
    hashes = set(con.execute("SELECT DISTINCT prompt_hash FROM dialogue.dialogue_turns").df()["prompt_hash"])
    hashes |= set(con.execute("SELECT DISTINCT prompt_hash FROM speech.slm_choices").df()["prompt_hash"])
    assert f"Slate {slate.name}, seed {slate.seed}" in text and "tables v" in text
    assert all(h in text for h in hashes)
    assert pt.BASELINE_FOOTNOTE in text and "\\dagger" in (out / "latex" / "eyt_objective.tex").read_text()
    assert "SEQ cohort (default condition): baselines_only" in text
    assert (out / "csv" / "PROVENANCE.txt").read_text().startswith(f"Slate {slate.name}")
    assert "20" + "26-" not in text  # no timestamp


@pytest.mark.materialisation
def test_rerun_is_byte_identical_and_equals_the_asset_export(exported, tmp_path):
    _, database, slate, out, _ = exported
    for fmt in tf.FORMATS:
        again = write_paper_tables(database, slate, tmp_path / fmt, fmt).written
        assert {p.name: p.read_bytes() for p in again} == {p.name: p.read_bytes() for p in (out / fmt).iterdir()}
    asset_dir = database.parent / "exports" / "markdown"  # what the reports/paper_tables asset wrote
    assert {p.name: p.read_bytes() for p in asset_dir.iterdir()} == {
        p.name: p.read_bytes() for p in (out / "markdown").iterdir()
    }


@pytest.mark.cli
def test_eyt_tables_command(exported, tmp_path):
    _, database, _, out, _ = exported
    env = {
        **os.environ,
        "EYT_DATA_DIR": str(database.parent),
        "EYT_SLATE": str(database.parent.parent / "slate.yaml"),
        "HF_HUB_OFFLINE": "1",
    }
    here = tmp_path / "cwd"
    here.mkdir()
    result = subprocess.run(
        [Path(sys.executable).parent / "eyt", "tables", "--format", "latex"],
        env=env,
        cwd=here,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # by default under the data directory, one folder per format, and the command says where; nothing in the
    # folder it was started from
    folder = (database.parent / "tables" / "latex").resolve()
    assert list(here.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.tex" for n in set(pt.TABLES) - set(EMPTY))
    assert f"wrote {folder / 'eyt_objective.tex'}" in result.stdout
    assert (folder / "eyt_objective.tex").read_bytes() == (out / "latex" / "eyt_objective.tex").read_bytes()
    # each empty table is named with why it has no rows
    for name, why in EMPTY.items():
        assert f"not written: {name}, no rows: {why}" in result.stdout, result.stdout
    assert (
        f"{len(pt.TABLES) - len(EMPTY)} file(s) in {folder}; {len(EMPTY)} empty table(s) not written" in result.stdout
    )
    bad = subprocess.run(
        [Path(sys.executable).parent / "eyt", "tables", "--format", "html"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "invalid choice" in bad.stderr


@pytest.mark.unit
def test_an_empty_table_says_why_and_leaves_no_file(tmp_path):
    # nothing in the warehouse: every table is empty, each for want of the benchmark's results
    empty = pt.empty_tables(pt.build_tables({}), {})
    assert set(empty) == set(pt.TABLES)
    no_speech = (
        "no SpeechEQ target has run (a target whose benchmarks include speech_eq; `eyt run` without --no-speech)"
    )
    assert empty["seq_oracle"] == empty["seq_human"] == empty["seq_main"] == no_speech
    assert empty["eyt_objective"] == empty["eyt_thinking"] == "no EYT-Bench target x pool cell has run (`eyt run`)"
    # chance's rows are no SpeechEQ target; once one has run, the oracle table wants an oracle text target
    board = pd.DataFrame({"target": ["chance"], "speech_input": [None]})
    assert pt.why_empty("seq_oracle", {"speech.seq_leaderboard": board}) == no_speech
    board = pd.DataFrame({"target": ["chance", "model-a"], "speech_input": [None, "audio"]})
    assert pt.why_empty("seq_oracle", {"speech.seq_leaderboard": board}) == EMPTY["seq_oracle"]
    # written: the tables with rows; an earlier file of an empty table is removed, not left with old rows
    tables = [
        pt.PaperTable("eyt_objective", "caption", pd.DataFrame({"Model": ["m"], "Exp.": ["0.500"]})),
        pt.PaperTable("seq_oracle", "caption", pd.DataFrame(columns=["Model", "Acc1"])),
    ]
    (tmp_path / "seq_oracle.md").write_text("an earlier export\n")
    export = tf.export_tables(tables, {}, tmp_path, "markdown", ["footnote"])
    assert export.written == [tmp_path / "eyt_objective.md"] and export.empty == {"seq_oracle": no_speech}
    assert export.removed == [tmp_path / "seq_oracle.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eyt_objective.md"]


@pytest.mark.unit
def test_number_formatting_is_fixed():
    assert pt.num(-0.0001, 3) == "0.000" and pt.num(float("nan"), 1) == pt.DASH and pt.num(None, 2) == pt.DASH
    assert pt.num(0.12345, 3) == "0.123" and pt.num(79.75, 1) == "79.8"
    assert pt.interval(0.5, float("nan"), 0.7, 3) == "0.500"
    assert pt.interval(0.5, 0.25, 0.75, 2) == "0.50 [0.25, 0.75]"
    assert tf.latex_escape("a_b & 50% \u2020 |J-H|<=1") == "a\\_b \\& 50\\% $\\dagger$ |J-H|$\\leq$1"


@pytest.mark.unit
def test_thinking_table_marks_highlighted_deltas_and_keeps_row_order():
    rows = []
    for metric, (t, n) in {"latent_acc": (0.9, 0.4), "empathy": (70.0, 69.5)}.items():
        rows.append(
            {
                "pair": "g",
                "think_target": "g-think",
                "non_think_target": "g",
                "pool": "personamem_v2",
                "metric": metric,
                "think": t,
                "non_think": n,
                "delta": t - n,
                "highlighted": metric == "latent_acc",
            }
        )
    cells = pt.thinking({"dialogue.thinking_ablation": pd.DataFrame(rows)})
    assert list(cells["Row"]) == ["think: g-think", "non-think: g", "\u0394 (think - non-think)"]
    assert list(cells["Lat."]) == ["0.900", "0.400", "0.500*"]
    assert list(cells["Emp."]) == ["70.0", "69.5", "0.5"]
    assert list(cells["Exp."]) == [pt.DASH] * 3 and set(cells["Pool"]) == {"PM"}
