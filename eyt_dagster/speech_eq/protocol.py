"""SpeechEQ's two-round forced-choice protocol (paper §2.4, docs/speecheq-evaluation.md), the parts needing no model:
the seeded option order, the reply a model must give, and the accuracies over its choices. Pure logic.

Two reply formats (see docs/speecheq-evaluation.md):
- `paper` (default): the structure of paper App. D. The model first describes the sound of each option,
  then what the situation demands, then reasons and selects. The JSON schema lists the properties in that
  order, so a model that writes them in schema order commits to its observations before its choice.
- `short`: reasoning, then the selection.
Every free-text field has a maxLength and the selection is an enum (1 or 2).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, get_args

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

ROUND_TURNS = {1: 4, 2: 6}  # round 1 chooses between the turn-4 clips, round 2 between the turn-6 clips
OptionRole = Literal["resonant", "dissonant"]
OPTIONS: tuple[OptionRole, OptionRole] = ("resonant", "dissonant")


ReplyFormat = Literal["paper", "short"]
REPLY_FORMATS: tuple[str, ...] = get_args(ReplyFormat)
DEFAULT_REPLY_FORMAT: ReplyFormat = "paper"
PROFILE_MAX_CHARS = 400  # one option's acoustic profile, or the situational demand
REASONING_MAX_CHARS = 1000
PROFILE_FIELDS = ("acoustic_profile_1", "acoustic_profile_2", "situational_demand")


def _option_number(value: object) -> object:
    """Accept the ways models write an option: 1, "1", "Option 1", "option2" (paper App. D's format)."""
    if isinstance(value, str):
        digits = "".join(ch for ch in value if ch.isdigit())
        if digits in ("1", "2") and value.strip().lower().replace(" ", "") in (digits, f"option{digits}"):
            return int(digits)
    return value


def _no_description(schema: dict[str, Any]) -> None:
    """Keep the docstring out of the JSON schema sent to a model: what each field means is said in the
    prompt file (eyt_dagster/prompts/speech_eval_en.yaml), whose hash versions the evaluation."""
    schema.pop("description", None)


class ChoiceReply(BaseModel):
    """The short reply: why, then which clip (1 or 2) fits."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_no_description)

    reasoning: str = Field(default="", max_length=REASONING_MAX_CHARS)
    selected_option: Literal[1, 2]

    @field_validator("selected_option", mode="before")
    @classmethod
    def _option(cls, value: object) -> object:
        return _option_number(value)


class PaperChoiceReply(BaseModel):
    """The reply of paper App. D, fields in the order the model is to write them: the sound of option 1,
    the sound of option 2, the tone the situation demands, the comparison, the selection."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_no_description)

    acoustic_profile_1: str = Field(max_length=PROFILE_MAX_CHARS)
    acoustic_profile_2: str = Field(max_length=PROFILE_MAX_CHARS)
    situational_demand: str = Field(max_length=PROFILE_MAX_CHARS)
    reasoning: str = Field(max_length=REASONING_MAX_CHARS)
    selected_option: Literal[1, 2]

    @field_validator("selected_option", mode="before")
    @classmethod
    def _option(cls, value: object) -> object:
        return _option_number(value)


AnyChoiceReply = ChoiceReply | PaperChoiceReply
REPLY_SCHEMAS: dict[str, type[AnyChoiceReply]] = {"paper": PaperChoiceReply, "short": ChoiceReply}


def reply_schema(reply_format: str) -> type[AnyChoiceReply]:
    """The pydantic model a reply in this format must validate as."""
    try:
        return REPLY_SCHEMAS[reply_format]
    except KeyError:
        raise ValueError(f"reply format '{reply_format}' is unknown; use one of {list(REPLY_FORMATS)}") from None


def make_reply(
    reply_format: str,
    *,
    selected_option: int,
    reasoning: str,
    acoustic_profile_1: str = "",
    acoustic_profile_2: str = "",
    situational_demand: str = "",
) -> AnyChoiceReply:
    """A reply in the given format (for choosers that are not models, and for the history of direct
    inference); texts longer than a field allows are cut to fit."""
    fields: dict[str, Any] = {"reasoning": reasoning[:REASONING_MAX_CHARS], "selected_option": selected_option}
    if reply_format == "paper":
        fields.update(
            acoustic_profile_1=acoustic_profile_1[:PROFILE_MAX_CHARS],
            acoustic_profile_2=acoustic_profile_2[:PROFILE_MAX_CHARS],
            situational_demand=situational_demand[:PROFILE_MAX_CHARS],
        )
    return reply_schema(reply_format).model_validate(fields)


def option_order(item_id: str, round_: int, seed: int, flipped: bool = False) -> tuple[OptionRole, OptionRole]:
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
        index="item_id", columns="round", values="correct", aggfunc="min"
    )
    by_round = by_round.reindex(columns=[1, 2]).fillna(0.0) > 0
    return {
        "n_items": len(by_round),
        "acc1": float(by_round[1].mean()),
        "acc2": float(by_round[2].mean()),
        "acc_traj": float((by_round[1] & by_round[2]).mean()),
    }


def position_bias_rate(choices: pd.DataFrame) -> float:
    """Where both option orders were asked: the share of (item, round) pairs in which the model picked the
    same position both times, i.e. followed the position rather than the clip."""
    both = choices.groupby(["item_id", "round"])["selected_option"].agg(["nunique", "size"])
    both = both[both["size"] == 2]
    return float((both["nunique"] == 1).mean()) if len(both) else float("nan")
