"""`eyt annotate import` end to end (eyt_dagster/ops/annotate_import.py): a manifest exported by hand, filled sheets
imported through the CLI's main, the store's no-op / add / conflict / --replace, a bad file leaving the store as it
was, dialogues played again since, what makes dialogue/human_annotations stale, and the asset reading the labels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from eyt_dagster.eyt_bench import annotation_import as ai
from eyt_dagster.eyt_bench.annotation_sheet import (
    SHEET_COLUMNS,
    SheetItem,
    SheetManifest,
    dialogue_digests,
    manifest_json,
)
from eyt_dagster.ops import cli
from eyt_dagster.slate import load_slate, slate_path_from_env
from resources.storage import annotation_labels as store
from resources.storage.warehouse import store_frame

SHEET = "s7-0badcafe"


def turns_frame() -> pd.DataFrame:
    rows = [
        dict(target=t, pool="nemotron_usa", seed_id=s, turn=n, user_text=f"u{n}", response_text=f"{t} {n}")
        for t, s, turns in (("reflective-baseline", "nemotron_usa:1", 2), ("terse-baseline", "nemotron_usa:1", 2))
        for n in range(1, turns + 1)
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def exported(data_dir: Path, slate_file: Path) -> Path:
    """A data directory with two played dialogues and the manifest copy of a sheet of both."""
    turns = turns_frame()
    store_frame(data_dir, "dialogue.dialogue_turns", turns, partition_by=["pool", "target"])
    digests = dialogue_digests(turns)
    items = tuple(
        SheetItem(item=f"i00{k}", target=t, pool=p, seed_id=s, turns=(1, 2), digest=digests[(t, p, s)])
        for k, (t, p, s) in enumerate(sorted(digests), start=1)
    )
    manifest = SheetManifest(
        sheet=SHEET, slate=load_slate(slate_file).name, seed=7, per_cell=1, created_at="2026-01-01", items=items
    )
    folder = store.sheets_dir(data_dir)
    folder.mkdir(parents=True)
    (folder / f"{SHEET}.json").write_text(manifest_json(manifest))
    return data_dir


def filled(path: Path, annotator: str, empathy: tuple[float, float, float, float], satisfaction: int = 4) -> Path:
    """A filled sheet: both items' two turns and final rows, plus one unfilled row."""
    a, b, c, d = empathy
    rows = [
        [SHEET, "i001", "1", annotator, a, 3, 2, "", "", "fine"],
        [SHEET, "i001", "2", annotator, b, "", "", "", "", ""],
        [SHEET, "i001", "final", annotator, "", "", "", 1, satisfaction, ""],
        [SHEET, "i002", "1", annotator, c, "", "", "", "", ""],
        [SHEET, "i002", "2", annotator, d, "", "", "", "", ""],
        [SHEET, "i002", "final", "", "", "", "", "", "", ""],  # unfilled
    ]
    pd.DataFrame(rows, columns=list(SHEET_COLUMNS)).to_csv(path, index=False)
    return path


def snapshot(data: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in store.label_files(data)}


