"""SpeechEQ result tables on small hand-made slm_choices frames: accuracies, failures, efficiency, SEQ with
chance rows, per-subscale breakdown, persona conditioning, human rankings and the two figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.explained import figure
from eyt_dagster.core.stats import bootstrap_mean_ci
from eyt_dagster.reporting.seq_plots import sequential_direct_png, subscale_accuracy_png
from eyt_dagster.speech_eq.human_ranking import read_human_ranking
from eyt_dagster.speech_eq.protocol import accuracies
from eyt_dagster.speech_eq.rank_correlation import human_alignment, human_correlation
from eyt_dagster.speech_eq.seq import explained_seq
from eyt_dagster.speech_eq.seq_tables import (
    BREAKDOWN_COLUMNS,
    LEADERBOARD_COLUMNS,
    cell_items,
    conditioning_markdown,
    conditioning_table,
    explained_accuracies,
    seq_breakdown,
    seq_cohort_note,
    seq_leaderboard,
    seq_on_scale,
)

pytestmark = pytest.mark.unit

SCALE = 15 / 1.4826  # one cohort MAD in SEQ points
PNG = b"\x89PNG"


def row(target: str, item: str, round_: int, correct: bool | None, **over) -> dict:
    """One slm_choices row with plausible defaults: option 1 is the resonant clip, a right answer picks it,
    a wrong one picks 2, a failed call (correct None) picks nothing."""
    error = over.pop("error", None if correct is not None else "server error")
    parse_failed = over.pop("parse_failed", False)
    selected = None if correct is None or parse_failed else (1 if correct else 2)
    out = {
        "target": target,
        "item_id": item,
        "subscale": "interpersonal_empathy",
        "composite": "interpersonal",
        "valence": "Negative",
        "condition": "default",
        "inference": "sequential",
        "order": "seeded",
        "round": round_,
        "option1": "resonant",
        "option2": "dissonant",
        "history_turn4": None if round_ == 1 else "resonant",
        "selected_option": selected,
        "correct_option": 1,
        "correct": correct,
        "parse_failed": parse_failed,
        "shared_call": False,
        "reasoning": "",
        "error": error,
        "calls": 1,
        "cache_hits": 0,
        "latency_s": 1.0,
        "tokens_in": 100,
        "tokens_out": 20,
        "tokens": 120,
        "cost_usd": 0.001,
        "is_baseline": False,
        "speech_input": "audio",
        "model": f"{target}-model",
        "model_fingerprint": "fp",
        "prompt_hash": "ph",
        "seed": 7,
        "created_at": pd.Timestamp("2026-05-21"),
        "reply_format": "paper",
    }
    out.update(over)
    return out


def trajectory(
    target: str,
    item: str,
    c1: bool,
    c2: bool | None,
    *,
    direct: bool | None = None,
    r1: dict | None = None,
    r2: dict | None = None,
    **over,
) -> list[dict]:
    """Round 1 and 2 under sequential inference; with `direct`, the shared round-1 copy and a direct round 2."""
    first = row(target, item, 1, c1, **{**over, **(r1 or {})})
    rows = [first]
    if c2 is not None or (r2 or {}).get("error"):
        rows.append(row(target, item, 2, c2, **{**over, **(r2 or {})}))
    if direct is not None:
        rows.append({**first, "inference": "direct", "shared_call": True})
        rows.append(row(target, item, 2, direct, **{**over, **(r2 or {}), "inference": "direct"}))
    return rows


def frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    return df.astype({"correct": "boolean", "selected_option": "Int64"})


def cohort_rows(target: str, trajectories_right: int, n: int = 5, **over) -> list[dict]:
    """n items of which the first `trajectories_right` have both rounds right (the rest: round 1 wrong)."""
    return [r for i in range(n) for r in trajectory(target, f"i{i}", i < trajectories_right, True, **over)]


@pytest.fixture
def hand() -> pd.DataFrame:
    """Target m on items a-d (clean), e (round 2 failed), f (round 1 failed). Round 1 costs 0.001, takes 1 s
    and writes 20 tokens; round 2 costs 0.003, takes 2 s, writes 40 tokens; failed calls take 30 s."""
    r2 = {"cost_usd": 0.003, "latency_s": 2.0, "tokens_out": 40}
    failed = {"latency_s": 30.0, "cost_usd": 0.0, "tokens_out": 0}
    rows = [
        *trajectory("m", "a", True, True, direct=True, r2=r2),
        *trajectory("m", "b", True, False, direct=True, r2=r2),
        # c: round 1 did not parse (wrong, parse failure), slow and without tokens
        *trajectory(
            "m", "c", False, True, direct=False, r2=r2, r1={"parse_failed": True, "latency_s": 5.0, "tokens_out": 0}
        ),
        *trajectory("m", "d", True, False, direct=True, r2=r2),
        *trajectory("m", "e", True, None, r2={**r2, **failed, "error": "timeout"}),
        *trajectory("m", "f", None, None, r1=failed),
    ]
    rows.append({**rows[-1], "inference": "direct", "shared_call": True})  # f's round 1 stored for direct too
    e_r1 = next(r for r in rows if r["item_id"] == "e" and r["round"] == 1)
    rows.append({**e_r1, "inference": "direct", "shared_call": True})
    return frame(rows)


def test_leaderboard_accuracies_failures_and_direct_delta(hand):
    board = seq_leaderboard(hand, resamples=200, seed=1)
    assert list(board.columns) == list(LEADERBOARD_COLUMNS)
    m = board[board["target"] == "m"].iloc[0]
    assert m["headline_inference"] == "sequential"
    assert (m["n_items"], m["n_error_items"]) == (4, 2)  # e and f failed and are not scored
    # rounds (seq): a TT, b TF, c FT, d TF -> Acc1 3/4, Acc2 2/4, Acc_traj 1/4
    assert (m["acc1"], m["acc2"], m["acc_traj"]) == (0.75, 0.5, 0.25)
    assert m["contextual_amnesia"] == pytest.approx(0.25)
    # direct round 2: a T, b T, c F, d T -> 3/4; with round 1: a, b, d -> 3/4
    assert (m["acc2_direct"], m["acc_traj_direct"]) == (0.75, 0.75)
    assert m["sequential_direct_delta"] == pytest.approx(0.25)
    clean = hand[hand["item_id"].isin(list("abcd")) & (hand["inference"] == "sequential")]
    assert accuracies(clean) == {"n_items": 4, "acc1": 0.75, "acc2": 0.5, "acc_traj": 0.25}


def test_leaderboard_efficiency_counts_calls_made_and_answered(hand):
    m = seq_leaderboard(hand, resamples=50, seed=1).set_index("target").loc["m"]
    # calls made (shared copies out): a-d 3 each, e 2, f 1 = 15; answered: 12 (a-d) + e's round 1 = 13
    assert m["queries"] == 15
    assert m["parse_failure_rate"] == pytest.approx(1 / 13)  # c's round 1; its shared copy is not counted
    # answered: five round-1 calls at 0.001 and eight round-2 calls at 0.003
    assert m["cost_per_100_queries"] == pytest.approx(100 * (5 * 0.001 + 8 * 0.003) / 13)
    assert m["mean_latency_s"] == pytest.approx((4 * 1.0 + 5.0 + 8 * 2.0) / 13)  # the 30 s failures left out
    # tokens/s over calls that wrote tokens (c's round 1 wrote none): (4*20 + 8*40) / (4*1 + 8*2)
    assert m["tokens_per_s"] == pytest.approx(400 / 20)
    assert np.isnan(m["position_bias_rate"])  # only the seeded order was asked


def test_tokens_per_s_is_nan_without_generated_tokens():
    rows = frame(trajectory("b", "a", True, True, tokens_out=0, cost_usd=0.0))
    b = seq_leaderboard(rows, resamples=10, seed=0).iloc[0]
    assert np.isnan(b["tokens_per_s"]) and b["cost_per_100_queries"] == 0.0 and b["parse_failure_rate"] == 0.0


def test_seq_on_a_hand_cohort_with_chance_rows():
    rows = [
        *cohort_rows("low", 1),
        *cohort_rows("mid", 2),
        *cohort_rows("high", 3),
        *cohort_rows("solo", 2, condition="adaptive"),
    ]
    board = seq_leaderboard(frame(rows), resamples=50, seed=3)
    default = board[board["condition"] == "default"]
    assert list(default["target"]) == ["high", "mid", "low", "chance"]  # SEQ descending, chance last
    assert list(default["acc_traj"]) == pytest.approx([0.6, 0.4, 0.2, 0.25])
    # median 0.4, MAD 0.2 -> SEQ = 100 +- 15 / 1.4826 for one MAD either side
    assert list(default["seq"][:3]) == pytest.approx([100 + SCALE, 100, 100 - SCALE])
    chance = default.iloc[-1]
    assert chance["seq"] == pytest.approx(100 - 0.75 * SCALE)  # (0.25 - 0.4) / 0.2 = -0.75 MADs
    assert (chance["acc1"], chance["acc2"], chance["is_baseline"], chance["speech_input"]) == (0.5, 0.5, True, "chance")
    assert set(default["seq_cohort"]) == {"high,low,mid"}
    adaptive = board[board["condition"] == "adaptive"]
    assert list(adaptive["target"]) == ["solo", "chance"]
    assert list(adaptive["seq"]) == [100.0, 100.0]  # a cohort of one has MAD 0, chance too
    assert list(board["condition"]) == ["default"] * 4 + ["adaptive"] * 2  # declared condition order


def test_seq_on_scale_and_mad_zero():
    assert seq_on_scale(0.6, [0.2, 0.4, 0.6]) == pytest.approx(100 + SCALE)
    assert seq_on_scale(0.9, [0.5, 0.5, 0.5]) == 100.0
    assert seq_on_scale(0.99, [0.40, 0.45, 0.50]) == 160.0  # clipped at +4 SD
    assert np.isnan(seq_on_scale(0.5, []))


def test_direct_only_target_uses_direct_as_headline():
    rows = []
    for item, c1, c2 in [("a", True, True), ("b", True, False)]:
        rows += [row("d", item, 1, c1, inference="direct"), row("d", item, 2, c2, inference="direct")]
    d = seq_leaderboard(frame(rows), resamples=20, seed=0).iloc[0]
    assert d["headline_inference"] == "direct"
    assert (d["acc1"], d["acc2"], d["acc_traj"], d["acc2_direct"]) == (1.0, 0.5, 0.5, 0.5)
    assert d["sequential_direct_delta"] == 0.0


def test_position_bias_pairs_the_same_question_in_both_orders():
    rows = [
        row("p", "x", 1, True),
        row("p", "x", 1, False, order="flipped", selected_option=1),  # position 1 twice
        row("p", "y", 1, True),
        row("p", "y", 1, True, order="flipped", selected_option=2),  # follows the clip
        row("p", "x", 2, False, selected_option=2),
        row("p", "x", 2, True, order="flipped", selected_option=2),
        # y's round 2 had different turn-4 clips in the history: not the same question, not paired
        row("p", "y", 2, True),
        row("p", "y", 2, True, order="flipped", history_turn4="dissonant"),
    ]
    p = seq_leaderboard(frame(rows), resamples=10, seed=0).iloc[0]
    assert p["position_bias_rate"] == pytest.approx(2 / 3)
    assert p["n_items"] == 2 and p["queries"] == 8  # accuracies use the seeded order only


def test_bootstrap_interval_contains_estimate_and_is_seeded():
    rows = [r for i in range(30) for r in trajectory("t", f"i{i}", i % 3 != 0, i % 2 == 0)]
    a = seq_leaderboard(frame(rows), resamples=300, seed=11)
    b = seq_leaderboard(frame(rows), resamples=300, seed=11)
    pd.testing.assert_frame_equal(a, b)
    t = a.iloc[0]
    for name in ("acc1", "acc2", "acc_traj"):
        assert t[f"{name}_low"] <= t[name] <= t[f"{name}_high"]
        assert t[f"{name}_low"] < t[f"{name}_high"]
    assert t["acc1_high"] - t["acc1_low"] < 0.5
    # the interval resamples items: the same as bootstrapping the per-item trajectory outcomes
    per_item = [float(i % 3 != 0 and i % 2 == 0) for i in sorted(range(30), key=lambda i: f"i{i}")]  # id order
    assert (t["acc_traj"], t["acc_traj_low"], t["acc_traj_high"]) == pytest.approx(
        bootstrap_mean_ci(per_item, resamples=300, seed=11)
    )


def test_breakdown_per_subscale_and_composite():
    calm = {"subscale": "stress_management_stress_tolerance", "composite": "stress_management"}
    rows = [
        *trajectory("m", "a", True, True, direct=True),
        *trajectory("m", "b", True, False, direct=True),
        *trajectory("m", "c", True, False, direct=True, **calm),
        *trajectory("m", "d", False, True, direct=False, **calm),
        *trajectory("m", "g", True, True, direct=False, **calm),
        *trajectory(
            "m",
            "e",
            True,
            True,
            direct=False,
            subscale="interpersonal_social_responsibility",
            composite="interpersonal",
        ),
    ]
    table = seq_breakdown(frame(rows), resamples=50, seed=0)
    assert list(table.columns) == list(BREAKDOWN_COLUMNS)
    sub = table[table["level"] == "subscale"].set_index("name")
    assert list(sub.index) == [
        "interpersonal_empathy",
        "interpersonal_social_responsibility",
        "stress_management_stress_tolerance",
    ]  # EQ-i order
    emp = sub.loc["interpersonal_empathy"]
    assert (emp["display_name"], emp["composite_name"]) == ("Empathy", "Interpersonal")
    assert (emp["n_items"], emp["acc1"], emp["acc2"], emp["acc_traj"]) == (2, 1.0, 0.5, 0.5)
    assert (emp["acc2_direct"], emp["sequential_direct_delta"], emp["contextual_amnesia"]) == (1.0, 0.5, 0.5)
    stress = sub.loc["stress_management_stress_tolerance"]
    # c: T F, direct T; d: F T, direct F; g: T T, direct F -> direct inference did worse here
    assert [stress[k] for k in ("n_items", "acc1", "acc2", "acc_traj", "acc2_direct")] == pytest.approx(
        [3, 2 / 3, 2 / 3, 1 / 3, 1 / 3]
    )
    assert stress["sequential_direct_delta"] == pytest.approx(-1 / 3)
    comp = table[table["level"] == "composite"].set_index("name")
    assert list(comp.index) == ["interpersonal", "stress_management"]
    inter = comp.loc["interpersonal"]
    assert (inter["display_name"], inter["n_items"], inter["acc2"]) == ("Interpersonal", 3, 2 / 3)
    assert inter["acc2_direct"] == pytest.approx(2 / 3)  # a T, b T, e F


def test_conditioning_table_places_conditions_on_the_default_scale():
    rows = [
        *cohort_rows("low", 1),
        *cohort_rows("mid", 2),
        *cohort_rows("high", 3),
        *cohort_rows("mid", 4, condition="adaptive"),
        *cohort_rows("mid", 0, condition="global_deficit"),
    ]
    board = seq_leaderboard(frame(rows), resamples=20, seed=0)
    table = conditioning_table(board).set_index("target")
    assert list(table.index) == ["high", "mid", "low", "chance"]
    assert table.loc["mid", "seq_default"] == pytest.approx(100)
    assert table.loc["mid", "acc_traj_adaptive"] == pytest.approx(0.8)
    assert table.loc["mid", "seq_adaptive"] == pytest.approx(100 + 2 * SCALE)  # (0.8 - 0.4) / 0.2 MADs
    assert table.loc["mid", "seq_global_deficit"] == pytest.approx(100 - 2 * SCALE)
    assert np.isnan(table.loc["high", "seq_adaptive"])  # not evaluated under that persona
    assert table.loc["chance", "seq_adaptive"] == pytest.approx(100 - 0.75 * SCALE)
    assert table["seq_scale_cohort"].iloc[0] == "default: high,low,mid"
    text = conditioning_markdown(conditioning_table(board))
    assert "| target" in text and "120.2 (0.800)" in text


def write(tmp_path, text: str):
    path = tmp_path / "ranking.csv"
    path.write_text(text)
    return path


def test_read_human_ranking_with_ties_and_source(tmp_path):
    read = read_human_ranking(
        write(tmp_path, "target, rank,source,note\nA,1,prolific,x\nB, 2.5 ,prolific,\nC,2.5,prolific,\n")
    )
    ranking = read.targets
    assert list(ranking.columns) == ["target", "rank", "source"] and read.items is None
    assert list(ranking["rank"]) == [1.0, 2.5, 2.5] and set(ranking["source"]) == {"prolific"}
    assert list(read_human_ranking(write(tmp_path, "target,rank\nA,1\n")).targets["source"]) == [""]


@pytest.mark.parametrize(
    "text, message",
    [
        ("model,rank\nA,1\n", r"ranking\.csv: missing column\(s\) target"),
        ("target,rank\nA,1\nB,first\n", r"ranking\.csv: line 3: field 'rank' is 'first'"),
        ("target,rank\nA,0\n", r"ranking\.csv: line 2: field 'rank' is '0'"),
        ("target,rank\nA,1\n,2\n", r"ranking\.csv: line 3: field 'target' is empty"),
        ("target,rank\nA,1\nB,2\nA,3\n", r"ranking\.csv: lines 2, 4: field 'target' repeats \['A'\]"),
        ("target,item_id,rank\nA,i1,1\nB,,2\n", r"ranking\.csv: line 3: field 'item_id' is empty"),
        (
            "target,item_id,rank\nA,i1,1\nB,i1,2\nA,i1,2\n",
            r"ranking\.csv: lines 2, 4: target 'A' is ranked on item 'i1' "
            r"more than once",
        ),
        (
            "target,item_id,rank\nA,i1,1\nB,i1,2\nA,i2,1\n",
            r"ranking\.csv: target 'B' has no rank on item\(s\) \['i2'\]",
        ),
    ],
)
def test_bad_ranking_files_name_file_line_and_field(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_human_ranking(write(tmp_path, text))


def table4_leaderboard() -> pd.DataFrame:
    """Paper Table 4's metric ranks for models A-F, as metric values (higher = better); Acc1 and Acc2 tie."""
    ranks = {
        "acc1": [1, 2, 6, 3, 3, 3],
        "acc2": [1, 3, 5, 1, 5, 3],
        "acc_traj": [1, 2, 6, 3, 5, 4],
        "seq": [1, 2, 6, 3, 4, 5],
    }
    board = pd.DataFrame(
        {"target": list("ABCDEF"), "condition": "default", **{m: [1.0 - r / 10 for r in rs] for m, rs in ranks.items()}}
    )
    extra = pd.DataFrame(
        {
            "target": ["G", "chance"],
            "condition": "default",
            "acc1": [0.9, 0.5],
            "acc2": [0.9, 0.5],
            "acc_traj": [0.9, 0.25],
            "seq": [150.0, 80.0],
        }
    )
    return pd.concat([board, extra], ignore_index=True)


