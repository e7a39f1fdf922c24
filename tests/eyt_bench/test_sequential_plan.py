"""EYT-Bench's sequential design on its tables (eyt_dagster/eyt_bench/sequential_plan.py): the prefix a cell plays,
the per-dialogue values in playing order, and who plays on after a look, on hand-made chat_seeds and scores."""

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.core.sequential import prefix_order
from eyt_dagster.eyt_bench import sequential_plan as plan
from eyt_dagster.eyt_bench.settings import SequentialSettings

pytestmark = pytest.mark.unit

SEED = 7
SETTINGS = SequentialSettings(enabled=True, min_dialogues=10, batch=10, margin={"satisfaction": 0.1})


def _seeds(n, failed=()):
    ids = [f"s{i:02d}" for i in range(n)]
    return pd.DataFrame({"pool": "p", "seed_id": ids, "error": [("boom" if i in failed else None) for i in ids]})


def _scores(values):
    """dialogue_scores rows: {target: {seed_id: satisfaction}}."""
    rows = [
        {"target": t, "pool": "p", "seed_id": s, "satisfaction": v}
        for t, by_seed in values.items()
        for s, v in by_seed.items()
    ]
    return pd.DataFrame(rows)


def test_a_cell_plays_a_prefix_of_one_seeded_order_and_keeps_its_failed_chat_seeds():
    seeds = _seeds(30, failed={"s03"})
    order = plan.playing_order(seeds, SEED)
    assert (
        "s03" not in order
        and len(order) == 29
        and order == prefix_order([f"s{i:02d}" for i in range(30) if i != 3], SEED)
    )
    first = plan.played_prefix(seeds, SEED, 10)
    assert set(first["seed_id"]) == set(order[:10]) | {"s03"}  # the failed one stays: the cell says it has no dialogue
    assert set(plan.played_prefix(seeds, SEED, 20)["seed_id"]) >= set(first["seed_id"])  # a longer run extends it
    shuffled = seeds.sample(frac=1.0, random_state=1)
    assert plan.playing_order(shuffled, SEED) == order  # the order is the ids' and the seed's, not the table's


def test_scores_are_laid_out_in_playing_order_with_nan_where_a_target_has_not_played():
    scores = _scores({"a": {"s00": 1, "s01": 0}, "b": {"s01": 1}})
    values = plan.score_array(scores, ["s01", "s00", "s02"], ["a", "b"], ["satisfaction"])
    assert values.shape == (2, 3, 1)  # satisfaction: the dialogue's own value
    np.testing.assert_array_equal(values[:, :, 0], [[0.0, 1.0, np.nan], [1.0, np.nan, np.nan]])


def test_after_a_look_only_the_targets_of_an_open_comparison_play_on():
    seeds = _seeds(40)
    order = plan.playing_order(seeds, SEED)
    rng = np.random.default_rng(0)
    tied = rng.integers(0, 2, 10) * 0.2
    # "good" satisfies every user; "mid" and "twin" score 0 or 0.2 in opposite orders: far below "good", and their
    # own comparison, +-0.2 a dialogue against a margin of 0.1, stays open after ten
    scores = _scores(
        {
            "good": dict.fromkeys(order[:10], 1.0),
            "mid": dict(zip(order[:10], tied)),
            "twin": dict(zip(order[:10], tied[::-1])),
        }
    )
    state = plan.look("p", seeds, scores, ["good", "mid", "twin"], SETTINGS, SEED, 10)
    verdicts = {(r.target_a, r.target_b): r.verdict for r in state.result.decisions.itertuples()}
    assert verdicts[("good", "mid")] == "a_ahead" and verdicts[("good", "twin")] == "a_ahead"
    assert verdicts[("mid", "twin")] == "undecided"
    assert state.playing_on == ("mid", "twin") and state.next_n == 20
    assert "look at 10 of 40 ChatSEEDs: 2 of 3 comparisons decided; 2 target(s) play on to 20" in state.summary()
    # at the pool's N nothing plays on: the open pair is left to the full design's verdict
    full = _scores({t: dict.fromkeys(order, v) for t, v in (("good", 1), ("mid", 0), ("twin", 0))})
    last = plan.look("p", seeds, full, ["good", "mid", "twin"], SETTINGS, SEED, 40)
    assert last.next_n is None and last.playing_on == ()