@pytest.mark.cli
def test_import_add_noop_conflict_replace_and_a_bad_file(exported, tmp_path, capsys):
    from eyt_dagster import slate_settings as ss

    slate = load_slate(slate_path_from_env())
    assert "human_labels" not in ss.asset_settings("dialogue/human_annotations", slate)  # no labels: as before

    first = filled(tmp_path / "ann1.csv", "ann1", (3, 2.5, 4, 1))
    assert cli.main(["annotate", "import", str(first)]) == 0
    out = capsys.readouterr().out
    assert f"{first}: sheet {SHEET}: imported 8 label(s) from 5 scored row(s) (8 new; 1 unfilled row(s) skipped)" in out
    assert "`eyt refresh`" in out
    labels = store.read_store(exported)
    assert len(labels) == 8 and set(labels["source_file"]) == {str(first.resolve())}
    after_first = ss.asset_settings("dialogue/human_annotations", slate)["human_labels"]
    assert len(after_first) == 1  # the store's file, by name and hash: refresh sees the asset stale

    assert cli.main(["annotate", "import", str(first)]) == 0  # the same labels again
    out = capsys.readouterr().out
    assert "already imported (8 label(s)); nothing to do" in out and "`eyt refresh`" not in out
    assert len(store.label_files(exported)) == 1

    second = filled(tmp_path / "ann2.csv", "ann2", (3, 3, 4, 1))  # another annotator adds
    assert cli.main(["annotate", "import", str(second)]) == 0
    out = capsys.readouterr().out
    assert "imported 8 label(s)" in out and len(store.read_store(exported)) == 16
    assert "  empathy: 8 label(s) by 2 annotator(s); 2 item(s) with >= 2 annotators (4 turns)" in out

    bad = filled(tmp_path / "bad.csv", "ann3", (3, 7, 4, 1))
    before = snapshot(exported)
    assert cli.main(["annotate", "import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 3: empathy: 7 is off its scale" in err and "nothing imported from it" in err
    assert snapshot(exported) == before

    changed = filled(tmp_path / "ann1-again.csv", "ann1", (3, 2.5, 4, 1), satisfaction=2)
    assert cli.main(["annotate", "import", str(changed)]) == 2
    err = capsys.readouterr().err
    assert f"{changed}: 1 label(s) give another value than was imported before from {first.resolve()}" in err
    assert "satisfaction: 4 before, 2 now" in err
    assert snapshot(exported) == before

    assert cli.main(["annotate", "import", "--replace", str(changed)]) == 0
    out = capsys.readouterr().out
    assert "imported 1 label(s) from 5 scored row(s) (0 new, 1 replaced, 7 already imported;" in out
    now = store.read_store(exported)
    assert len(now) == 16
    mine = now[(now["annotator"] == "ann1") & (now["dimension"] == "satisfaction")]
    assert list(mine["score"]) == [2.0]
    every = pd.concat([store.read_label_file(p) for p in store.label_files(exported)])
    assert len(every) == 16  # the earlier file lost the replaced label, nothing else
    assert ss.asset_settings("dialogue/human_annotations", slate)["human_labels"] != after_first


@pytest.mark.cli
def test_labels_of_dialogues_played_again_refuse_the_file_unless_skipped(exported, tmp_path, capsys):
    turns = turns_frame()
    turns.loc[turns["target"] == "terse-baseline", "response_text"] = "said otherwise"  # played again since
    store_frame(exported, "dialogue.dialogue_turns", turns, partition_by=["pool", "target"])
    sheet = filled(tmp_path / "ann1.csv", "ann1", (3, 2.5, 4, 1))
    assert cli.main(["annotate", "import", str(sheet)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 item(s) label dialogues" in err and "(played again: i002)" in err
    assert store.label_files(exported) == []

    assert cli.main(["annotate", "import", "--skip-vanished", str(sheet)]) == 0
    out = capsys.readouterr().out
    assert "imported 6 label(s)" in out and "2 label(s) of 1 vanished item(s) skipped" in out
    assert set(store.read_store(exported)["target"]) == {"reflective-baseline"}


@pytest.mark.cli
def test_a_sheet_of_another_data_directory_is_refused(exported, tmp_path, capsys):
    sheet = filled(tmp_path / "x.csv", "ann1", (3, 2.5, 4, 1))
    sheet.write_text(sheet.read_text().replace(SHEET, "s7-ffffffff"))
    assert cli.main(["annotate", "import", str(sheet)]) == 2
    err = capsys.readouterr().err
    assert f"{sheet}: sheet: s7-ffffffff was not exported from this data directory" in err


@pytest.mark.materialisation
def test_the_human_annotations_asset_reads_the_slate_csv_and_the_imported_labels(exported, tmp_path, monkeypatch):
    from dagster import build_asset_context

    from assets.eyt_bench.judge_calibration import human_annotations
    from resources.models.model_access import ReportAccess, SlateAccess

    from support.slates import write_slate

    csv = tmp_path / "slate_annotations.csv"
    csv.write_text(
        "annotator,target,pool,seed_id,turn,dimension,score\n"
        "ann1,reflective-baseline,nemotron_usa,nemotron_usa:1,1,empathy,1\n"  # the import gives ann1's 3 instead
        "ann9,reflective-baseline,nemotron_usa,nemotron_usa:1,1,empathy,2.5\n"
        "ann9,reflective-baseline,nemotron_usa,nemotron_usa:1,0,satisfaction,5\n"
    )
    (tmp_path / "with_csv").mkdir()
    slate_path = write_slate(tmp_path / "with_csv", human_annotations=str(csv))
    assert cli.main(["annotate", "import", str(filled(tmp_path / "ann1.csv", "ann1", (3, 2.5, 4, 1)))]) == 0
    out = human_annotations(
        context=build_asset_context(),
        slate=SlateAccess(slate_path=str(slate_path)),
        reports=ReportAccess(data_dir=str(exported)),
    )
    df = out.value
    assert len(df) == 2 + 8  # the CSV's two ann9 rows, then the eight imported labels (ann1's CSV row replaced)
    assert list(df.columns[:9]) == list(ai.LABEL_COLUMNS) and "created_at" in df.columns
    cell = df[(df["turn"] == 1) & (df["dimension"] == "empathy") & (df["target"] == "reflective-baseline")]
    assert sorted(zip(cell["annotator"], cell["score"], cell["sheet"].fillna("-"))) == [
        ("ann1", 3.0, SHEET),
        ("ann9", 2.5, "-"),
    ]
    assert set(df.loc[df["annotator"] == "ann9", "source_file"]) == {str(csv)}
    assert out.metadata["imported_labels"].value == 8


@pytest.mark.materialisation
def test_labels_of_a_dialogue_played_again_since_its_sheet_are_left_out_and_counted(exported, tmp_path):
    """The terse baseline's dialogue is played again after the import (other words, so another digest): its two
    labels no longer count; the reflective baseline's six still do. Played back as it was, they count again."""
    from dagster import build_asset_context

    from assets.eyt_bench.judge_calibration import human_annotations
    from resources.models.model_access import ReportAccess, SlateAccess

    assert cli.main(["annotate", "import", str(filled(tmp_path / "ann1.csv", "ann1", (3, 2.5, 4, 1)))]) == 0

    def read() -> tuple[pd.DataFrame, int]:
        out = human_annotations(
            context=build_asset_context(),
            slate=SlateAccess(slate_path=str(slate_path_from_env())),
            reports=ReportAccess(data_dir=str(exported)),
        )
        table = out.value
        return table[table["sheet"].notna()], out.metadata["stale_imported_labels"].value  # the sheet's labels

    labels, stale = read()
    assert stale == 0 and set(labels["target"]) == {"reflective-baseline", "terse-baseline"}
    replayed = turns_frame()
    replayed.loc[replayed["target"] == "terse-baseline", "response_text"] = "other words"
    store_frame(exported, "dialogue.dialogue_turns", replayed, partition_by=["pool", "target"])
    labels, stale = read()
    assert stale == 2 and set(labels["target"]) == {"reflective-baseline"} and len(labels) == 6
    store_frame(exported, "dialogue.dialogue_turns", turns_frame(), partition_by=["pool", "target"])
    assert read()[1] == 0