def test_human_correlation_reproduces_paper_table4():
    human = pd.DataFrame({"target": list("ABCDEF"), "rank": [1.0, 3, 6, 2, 4, 5], "source": ""})
    corr = human_correlation(table4_leaderboard(), human).set_index("metric")
    assert corr.loc["seq", "rho"] == pytest.approx(0.943, abs=5e-4)
    assert corr.loc["seq", "p_value"] == pytest.approx(0.005, abs=5e-4)
    assert corr.loc["acc1", "rho"] == pytest.approx(0.820, abs=5e-4)  # with a three-way tie
    assert corr.loc["acc2", "rho"] == pytest.approx(0.837, abs=5e-4)  # with three two-way ties
    assert corr.loc["acc_traj", "rho"] == pytest.approx(0.886, abs=5e-4)
    assert set(corr["n_targets"]) == {6} and set(corr["targets"]) == {"A,B,C,D,E,F"}  # G and chance left out
    # a metric ordered exactly like the humans gives +1, the reverse -1
    same = pd.DataFrame({"target": list("ABC"), "condition": "default", "seq": [3.0, 2.0, 1.0]})
    ranks = pd.DataFrame({"target": list("ABC"), "rank": [1.0, 2.0, 3.0]})
    assert human_correlation(same, ranks, metrics=["seq"])["rho"].iloc[0] == pytest.approx(1.0)
    ranks["rank"] = [3.0, 2.0, 1.0]
    assert human_correlation(same, ranks, metrics=["seq"])["rho"].iloc[0] == pytest.approx(-1.0)