def test_savings_price_the_unplayed_dialogues_at_the_cell_mean():
    seeds = _seeds(40)
    order = plan.playing_order(seeds, SEED)
    turns = pd.DataFrame(
        {
            "target": "a",
            "pool": "p",
            "seed_id": [order[0], order[0], order[1]],
            "turn": [1, 2, 1],
            "target_cost_usd": [0.01, 0.02, 0.03],
            "simulator_cost_usd": [0.0, 0.0, 0.04],
        }
    )
    out = plan.savings(seeds, turns, ["a"], SEED, lambda t: True, remote_simulator=True, remote_judges=2)
    row = out.iloc[0]
    # 2 dialogues played for $0.10: $0.05 a dialogue, 38 left: $1.90
    assert (row.played, row.n_total, row.not_played) == (2, 40, 38)
    assert row.spent_usd == pytest.approx(0.10) and row.saved_usd_estimate == pytest.approx(1.90)
    # 1.5 turns a dialogue (2 and 1): target 2 x 1.5 + simulator 2.5 + two judges 2 x 2.5 = 10.5 calls, x 38 left
    assert row.saved_calls_estimate == pytest.approx(399.0)
    embedded = plan.savings(seeds, turns, ["a"], SEED).iloc[0]
    assert embedded.saved_calls_estimate == 0.0  # embedded baselines make no network call
    # the judges' calls count too: turn verdicts $0.06 and final verdicts $0.04 of the two played dialogues (another
    # cell's verdicts are not this cell's): $0.20 for 2 dialogues, $0.10 a dialogue, 38 left: $3.80
    verdicts = pd.DataFrame(
        {"target": ["a", "a", "b"], "pool": "p", "seed_id": order[:3], "judge_cost_usd": [0.02, 0.04, 9.0]}
    )
    finals = pd.DataFrame({"target": "a", "pool": "p", "seed_id": order[:2], "judge_cost_usd": [0.01, 0.03]})
    judged = plan.savings(seeds, turns, ["a"], SEED, judged=(verdicts, finals)).iloc[0]
    assert judged.spent_usd == pytest.approx(0.20) and judged.saved_usd_estimate == pytest.approx(3.80)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"enabled": True}, "margin is required when sequential.enabled is true"),
        ({"margin": {"speed": 0.1}}, "margin: unknown metric(s) ['speed']"),
        ({"margin": {"empathy": 0}}, "must be positive"),
        ({"alpha": 0.7}, "less than 0.5"),
        ({"min_dialogues": 1}, "greater than or equal to 2"),
    ],
)
def test_bad_settings_name_the_field(fields, expected):
    with pytest.raises(
        ValueError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")
    ):
        SequentialSettings(**fields)


def test_the_next_round_carries_on_from_what_is_played_and_a_new_target_catches_up_first():
    seeds = _seeds(40)
    order = plan.playing_order(seeds, SEED)
    assert plan.next_round("p", seeds, _scores({}), ["a", "b"], SETTINGS, SEED)[1] == {"a": 10, "b": 10}  # a start
    tied = np.random.default_rng(0).integers(0, 2, 10) * 0.2
    scores = _scores(
        {
            "good": dict.fromkeys(order[:10], 1.0),
            "mid": dict(zip(order[:10], tied)),
            "twin": dict(zip(order[:10], tied[::-1])),
        }
    )
    # mid and twin are open at 10: both to the next look; good is settled against both and stays
    assert plan.next_round("p", seeds, scores, ["good", "mid", "twin"], SETTINGS, SEED)[1] == {"mid": 20, "twin": 20}
    # a target added later first catches up with the ones it is compared with; nobody else plays yet
    state, to_play = plan.next_round("p", seeds, scores, ["good", "mid", "twin", "new"], SETTINGS, SEED)
    assert to_play == {"mid": 20, "twin": 20, "new": 10} and state.n == 10
    finished = _scores({t: dict.fromkeys(order, v) for t, v in (("good", 1.0), ("mid", 0.0))})
    assert plan.next_round("p", seeds, finished, ["good", "mid"], SETTINGS, SEED)[1] == {}  # nothing left to play
