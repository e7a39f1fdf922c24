"""A number together with the arithmetic that made it, written with the actual values.

A function whose number a reader may want explained returns an `Explained`: the value and its steps, each step in
words, as an operation with the values put in, and what it gives. The pipeline stores `.value`; the explorer shows
the steps next to the stored number. Because both come out of one call, they cannot disagree: an explanation
computed from rows the stored number was not made from (the rows changed since) says so (`agrees`). Pure; knows
no benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any

# A step's or a number's value: a number, a yes/no, a text, or missing (None or NaN).
Figure = float | int | bool | str | None


@dataclass(frozen=True)
class Step:
    """One line of a number's arithmetic."""

    label: str  # what the step does, in words
    arithmetic: str = ""  # the operation with the actual values in it, e.g. "(3.5 + 4) / 2"; empty: a stated fact
    result: Figure = None  # what it gives; None for a step that only states a fact
    values: tuple[float, ...] = ()  # the numbers `arithmetic` reads, unrounded, in the order it writes them


@dataclass(frozen=True)
class Explained:
    """A number and the steps that compute it. `value` is the number itself, as the pipeline stores it."""

    label: str  # what the number is, e.g. "Empathy of this dialogue (0-100)"
    value: Figure
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what was left out and why, and the decisions taken

    def number(self) -> float:
        """The value as a float: NaN when missing, 1.0 / 0.0 for a yes / no."""
        value = self.value
        if value is None or isinstance(value, str) or missing(value):
            return math.nan
        return float(value)

    def then(self, *steps: Step, notes: Iterable[str] = ()) -> Explained:
        """The same number with more steps and notes after these (what a reader adds: an interval, a count)."""
        return replace(self, steps=(*self.steps, *steps), notes=(*self.notes, *notes))


def missing(value: Any) -> bool:
    """None or NaN (pandas' NA included)."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, and pandas.NA (whose comparison is NA, truthy-less: TypeError)
    except TypeError:
        return True


def figure(value: Any) -> str:
    """A value as an explanation writes it: missing as 'missing', a yes/no as yes/no, a whole number without
    decimals, any other number to 6 significant digits (enough to redo the arithmetic by hand)."""
    if isinstance(value, float):  # numpy's float64 too: the common case first
        if value != value:
            return "missing"
        if math.isinf(value):
            return "infinite"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if missing(value):
        return "missing"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, Real):
        return figure(float(value))
    return str(value)


def term(value: Any) -> str:
    """`figure`, in parentheses when negative, for a value written after an operator: "100 + 15 x (-1.2)"."""
    written = figure(value)
    return f"({written})" if written.startswith("-") else written


def sum_of(values: Sequence[Any], limit: int = 12) -> str:
    """'a + b + c' of the values (the first and last few of a long list, with how many are between)."""
    if len(values) > limit:
        head, tail = values[: limit // 2], values[len(values) - limit // 2 :]
        shown = [*map(figure, head), f"... ({len(values) - limit} more) ...", *map(figure, tail)]
    else:
        shown = [figure(v) for v in values]
    return " + ".join(shown) if shown else "0"


def agrees(stored: Any, computed: Any) -> bool:
    """Whether a stored number and its explanation's value are the same: both missing, equal yes/no or text, or
    equal numbers (to 1e-12 relative, for a number that went through a file and back)."""
    if missing(stored) or missing(computed):
        return missing(stored) and missing(computed)
    if isinstance(stored, Real) and isinstance(computed, Real):
        return math.isclose(float(stored), float(computed), rel_tol=1e-12, abs_tol=1e-12)
    return bool(stored == computed)


def explained_difference(label: str, left: Explained, right: Explained, notes: Iterable[str] = ()) -> Explained:
    """left - right, with the arithmetic of both: each one's steps under its name, then the subtraction of their
    values (`number()`: what a table stores as left - right). Their notes are kept, each once, then `notes`."""
    a, b = left.number(), right.number()
    steps = [
        replace(step, label=f"{operand.label}: {step.label}") for operand in (left, right) for step in operand.steps
    ]
    steps.append(Step(f"{left.label} - {right.label}", f"{figure(a)} - {term(b)}", a - b, (a, b)))
    return Explained(label, a - b, tuple(steps), tuple(dict.fromkeys((*left.notes, *right.notes, *notes))))