def test_human_correlation_of_another_condition_is_empty_when_no_targets_match():
    human = pd.DataFrame({"target": list("ABCDEF"), "rank": [1.0, 3, 6, 2, 4, 5]})
    corr = human_correlation(table4_leaderboard(), human, condition="adaptive")
    assert set(corr["n_targets"]) == {0} and corr["rho"].isna().all()


def test_plots_return_png_and_placeholders():
    calm = {"subscale": "stress_management_stress_tolerance", "composite": "stress_management"}
    rows = [
        *trajectory("m", "a", True, True, direct=True),
        *trajectory("m", "b", True, False, direct=True, **calm),
        *trajectory("rand", "a", True, False, is_baseline=True),
        *trajectory("rand", "b", False, True, is_baseline=True, **calm),
    ]
    table = seq_breakdown(frame(rows), resamples=20, seed=0)
    for png in (subscale_accuracy_png(table), subscale_accuracy_png(table, "acc1"), sequential_direct_png(table)):
        assert png.startswith(PNG) and len(png) > 5000
    empty = subscale_accuracy_png(table.iloc[0:0])
    assert empty.startswith(PNG) and len(empty) < 5000
    assert sequential_direct_png(None).startswith(PNG)
    assert len(subscale_accuracy_png(table, condition="adaptive")) < 5000  # nothing under that condition


