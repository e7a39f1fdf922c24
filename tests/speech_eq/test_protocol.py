"""The forced-choice protocol's pure parts: seeded option order, replies, accuracies, position bias."""

import pandas as pd
import pytest
from pydantic import ValidationError

from eyt_dagster.speech_eq.protocol import ChoiceReply, accuracies, correct_option, option_order, position_bias_rate

pytestmark = pytest.mark.unit


def test_option_order_is_reproducible_balanced_and_flippable():
    orders = [option_order(f"item-{i}", 1, seed=20260521) for i in range(400)]
    assert orders == [option_order(f"item-{i}", 1, seed=20260521) for i in range(400)]
    first = sum(o[0] == "resonant" for o in orders) / len(orders)
    assert 0.4 < first < 0.6  # a coin per item, not a fixed side
    assert option_order("x", 1, 7) != option_order("x", 1, 7, flipped=True)
    assert sorted(option_order("x", 2, 7)) == ["dissonant", "resonant"]
    assert correct_option(("dissonant", "resonant")) == 2


def test_choice_reply_accepts_only_1_or_2():
    assert ChoiceReply.model_validate({"selected_option": 2, "reasoning": "warmer"}).selected_option == 2
    with pytest.raises(ValidationError):
        ChoiceReply.model_validate({"selected_option": 3})


def test_accuracies_on_a_hand_case():
    rows = [
        ("a", 1, True),
        ("a", 2, True),
        ("b", 1, True),
        ("b", 2, False),
        ("c", 1, False),
        ("c", 2, True),
        ("d", 1, False),
    ]  # d's round 2 is missing (e.g. the run failed): wrong for Acc2 and Acc_traj
    choices = pd.DataFrame(rows, columns=["item_id", "round", "correct"])
    assert accuracies(choices) == {"n_items": 4, "acc1": 0.5, "acc2": 0.5, "acc_traj": 0.25}


def test_position_bias_counts_same_position_in_both_orders():
    choices = pd.DataFrame(
        {"item_id": ["a", "a", "b", "b", "c"], "round": [1, 1, 1, 1, 1], "selected_option": [1, 1, 1, 2, 1]}
    )
    assert position_bias_rate(choices) == 0.5  # a followed position 1 both times; b followed the clip
