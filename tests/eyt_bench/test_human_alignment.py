"""eyt_dagster.eyt_bench.human_alignment: the annotation reader and Table 15 on a case computed by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import human_alignment as ha

pytestmark = pytest.mark.unit

EXAMPLE = Path(ha.__file__).parents[1] / "fixtures" / "human_annotations_example.csv"
HEADER = "annotator,target,pool,seed_id,turn,dimension,score\n"

# Empathy of one dialogue, annotators A and B; B left turn 4 empty; turn 5 has no judge score.
#   turn  A    B    H mean  judge  J - H   buckets (J / H)
#   1     2    3    2.5     3      0.5     mid / mid
#   2     1    1    1.0     2.5    1.5     mid / low
#   3     4    4.5  4.25    4.5    0.25    high / high
#   4     3    -    3.0     3.5    0.5     high / mid
#   5     2    2    2.0     -
HAND = {1: ("2", "3"), 2: ("1", "1"), 3: ("4", "4.5"), 4: ("3", ""), 5: ("2", "2")}
JUDGE = {1: 3.0, 2: 2.5, 3: 4.5, 4: 3.5}


def write(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "ann.csv"
    path.write_text(header + body)
    return path


@pytest.fixture
def hand_case(tmp_path) -> tuple[pd.DataFrame, pd.DataFrame]:
    lines = [
        f"{who},T,nemotron_usa,nemotron_usa:s1,{turn},empathy,{score}"
        for turn, pair in HAND.items()
        for who, score in zip("AB", pair)
    ]
    annotations = ha.read_annotations(write(tmp_path, "\n".join(lines) + "\n"))
    judge = pd.DataFrame(
        [
            {
                "target": "T",
                "pool": "nemotron_usa",
                "seed_id": "nemotron_usa:s1",
                "turn": t,
                "empathy": s,
                "persona": 4.0,
                "anthropomorphic": 4.0,
            }
            for t, s in JUDGE.items()
        ]
    )
    return annotations, judge


def test_read_keeps_empty_scores(hand_case):
    annotations, _ = hand_case
    assert len(annotations) == 10 and annotations["score"].isna().sum() == 1
    assert annotations["turn"].dtype.kind == "i"


@pytest.mark.filterwarnings("error")
def test_alignment_table_by_hand(hand_case):
    table = ha.alignment_table(*hand_case).set_index("dimension")
    row = table.loc["empathy"]
    assert (row["n_cells"], row["n_annotations"], row["n_missing"]) == (4, 9, 2)  # 1 empty + 1 unjudged
    assert row["bias_0_100"] == pytest.approx((0.5 + 1.5 + 0.25 + 0.5) / 4 * 20)  # 13.75
    assert row["within_1"] == pytest.approx(0.75) and row["same_bucket"] == pytest.approx(0.5)
    assert row["lenience_early"] == pytest.approx(20.0) and row["lenience_late"] == pytest.approx(7.5)
    assert row["lenience_late_minus_early"] == pytest.approx(-12.5)
    # Deviations J: (-.375, -.875, 1.125, .125), H: (-.1875, -1.6875, 1.5625, .3125).
    assert row["pearson_r"] == pytest.approx(3.34375 / np.sqrt(2.1875 * 5.421875))
    assert row["spearman_rho"] == pytest.approx(1.0)  # same order of the four cells
    # Grid positions (2 x score). Judge (6,5,9,7) vs A (4,2,8,6): observed 15, expected 164/4 -> 26/41.
    # Judge (6,5,9) vs B (6,2,9): observed 9, expected 109/3 -> 82/109.
    assert row["qwk_judge_human"] == pytest.approx((26 / 41 + 82 / 109) / 2)
    # A vs B on turns 1, 2, 3, 5: (4,2,8,4) vs (6,2,9,4): observed 5, expected 192/4 -> 43/48.
    assert row["qwk_human_human"] == pytest.approx(43 / 48)
    # Ordinal alpha, values (x2) 2:2, 4:3, 6:1, 8:1, 9:1; observed 2*d(4,6) + 2*d(8,9) = 8 + 2,
    # expected 2 * 316 / 7 -> 1 - 70/632.
    assert row["krippendorff_alpha_ordinal"] == pytest.approx(1 - 70 / 632)
    empty = table.loc["persona"]
    assert empty["n_cells"] == 0 and np.isnan(empty["pearson_r"]) and np.isnan(empty["bias_0_100"])


def test_buckets_and_judge_rounding():
    assert list(ha.score_bucket([0, 1.5, 1.99, 2, 3, 3.49, 3.5, 5])) == [0, 0, 0, 1, 1, 1, 2, 2]
    assert list(ha._to_grid(pd.Series([3.74, 3.75, 3.25, 4.9]))) == [3.5, 4.0, 3.5, 5.0]


def test_off_grid_judge_is_rounded_for_kappa(hand_case):
    annotations, judge = hand_case
    nudged = judge.assign(empathy=judge["empathy"] + 0.1)  # 3.1 -> 3, 2.6 -> 2.5, ...
    a = ha.alignment_table(annotations, judge).set_index("dimension").loc["empathy"]
    b = ha.alignment_table(annotations, nudged).set_index("dimension").loc["empathy"]
    assert b["qwk_judge_human"] == pytest.approx(a["qwk_judge_human"])
    assert b["bias_0_100"] == pytest.approx(a["bias_0_100"] + 2.0)


def test_example_fixture():
    annotations = ha.read_annotations(EXAMPLE)
    assert len(annotations) == 216 and annotations["score"].isna().sum() == 2
    assert set(annotations["annotator"]) == {"ann1", "ann2", "ann3"}
    assert set(annotations["target"]) == {"reflective-baseline", "terse-baseline"}
    cells = annotations.groupby([*ha.KEYS, "dimension"])["score"].mean().unstack("dimension").reset_index()
    judge = cells.assign(**{d: np.minimum(cells[d] + 0.5, 5.0) for d in ha.DIMENSIONS})
    table = ha.alignment_table(annotations, judge)
    assert list(table["dimension"]) == list(ha.DIMENSIONS)
    assert (table["n_cells"] == 24).all() and table["n_missing"].sum() == 2
    assert table["bias_0_100"].round(6).le(10.0).all() and (table["within_1"] == 1.0).all()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("A,T,p,s,1,empathy,3\nA,T,p,s,1,warmth,3\nA,T,p,s,2,humour,1\n", r"line\(s\) 3, 4: unknown dimension"),
        ("A,T,p,s,1,empathy,5.5\nA,T,p,s,2,empathy,-1\n", r"line\(s\) 2, 3: score outside 0-5"),
        ("A,T,p,s,1,empathy,high\n", r"line\(s\) 2: score is not a number"),
        ("A,T,p,s,1,empathy,3\nA,T,p,s,2,empathy,3.3\n", r"line\(s\) 3: .*half-point grid"),
        ("A,T,p,s,0,empathy,3\n", r"line\(s\) 2: turn must be an integer"),
        ("A,T,p,s,1,empathy,3\nA,T,p,s,1,empathy,4\n", r"line\(s\) 2, 3: duplicate"),
        (",T,p,s,1,empathy,3\n", r"line\(s\) 2: empty annotator"),
    ],
)
def test_read_annotations_errors(tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(ValueError, match=message) as err:
        ha.read_annotations(path)
    assert str(path) in str(err.value)


def test_read_annotations_missing_column(tmp_path):
    path = write(tmp_path, "A,T,p,s,1,3\n", header="annotator,target,pool,seed_id,turn,score\n")
    with pytest.raises(ValueError, match=r"ann\.csv: missing column\(s\) dimension"):
        ha.read_annotations(path)


def test_judge_scores_checked(hand_case):
    annotations, judge = hand_case
    with pytest.raises(ValueError, match="persona"):
        ha.alignment_table(annotations, judge.drop(columns="persona"))
    with pytest.raises(ValueError, match="more than one row"):
        ha.alignment_table(annotations, pd.concat([judge, judge]))


def test_a_kept_table_is_the_computed_one_and_only_the_annotated_cells_count():
    from eyt_dagster.core.result_cache import MemoryStore

    annotations = ha.read_annotations(EXAMPLE)
    cells = annotations.groupby([*ha.KEYS, "dimension"])["score"].mean().unstack("dimension").reset_index()
    judge = cells.assign(**{d: np.minimum(cells[d] + 0.5, 5.0) for d in ha.DIMENSIONS})
    fresh = ha.alignment_table(annotations, judge)
    store = MemoryStore()
    first = ha.alignment_table(annotations, judge, store=store)
    # another target's turns judged too (not annotated): the same key, the stored table, equal to a fresh one
    other = judge.assign(target="not-annotated-" + judge["target"], empathy=0.0)
    again = ha.alignment_table(annotations, pd.concat([judge, other], ignore_index=True), store=store)
    for table in (first, again):
        pd.testing.assert_frame_equal(table, fresh, check_exact=True)
    assert store.counters.found[ha.TABLE_KIND] == 1 and store.counters.computed[ha.TABLE_KIND] == 1
    # an annotated cell's judge score changed: computed again
    changed = judge.copy()
    changed.loc[0, "empathy"] = 0.0
    got = ha.alignment_table(annotations, changed, store=store)
    pd.testing.assert_frame_equal(got, ha.alignment_table(annotations, changed), check_exact=True)
    assert store.counters.computed[ha.TABLE_KIND] == 2 and not got.equals(fresh)
    # no annotated dialogue judged at all: the same table as from every verdict that matches none
    unjudged = ha.alignment_table(annotations, other)
    pd.testing.assert_frame_equal(unjudged, ha.alignment_table(annotations, other.iloc[:0]), check_exact=True)
    assert (unjudged["n_cells"] == 0).all()


def test_read_annotations_takes_the_whole_dialogues_fields_at_turn_0(tmp_path):
    body = "A,T,p,s,1,empathy,3\nA,T,p,s,0,completed,1\nA,T,p,s,0,satisfaction,4\nB,T,p,s,0,satisfaction,\n"
    annotations = ha.read_annotations(write(tmp_path, body))
    assert list(zip(annotations["turn"], annotations["dimension"])) == [
        (1, "empathy"),
        (0, "completed"),
        (0, "satisfaction"),
        (0, "satisfaction"),
    ]
    assert annotations["score"].isna().sum() == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("A,T,p,s,1,satisfaction,4\n", r"line\(s\) 2: turn must be 0 for completed and satisfaction"),
        ("A,T,p,s,0,satisfaction,2.5\n", r"line\(s\) 2: satisfaction score off its scale"),
        ("A,T,p,s,0,completed,3\n", r"line\(s\) 2: completed score off its scale"),
    ],
)
def test_read_annotations_checks_the_dialogue_fields(tmp_path, body, message):
    with pytest.raises(ValueError, match=message):
        ha.read_annotations(write(tmp_path, body))