def test_empty_choices_give_empty_tables(hand):
    empty = hand.iloc[0:0]
    assert seq_leaderboard(empty, resamples=10, seed=0).empty
    assert seq_breakdown(empty, resamples=10, seed=0).empty
    with pytest.raises(ValueError, match="lacks column"):
        seq_leaderboard(hand.drop(columns=["shared_call"]), resamples=10, seed=0)


# ------------------------------------------------------------------------------------------ the SEQ cohort

SQL_DIR = __import__("pathlib").Path(__file__).resolve().parents[2] / "sql"
# five evaluated models: three end-to-end, two cascades; Acc_traj = right trajectories / 10 items
MODELS = {
    "omni-a": ("audio", 3),
    "omni-b": ("audio", 4),
    "omni-c": ("audio", 5),
    "casc-d": ("cascaded-emo_des", 6),
    "casc-e": ("cascaded-emo_num", 9),
}


def slate_of_seven() -> list[dict]:
    """The five models, the two embedded chooser baselines (0.2 and 0.3), an oracle text check (1.0) and an
    audio model that ran only direct inference (0.8)."""
    rows = [r for name, (kind, right) in MODELS.items() for r in cohort_rows(name, right, n=10, speech_input=kind)]
    rows += cohort_rows("random-chooser-baseline", 2, n=10, is_baseline=True, speech_input="embedded")
    rows += cohort_rows("acoustic-chooser-baseline", 3, n=10, is_baseline=True, speech_input="embedded")
    rows += cohort_rows("oracle", 10, n=10, speech_input="oracle_text")
    rows += cohort_rows("direct-only", 8, n=10, inference="direct")
    return rows


