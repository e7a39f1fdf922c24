"""Checking a filled annotation sheet (eyt_dagster/eyt_bench/annotation_import.py): every error names the file, the
line and the field; dialogues gone or played again; how labels join the store; agreement by hand."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import annotation_import as ai
from eyt_dagster.eyt_bench.annotation_sheet import SHEET_COLUMNS, SheetItem, SheetManifest, dialogue_digests

pytestmark = pytest.mark.unit

NAME = "filled.csv"
SHEET = "s7-0badcafe"
SLATE = "tiny-slate"


def turns_frame() -> pd.DataFrame:
    rows = []
    for target, seed, n in (("tgt-a", "p:001", 2), ("tgt-b", "p:001", 1), ("tgt-a", "p:002", 1)):
        for turn in range(1, n + 1):
            rows.append(
                dict(
                    target=target, pool="p", seed_id=seed, turn=turn, user_text=f"hi {turn}", response_text=f"{target}"
                )
            )
    return pd.DataFrame(rows)


DIGESTS = dialogue_digests(turns_frame())


def manifest(slate: str = SLATE) -> SheetManifest:
    items = (
        SheetItem(
            item="i001",
            target="tgt-a",
            pool="p",
            seed_id="p:001",
            turns=(1, 2),
            digest=DIGESTS[("tgt-a", "p", "p:001")],
        ),
        SheetItem(
            item="i002", target="tgt-b", pool="p", seed_id="p:001", turns=(1,), digest=DIGESTS[("tgt-b", "p", "p:001")]
        ),
        SheetItem(
            item="i003", target="tgt-a", pool="p", seed_id="p:002", turns=(1,), digest=DIGESTS[("tgt-a", "p", "p:002")]
        ),
    )
    return SheetManifest(sheet=SHEET, slate=slate, seed=7, per_cell=1, created_at="2026-01-01T00:00:00Z", items=items)


def row(item: str, turn: str, annotator: str = "ann1", **scores: object) -> str:
    values = {"sheet": SHEET, "item": item, "turn": turn, "annotator": annotator, **scores}
    return ",".join(str(values.get(c, "")) for c in SHEET_COLUMNS)


def sheet(*rows: str, header: str = ",".join(SHEET_COLUMNS)) -> pd.DataFrame:
    return pd.read_csv(io.StringIO("\n".join([header, *rows]) + "\n"), dtype=str, keep_default_na=False)


def check(raw: pd.DataFrame, manifests=None, digests=DIGESTS) -> ai.SheetCheck:
    return ai.check_sheet(NAME, raw, manifests if manifests is not None else {SHEET: manifest()}, SLATE, digests)


GOOD = (
    row("i001", "1", empathy=3.5, persona=2, anthropomorphic=4),
    row("i001", "2", empathy=1),
    row("i001", "final", completed=1, satisfaction=4),
    row("i002", "1", annotator=""),  # unfilled
    row("i002", "final", annotator=""),  # unfilled
)


def test_a_good_sheet_gives_long_labels_and_counts_unfilled_rows():
    found = check(sheet(*GOOD))
    assert found.ok and found.sheet == SHEET and found.unfilled == 2 and found.scored_rows == 3
    labels = found.labels.sort_values(["turn", "dimension"]).reset_index(drop=True)
    assert list(labels.columns) == list(ai.LABEL_COLUMNS)
    got = list(zip(labels["turn"], labels["dimension"], labels["score"]))
    assert got == [
        (0, "completed", 1.0),
        (0, "satisfaction", 4.0),
        (1, "anthropomorphic", 4.0),
        (1, "empathy", 3.5),
        (1, "persona", 2.0),
        (2, "empathy", 1.0),
    ]
    assert set(labels["target"]) == {"tgt-a"} and set(labels["seed_id"]) == {"p:001"}
    assert set(labels["sheet"]) == {SHEET} and set(labels["source_file"]) == {NAME}


def test_extra_columns_are_ignored_and_named():
    raw = sheet(row("i001", "1", empathy=3) + ",x", header=",".join(SHEET_COLUMNS) + ",comment")
    found = check(raw)
    assert found.ok and found.ignored_columns == ("comment",) and len(found.labels) == 1


def test_missing_columns():
    header = ",".join(c for c in SHEET_COLUMNS if c not in ("persona", "note"))
    found = check(sheet("s,i001,1,a,3,4,,", header=header))
    assert found.error_lines() == [
        f"{NAME}: line 1: missing column(s) persona, note; a sheet has {', '.join(SHEET_COLUMNS)}"
    ]


def test_a_sheet_not_exported_here():
    found = check(sheet(*GOOD), manifests={SHEET: None})
    assert found.error_lines() == [
        f"{NAME}: sheet: {SHEET} was not exported from this data directory: no annotations/sheets/{SHEET}.json"
    ]


def test_a_sheet_drawn_from_another_slate_is_one_line():
    found = check(sheet(*GOOD), manifests={SHEET: manifest(slate="other-slate")})
    assert found.error_lines() == [
        f"{NAME}: sheet {SHEET} was drawn from slate other-slate with seed 7; this data directory's slate is {SLATE}"
    ]


def test_several_sheets_in_one_file():
    other = row("i001", "2", empathy=1).replace(SHEET, "s7-11111111")
    found = check(sheet(GOOD[0], other))
    assert len(found.problems) == 1
    assert found.error_lines()[0].startswith(f"{NAME}: sheet: several sheets in one file ({SHEET}, s7-11111111)")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (row("i009", "1", empathy=3), "line 2: item: unknown item 'i009'"),
        (row("i002", "2", empathy=3), "line 2: turn: '2' is not a turn of item i002 (1, final)"),
        (row("i001", "last", empathy=3), "line 2: turn: 'last' is not a turn of item i001 (1, 2, final)"),
        (row("i001", "final", empathy=3), "line 2: empathy: not scored on the final row: empathy belongs on turn rows"),
        (
            row("i001", "1", completed=1),
            "line 2: completed: not scored on a turn row: completed belongs on the 'final' row",
        ),
        (row("i001", "1", persona=5.5), "line 2: persona: 5.5 is off its scale: 0 to 5 in steps of 0.5"),
        (row("i001", "1", anthropomorphic=3.3), "line 2: anthropomorphic: 3.3 is off its scale"),
        (row("i001", "final", satisfaction=2.5), "line 2: satisfaction: 2.5 is off its scale: an integer from 1"),
        (row("i001", "final", completed=2), "line 2: completed: 2 is off its scale: 1 (the assistant"),
        (row("i001", "1", empathy="high"), "line 2: empathy: 'high' is not a number"),
        (row("i001", "1", empathy="nan"), "line 2: empathy: 'nan' is not a number"),
        (row("i001", "1", annotator="", empathy=3), "line 2: annotator: empty on a scored row"),
    ],
)
def test_each_row_error_names_file_line_and_field(line, expected):
    found = check(sheet(line))
    assert not found.ok and found.labels.empty
    assert found.error_lines()[0].startswith(f"{NAME}: {expected}"), found.error_lines()


def test_duplicate_rows_and_every_error_of_a_file_collected():
    found = check(
        sheet(
            row("i001", "1", empathy=3),
            row("i001", "1", persona=2),  # same annotator, item and turn
            row("i001", "1", annotator="ann2", persona=2),  # another annotator: fine
            row("i001", "2", empathy=9),
        )
    )
    assert found.error_lines() == [
        f"{NAME}: line 3: turn: duplicate of line 2 (same annotator, item and turn)",
        f"{NAME}: line 5: empathy: 9 is off its scale: 0 to 5 in steps of 0.5 (the sum of five criteria, each 0, 0.5 or 1)",
    ]
    assert found.labels.empty  # a file with an error gives nothing


def test_only_the_first_twenty_errors_are_shown():
    found = check(sheet(*[row("i001", "1", annotator=f"a{k}", empathy="x") for k in range(25)]))
    lines = found.error_lines()
    assert len(found.problems) == 25 and len(lines) == 21
    assert lines[-1] == f"{NAME}: ... and 5 more error(s)"


def test_dialogues_gone_or_played_again_are_one_line_and_left_out():
    digests = dict(DIGESTS)
    digests[("tgt-a", "p", "p:001")] = "0000000000000000"  # played again since
    del digests[("tgt-b", "p", "p:001")]  # gone
    found = check(
        sheet(row("i001", "1", empathy=3), row("i002", "1", empathy=2), row("i003", "1", empathy=4)), digests=digests
    )
    assert found.ok and found.vanished == {"i001": "played again", "i002": "gone"} and found.vanished_labels == 2
    assert list(found.labels["seed_id"]) == ["p:002"]  # what --skip-vanished imports
    line = found.vanished_line(skipped=False)
    assert "\n" not in line
    assert line.startswith(
        f"{NAME}: 2 item(s) label dialogues that are no longer in the warehouse as they were exported"
    )
    assert "(gone: i002; played again: i001)" in line and "2 label(s) were not imported" in line
    assert "export a new sheet" in line and "--skip-vanished" in line
    assert "the rest were" in found.vanished_line(skipped=True)


def labels(*rows: tuple[str, int, str, float], source: str = "f1.csv", seed: str = "p:001") -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(
                annotator=a,
                target="tgt-a",
                pool="p",
                seed_id=seed,
                turn=t,
                dimension=d,
                score=s,
                sheet=SHEET,
                source_file=source,
            )
            for a, t, d, s in rows
        ],
        columns=list(ai.LABEL_COLUMNS),
    )


def test_merge_sorts_labels_into_new_same_and_conflicting():
    store = labels(("ann1", 1, "empathy", 3.0), ("ann1", 1, "persona", 2.0))
    incoming = labels(
        ("ann1", 1, "empathy", 3.0), ("ann1", 1, "persona", 2.5), ("ann2", 1, "empathy", 4.0), source="f2.csv"
    )
    merged = ai.merge(store, incoming)
    assert merged.same == 1
    assert list(merged.new["annotator"]) == ["ann2"]
    assert list(merged.conflicts["dimension"]) == ["persona"] and list(merged.conflicts["score_before"]) == [2.0]
    line = merged.conflict_line("f2.csv")
    assert line.startswith("f2.csv: 1 label(s) give another value than was imported before from f1.csv")
    assert "persona: 2 before, 2.5 now" in line and "--replace" in line


def test_the_later_file_wins_and_without_keeps_the_rest():
    first = labels(("ann1", 1, "empathy", 3.0), ("ann1", 1, "persona", 2.0))
    second = labels(("ann1", 1, "persona", 2.5), source="f2.csv")
    every = ai.effective([first, second])
    assert sorted(zip(every["dimension"], every["score"])) == [("empathy", 3.0), ("persona", 2.5)]
    kept = ai.without(first, second)
    assert list(kept["dimension"]) == ["empathy"]


def test_the_slate_csv_and_imported_labels_combine_one_score_per_annotator_and_cell():
    csv = labels(("ann1", 1, "empathy", 3.0), ("ann9", 1, "empathy", 1.0), source="slate.csv").assign(sheet=None)
    imported = labels(("ann1", 1, "empathy", 4.0), ("ann1", 0, "satisfaction", 5.0))
    out, replaced = ai.combine_annotations(csv, imported)
    assert replaced == 1
    assert sorted(zip(out["annotator"], out["dimension"], out["score"])) == [
        ("ann1", "empathy", 4.0),
        ("ann1", "satisfaction", 5.0),
        ("ann9", "empathy", 1.0),
    ]


def test_agreement_by_hand():
    # two annotators on three turns: 1/1, 2/2, 3/4. Interval alpha: D_o = 2 / 6 (the one unit's (3-4)^2, counted
    # both ways, over 6 pairable values); D_e = 82 / 30 (the 41 squared differences of the 15 pairs of 1, 1, 2, 2,
    # 3, 4, both ways, over 6 x 5); alpha = 1 - D_o / D_e = 1 - 10 / 82.
    rows = [("ann1", t, "empathy", a) for t, a in ((1, 1.0), (2, 2.0), (3, 3.0))]
    rows += [("ann2", t, "empathy", b) for t, b in ((1, 1.0), (2, 2.0), (3, 4.0))]
    rows += [("ann1", 0, "satisfaction", 4.0)]  # one annotator only: no alpha
    table = ai.agreement(labels(*rows)).set_index("field")
    assert table.loc["empathy", "alpha"] == pytest.approx(1 - 10 / 82)
    assert table.loc["empathy", "items_2plus"] == 1 and table.loc["empathy", "units_2plus"] == 3
    assert np.isnan(table.loc["satisfaction", "alpha"]) and table.loc["satisfaction", "items_2plus"] == 0
    lines = ai.agreement_lines(table.reset_index())
    assert lines == [
        "  empathy: 6 label(s) by 2 annotator(s); 1 item(s) with >= 2 annotators (3 turns), Krippendorff's alpha "
        "(interval) 0.88",
        "  satisfaction: 1 label(s) by 1 annotator(s); 0 item(s) with >= 2 annotators (0 dialogues), Krippendorff's "
        "alpha (interval) n/a",
    ]


def test_current_labels_keeps_a_label_only_while_its_dialogue_is_the_one_its_sheet_showed():
    labels = pd.DataFrame(
        [
            dict(annotator="a", target="tgt-a", pool="p", seed_id="p:001", turn=1, dimension="empathy", score=2.0),
            dict(annotator="a", target="tgt-b", pool="p", seed_id="p:001", turn=1, dimension="empathy", score=3.0),
            dict(annotator="a", target="tgt-a", pool="p", seed_id="p:002", turn=1, dimension="empathy", score=4.0),
        ]
    ).assign(sheet=SHEET, source_file=NAME)
    now = {**DIGESTS, ("tgt-b", "p", "p:001"): "played-again"}
    del now[("tgt-a", "p", "p:002")]  # gone from the warehouse
    kept, left = ai.current_labels(labels, {SHEET: manifest()}, now)
    assert list(kept["score"]) == [2.0] and sorted(left["score"]) == [3.0, 4.0]
    kept, left = ai.current_labels(labels, {SHEET: None}, DIGESTS)  # the sheet's manifest is gone
    assert kept.empty and len(left) == 3
    kept, left = ai.current_labels(labels, {SHEET: manifest()}, DIGESTS)
    assert len(kept) == 3 and left.empty
