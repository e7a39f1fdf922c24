"""How the explorer's pages write values: one number format per scale, defined here and nowhere else (Jinja2
filters), so two numbers on the same scale always read alike ("3.0" beside "83.7", never "3.000" beside "83.7").

The scales:

| scale | what | written |
| --- | --- | --- |
| `score` | a 0-100 score (Empathy, satisfaction of a dialogue, a difference of such scores) | `83.7` |
| `rate` | a 0-1 rate, share or accuracy; also a cosine, drift and a 0-1 sub-indicator | `0.875` |
| `rating` | a 1-5 rating (a judge's satisfaction), a 0-5 dimension sum | `4.25` |
| `seq` | SEQ, the 40-160 scale of SpeechEQ (mean 100, SD 15) | `112.4` |
| `usd` | US dollars | `$0.0012`, `$12.34` |
| `count` | a whole number of things | `1,234` |
| `mean` | a mean of counts (turns per dialogue, tokens per second) | `5.5` |
| `seconds` | a duration in seconds (a latency) | `0.80` |

A template names the scale (`{{ x|num('rating') }}`) or the column, whose scale COLUMN_SCALES gives
(`{{ r[c]|num(c) }}`, for a loop over columns). Every scale writes a missing value as an en dash and a bool as
yes/no. A float of no known scale (a feature gap of the contrast filter, say) gets 3 decimals."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core.cost_words import dollars
from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS

DASH = "\u2013"


def _fixed(decimals: int) -> Callable[[float], str]:
    def write(value: float) -> str:
        return f"{value:,.{decimals}f}"

    return write


SCALES: dict[str, Callable[[float], str]] = {
    "score": _fixed(1),
    "rate": _fixed(3),
    "rating": _fixed(2),
    "seq": _fixed(1),
    "usd": dollars,
    "count": _fixed(0),
    "mean": _fixed(1),
    "seconds": _fixed(2),
}
UNSCALED = _fixed(3)  # a float whose scale is not known here

# A column's scale wherever the explorer shows it. A name that means different scales in different tables (a
# judge's satisfaction is 1-5, a dialogue's 0-100) is written with its scale named in the template instead.
COLUMN_SCALES: dict[str, str] = {
    # EYT-Bench: dialogue.leaderboard and dialogue.dialogue_scores
    **dict.fromkeys(("satisfaction", "empathy", "persona", "anthropomorphic"), "score"),
    **dict.fromkeys(("voice_empathy", "text_empathy"), "score"),
    **dict.fromkeys(("explicit_acc", "latent_acc", "emotion_acc", "emotion_macro_f1", "ficr"), "rate"),
    **dict.fromkeys(("drift", "directional_alignment", "completed", "voice_completed", "text_completed"), "rate"),
    **dict.fromkeys(("cos_gold_pred", "cos_pred_final", "leak_cosine", "leak_overlap"), "rate"),
    **dict.fromkeys(SUBSCORE_COLUMNS, "rate"),
    **dict.fromkeys(("n_dialogues", "n_errors", "n_turns", "n_judged_turns"), "count"),
    **dict.fromkeys(("explicit_correct", "latent_correct", "emotion_correct"), "count"),
    **dict.fromkeys(("n_failed_verdicts", "n_failed_final_verdicts", "n_judges"), "count"),
    "mean_turns": "mean",
    # SpeechEQ: speech.eq_items, a target's choices per item, speech.seq_leaderboard and speech.seq_breakdown
    **dict.fromkeys(("turn4_contrast", "turn6_contrast", "choices", "correct", "parse_failed", "errors"), "count"),
    **dict.fromkeys(("n_items", "n_error_items", "n_items_direct", "queries"), "count"),
    **dict.fromkeys(("acc1", "acc1_low", "acc1_high", "acc2", "acc2_low", "acc2_high"), "rate"),
    **dict.fromkeys(("acc_traj", "acc_traj_low", "acc_traj_high", "acc2_direct", "acc_traj_direct"), "rate"),
    **dict.fromkeys(("contextual_amnesia", "sequential_direct_delta"), "rate"),
    **dict.fromkeys(("position_bias_rate", "parse_failure_rate"), "rate"),
    "seq": "seq",
    "cost_per_100_queries": "usd",
    "mean_latency_s": "seconds",
    "tokens_per_s": "mean",
    # calls and costs
    **dict.fromkeys(("cost_usd", "spent_usd", "saved_usd_estimate"), "usd"),
    **dict.fromkeys(("latency_s",), "seconds"),
    **dict.fromkeys(("tokens_in", "tokens_out", "tokens", "reasoning_tokens", "retries", "calls"), "count"),
    # the spoken EYT-Bench
    **dict.fromkeys(("wer", "cer", "preserve_ratio", "acc_toned", "acc_plain"), "rate"),
    **dict.fromkeys(("turns", "ref_words", "word_errors", "n_paired"), "count"),
}


def _missing(value: Any) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # lists and arrays
        return False


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not _is_bool(value)


def scale_of(name: str) -> str | None:
    """The scale `name` is (a scale's own name) or is written on (a column's), or None."""
    return name if name in SCALES else COLUMN_SCALES.get(name)


def number(value: Any, scale: str = "") -> str:
    """A value as the pages show it: missing as an en dash, a bool as yes/no, a number in the format of `scale`
    (a scale of SCALES, or a column of COLUMN_SCALES), a float of no known scale to 3 decimals, anything else as
    it is."""
    if _missing(value):
        return DASH
    if _is_bool(value):
        return "yes" if value else "no"
    if not _is_number(value):
        return str(value)
    known = scale_of(scale) if scale else None
    if known is not None:
        return SCALES[known](float(value))
    if isinstance(value, (float, np.floating)):
        return UNSCALED(float(value))
    return str(value)


def usd(value: Any) -> str:
    """Dollars as every page writes them (for Python code that builds a page's text)."""
    return number(value, "usd")


def count(value: Any) -> str:
    """A whole number of things as every page writes it (for Python code that builds a page's text)."""
    return number(value, "count")


def mark(right: Any) -> str:
    return "right" if right else "wrong"


def yesno(value: Any) -> str:
    return "yes" if value else "no"


def present(value: Any) -> bool:
    """Whether a value is there (not None, NaN or NA): a number a page can link to its arithmetic."""
    return not _missing(value)


FILTERS = {"num": number, "mark": mark, "yesno": yesno, "present": present}