def test_seq_cohort_is_the_evaluated_models_only():
    board = seq_leaderboard(frame(slate_of_seven()), resamples=20, seed=0).set_index("target")
    # the five alone: 0.3 0.4 0.5 0.6 0.9 -> median 0.5, |x - 0.5| = 0.2 0.1 0 0.1 0.4 -> MAD 0.1
    unit = 1.4826 * 0.1
    assert board.loc["casc-d", "seq"] == pytest.approx(100 + 15 * 0.1 / unit)  # 110.1, not 120.2 with baselines
    assert board.loc["casc-e", "seq"] == pytest.approx(100 + 15 * 0.4 / unit)
    assert board.loc["omni-a", "seq"] == pytest.approx(100 - 15 * 0.2 / unit)
    # the rest are placed on the five's scale without moving it
    assert board.loc["random-chooser-baseline", "seq"] == pytest.approx(100 - 15 * 0.3 / unit)
    assert board.loc["oracle", "seq"] == pytest.approx(100 + 15 * 0.5 / unit)
    assert board.loc["direct-only", "headline_inference"] == "direct"
    assert board.loc["direct-only", "seq"] == pytest.approx(100 + 15 * 0.3 / unit)
    assert board.loc["chance", "seq"] == pytest.approx(100 - 15 * 0.25 / unit)
    assert set(board["seq_cohort"]) == {"casc-d,casc-e,omni-a,omni-b,omni-c"}
    assert set(board["seq_cohort_kind"]) == {"models"}
    assert sorted(board.index[board["in_seq_cohort"]]) == sorted(MODELS)


