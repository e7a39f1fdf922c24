"""How the explorer's pages write values: numbers, missing values, yes/no (Jinja2 filters)."""

from __future__ import annotations

import math
from typing import Any


def number(value: Any) -> str:
    """A table value as the pages show it: missing as '–', a bool as yes/no, a float to 3 decimals below 10 and to
    1 decimal from 10 (scores on the 0-100 scale), anything else as it is."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        v = float(value)
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3f}"
    try:
        import pandas as pd

        if pd.isna(value):
            return "–"
    except (TypeError, ValueError):
        pass
    return str(value)


def mark(right: Any) -> str:
    return "right" if right else "wrong"


def yesno(value: Any) -> str:
    return "yes" if value else "no"


FILTERS = {"num": number, "mark": mark, "yesno": yesno}
