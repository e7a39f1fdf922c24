"""The two-round forced-choice protocol of SpeechEQ (paper §2.4, SPEC §4.4), the parts that need no model:
the seeded option order, the reply a model must give, and the accuracies over its choices. Pure logic."""

from __future__ import annotations

import hashlib
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

ROUND_TURNS = {1: 4, 2: 6}  # round 1 chooses between the turn-4 clips, round 2 between the turn-6 clips
OPTIONS = ("resonant", "dissonant")


class ChoiceReply(BaseModel):
    """What a model answers in each round: which clip (1 or 2) fits, and why."""

    model_config = ConfigDict(extra="ignore")

    selected_option: Literal[1, 2]
    reasoning: str = Field(default="", description="One or two sentences.")

    @field_validator("selected_option", mode="before")
    @classmethod
    def _option_number(cls, value: object) -> object:
        """Accept the ways models write an option: 1, "1", "Option 1", "option2" (paper App. D's format)."""
        if isinstance(value, str):
            digits = "".join(ch for ch in value if ch.isdigit())
            if digits in ("1", "2") and value.strip().lower().replace(" ", "") in (digits, f"option{digits}"):
                return int(digits)
        return value


def option_order(item_id: str, round_: int, seed: int, flipped: bool = False) -> tuple[str, str]:
    """Which clip is option 1 and which option 2, drawn from the seed per item and round (reproducible;
    `flipped` gives the other order, for the position-bias setting)."""
    digest = hashlib.sha256(f"{seed}:{item_id}:{round_}".encode()).digest()
    resonant_first = (digest[0] % 2 == 0) != flipped
    return OPTIONS if resonant_first else (OPTIONS[1], OPTIONS[0])


def correct_option(order: tuple[str, str]) -> int:
    """The option number (1 or 2) of the resonant clip."""
    return order.index("resonant") + 1


def accuracies(choices: pd.DataFrame) -> dict[str, float]:
    """Acc1, Acc2 and Acc_traj (both rounds right) over items, from rows with item_id, round and correct
    (a reply that never parsed counts as wrong). Items missing a round count as wrong for Acc_traj."""
    by_round = choices.assign(correct=choices["correct"].astype(float)).pivot_table(
        index="item_id", columns="round", values="correct", aggfunc="min")
    by_round = by_round.reindex(columns=[1, 2]).fillna(0.0) > 0
    return {"n_items": int(len(by_round)), "acc1": float(by_round[1].mean()), "acc2": float(by_round[2].mean()),
            "acc_traj": float((by_round[1] & by_round[2]).mean())}


def position_bias_rate(choices: pd.DataFrame) -> float:
    """Where both option orders were asked: the share of (item, round) pairs in which the model picked the
    same position both times, i.e. followed the position rather than the clip."""
    both = choices.groupby(["item_id", "round"])["selected_option"].agg(["nunique", "size"])
    both = both[both["size"] == 2]
    return float((both["nunique"] == 1).mean()) if len(both) else float("nan")