# a shortcut rule (always the calmer clip) right on every item: placed on the scale, never a member of the cohort
SHORTCUT = {"is_baseline": True, "speech_input": "embedded", "model": "calmer-chooser"}


def test_seq_cohort_falls_back_to_the_baselines_and_says_so():
    rows = [
        *cohort_rows("random-chooser-baseline", 1, is_baseline=True, speech_input="embedded"),
        *cohort_rows("acoustic-chooser-baseline", 3, is_baseline=True, speech_input="embedded"),
        *cohort_rows("oracle", 5, speech_input="oracle_text"),
        *cohort_rows("calmer-chooser-baseline", 5, **SHORTCUT),
    ]
    board = seq_leaderboard(frame(rows), resamples=20, seed=0).set_index("target")
    assert set(board["seq_cohort_kind"]) == {"baselines_only"}
    assert set(board["seq_cohort"]) == {"acoustic-chooser-baseline,random-chooser-baseline"}
    assert not board.loc["calmer-chooser-baseline", "in_seq_cohort"]
    assert board.loc["calmer-chooser-baseline", "seq"] == pytest.approx(100 + 3 * SCALE)
    # 0.2 and 0.6: median 0.4, MAD 0.2
    assert board.loc["acoustic-chooser-baseline", "seq"] == pytest.approx(100 + SCALE)
    assert board.loc["oracle", "seq"] == pytest.approx(100 + 3 * SCALE) and not board.loc["oracle", "in_seq_cohort"]
    assert "baselines only: no model evaluated" in seq_cohort_note(seq_leaderboard(frame(rows), resamples=20, seed=0))


def test_a_named_seq_cohort_replaces_the_rule():
    board = seq_leaderboard(
        frame(slate_of_seven()), resamples=20, seed=0, cohort=["omni-a", "omni-b", "omni-c"]
    ).set_index("target")
    # 0.3 0.4 0.5: median 0.4, MAD 0.1
    assert board.loc["casc-d", "seq"] == pytest.approx(100 + 2 * 15 / 1.4826)
    assert set(board["seq_cohort_kind"]) == {"named"} and set(board["seq_cohort"]) == {"omni-a,omni-b,omni-c"}


def test_conditioning_uses_the_same_cohort():
    rows = [*slate_of_seven(), *cohort_rows("omni-c", 9, n=10, condition="adaptive")]
    table = conditioning_table(seq_leaderboard(frame(rows), resamples=20, seed=0)).set_index("target")
    assert table.loc["omni-c", "seq_adaptive"] == pytest.approx(100 + 15 * 0.4 / (1.4826 * 0.1))
    assert table["seq_scale_cohort"].iloc[0] == "default: casc-d,casc-e,omni-a,omni-b,omni-c"


def test_sql_twin_uses_the_same_cohort():
    import duckdb

    from eyt_dagster.speech_eq.table_contracts import coerce_slm_choices

    choices = coerce_slm_choices(frame(slate_of_seven()))
    board = seq_leaderboard(choices, resamples=20, seed=0)
    with duckdb.connect() as con:
        con.execute("CREATE SCHEMA speech")
        con.register("choices", choices)
        con.execute("CREATE TABLE speech.slm_choices AS SELECT * FROM choices")
        con.execute((SQL_DIR / "seq_leaderboard.sql").read_text())
        sql = con.execute("SELECT * FROM seq_leaderboard_sql").df().set_index("target")
    # the twin reads the headline (sequential) rows: the direct-only target has none
    assert sorted(sql.index) == sorted(set(board["target"]) - {"chance", "direct-only"})
    expected = board.set_index("target")
    for target in sql.index:
        assert sql.loc[target, "seq"] == pytest.approx(expected.loc[target, "seq"]), target
    assert sql.loc["casc-d", "seq"] == pytest.approx(100 + 15 / 1.4826)
    assert sql.loc["casc-d", "seq_cohort_kind"] == "models" and not sql.loc["oracle", "in_seq_cohort"]


def test_sql_twin_falls_back_to_the_baselines():
    import duckdb

    from eyt_dagster.speech_eq.table_contracts import coerce_slm_choices

    rows = [
        *cohort_rows("random-chooser-baseline", 1, is_baseline=True, speech_input="embedded"),
        *cohort_rows("acoustic-chooser-baseline", 3, is_baseline=True, speech_input="embedded"),
        *cohort_rows("oracle", 5, speech_input="oracle_text"),
        *cohort_rows("calmer-chooser-baseline", 5, **SHORTCUT),
    ]
    with duckdb.connect() as con:
        con.execute("CREATE SCHEMA speech")
        con.register("choices", coerce_slm_choices(frame(rows)))
        con.execute("CREATE TABLE speech.slm_choices AS SELECT * FROM choices")
        con.execute((SQL_DIR / "seq_leaderboard.sql").read_text())
        sql = con.execute("SELECT * FROM seq_leaderboard_sql").df().set_index("target")
    assert sql.loc["oracle", "seq"] == pytest.approx(100 + 3 * SCALE)
    assert set(sql["seq_cohort_kind"]) == {"baselines_only"}
    assert not sql.loc["calmer-chooser-baseline", "in_seq_cohort"]
    assert sql.loc["calmer-chooser-baseline", "seq"] == pytest.approx(100 + 3 * SCALE)


def test_a_named_cohort_must_name_speech_targets(tmp_path):
    import yaml

    from eyt_dagster.slate import SlateError, load_slate

    from support.slates import write_slate

    path = write_slate(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["speech"]["evaluation"]["seq_cohort"] = ["random-chooser-baseline", "omni-x"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SlateError, match=r"speech\.evaluation\.seq_cohort: 'omni-x' is not a SpeechEQ target"):
        load_slate(path)
    data["speech"]["evaluation"]["seq_cohort"] = ["reflective-baseline"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SlateError, match="'reflective-baseline' is not a SpeechEQ target"):
        load_slate(path)
    data["speech"]["evaluation"]["seq_cohort"] = ["random-chooser-baseline", "acoustic-chooser-baseline"]
    path.write_text(yaml.safe_dump(data))
    assert load_slate(path).speech.evaluation.seq_cohort == ["random-chooser-baseline", "acoustic-chooser-baseline"]


# ------------------------------------------------------------------------- human ranking on the rated items


def rated_and_unrated() -> pd.DataFrame:
    """Three models on ten items. On the rated items i0-i2, A is best and C worst (trajectories right: A 3,
    B 2, C 1); over all ten the order turns round (A 3, B 6, C 8)."""
    right = {"A": {0, 1, 2}, "B": {0, 1, 3, 4, 5, 6}, "C": {0, 3, 4, 5, 6, 7, 8, 9}}
    return frame([r for t, ok in right.items() for i in range(10) for r in trajectory(t, f"i{i}", i in ok, True)])


def test_human_ranking_on_named_items_uses_those_items_only(tmp_path):
    # per-item human ranks; mean rank A 4/3, B 2, C 8/3 -> A, B, C
    text = "target,item_id,rank\n" + "".join(
        f"{t},{i},{r}\n" for i, ranks in [("i0", "123"), ("i1", "132"), ("i2", "213")] for t, r in zip("ABC", ranks)
    )
    ranking = read_human_ranking(write(tmp_path, text))
    assert ranking.items == ("i0", "i1", "i2")
    assert list(ranking.targets["rank"]) == pytest.approx([4 / 3, 2.0, 8 / 3])
    corr = human_alignment(rated_and_unrated(), ranking, resamples=20, seed=0).set_index("metric")
    assert set(corr["item_scope"]) == {"rated"} and set(corr["n_scope_items"]) == {3}
    assert corr.loc["acc_traj", "rho"] == pytest.approx(1.0)  # 1, 2/3, 1/3 on the rated items
    assert corr.loc["seq", "rho"] == pytest.approx(1.0) and corr.loc["acc1", "rho"] == pytest.approx(1.0)
    # without item ids the same ranks are correlated over every item, where the order is reversed
    plain = read_human_ranking(write(tmp_path, "target,rank\nA,1\nB,2\nC,3\n"))
    corr = human_alignment(rated_and_unrated(), plain, resamples=20, seed=0).set_index("metric")
    assert set(corr["item_scope"]) == {"all"} and set(corr["n_scope_items"]) == {10}
    assert corr.loc["acc_traj", "rho"] == pytest.approx(-1.0)


def test_human_ranking_naming_items_that_were_not_evaluated_is_an_error(tmp_path):
    ranking = read_human_ranking(write(tmp_path, "target,item_id,rank\nA,i0,1\nB,i0,2\nA,zz,1\nB,zz,2\n"))
    with pytest.raises(ValueError, match=r"ranking\.csv: item\(s\) \['zz'\] .*not in speech\.slm_choices"):
        human_alignment(rated_and_unrated(), ranking, resamples=20, seed=0)


# -- explanations: each stored number is its explanation's value ---------------------------------------------


def test_accuracies_explained_from_the_items(hand):
    stored = seq_leaderboard(hand, resamples=50, seed=1).set_index("target").loc["m"]
    mode, items = cell_items(hand[hand["target"] == "m"])
    explained = explained_accuracies(items)
    assert mode == "sequential"
    # a TT, b TF, c FT, d TF scored; e and f failed: Acc1 3/4, Acc2 2/4, Acc_traj 1/4 (both rounds right: a)
    for name, hits in (("acc1", 3), ("acc2", 2), ("acc_traj", 1)):
        assert explained[name].value == stored[name] == hits / 4
        share = explained[name].steps[-1]
        assert (share.arithmetic, share.values) == (f"{hits} / 4", (float(hits), 4.0))
    assert explained["acc1"].steps[0].label.endswith("(4 of 6)")
    assert any("2 item(s) left out" in note for note in explained["acc1"].notes)
    assert any("not Acc1 x Acc2" in note for note in explained["acc_traj"].notes)


def test_seq_explained_from_the_cohorts_acc_traj():
    # Acc_traj 0.2, 0.4, 0.5, 0.9: median 0.45; absolute deviations 0.25, 0.05, 0.05, 0.45, MAD 0.15;
    # t9: Z = (0.9 - 0.45) / (1.4826 x 0.15) = 2.02347, SEQ = 100 + 15 x 2.02347 = 130.35
    rights = {"t2": 2, "t4": 4, "t5": 5, "t9": 9}
    board = seq_leaderboard(
        frame([r for t, k in rights.items() for r in cohort_rows(t, k, n=10)]), resamples=20, seed=0
    ).set_index("target")
    members = [t for t in rights if board.loc[t, "in_seq_cohort"]]
    assert members == list(rights)
    values = [float(board.loc[t, "acc_traj"]) for t in members]
    explained = explained_seq(float(board.loc["t9", "acc_traj"]), values, members)
    z = (0.9 - 0.45) / (1.4826 * 0.15)
    assert explained.value == board.loc["t9", "seq"] == pytest.approx(100 + 15 * z)
    steps = explained.steps
    assert steps[0].arithmetic == "t2 0.2, t4 0.4, t5 0.5, t9 0.9" and steps[0].values == (0.2, 0.4, 0.5, 0.9)
    assert (steps[1].arithmetic, steps[1].result) == ("median(0.2, 0.4, 0.5, 0.9)", pytest.approx(0.45))
    assert steps[2].arithmetic == "median(0.05, 0.05, 0.25, 0.45)" and steps[2].result == pytest.approx(0.15)
    assert steps[3].arithmetic == "(0.9 - 0.45) / (1.4826 x 0.15)" and steps[3].result == pytest.approx(z)
    assert steps[4].result == explained.value and len(steps) == 5  # not clipped
    # chance (Acc_traj 0.25) placed on the same scale: Z = (0.25 - 0.45) / 0.22239, SEQ 86.5
    chance = board[board.index == "chance"].iloc[0]
    placed = explained_seq(0.25, values, members)
    assert placed.value == chance["seq"] == pytest.approx(100 + 15 * (-0.2 / 0.22239))
    assert placed.steps[4].arithmetic == f"100 + 15 x ({figure(placed.steps[3].result)})"


def test_seq_explained_when_clipped_or_the_cohort_does_not_spread():
    clipped = explained_seq(1.0, [0.1, 0.2, 0.3])  # Z = 0.7 / (1.4826 x 0.1) = 4.72: 170.8, kept at 160
    assert clipped.value == 160.0 and clipped.steps[-1].label.startswith("kept within [40, 160]")
    flat = explained_seq(0.9, [0.5, 0.5, 0.5])
    assert flat.value == seq_on_scale(0.9, [0.5, 0.5, 0.5]) == 100.0 and "MAD = 0" in flat.steps[3].label
    assert np.isnan(explained_seq(0.5, []).value) and "no cohort member" in explained_seq(0.5, []).steps[0].label
