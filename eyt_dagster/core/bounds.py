"""Values that are bounded by their definition, kept inside their bounds after floating-point rounding.

The dot product of two unit vectors is a cosine in [-1, 1] mathematically, but rounding can give 1.0000005 for two
identical texts (an encoder's float32 vector normalised to a length of 1 +- 1e-7). Intent drift, 1 - cos, then comes
out slightly below 0, and a table contract that holds drift to [0, 2] fails a whole cell on a valid result. Every
bounded value computed from floats goes through here; NaN (undefined) stays NaN.
"""

from __future__ import annotations

import numpy as np


def clipped(value: float, low: float, high: float) -> float:
    """`value` moved into [low, high] (NaN stays NaN)."""
    return float(np.clip(value, low, high))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of two vectors already normalised to length 1: their dot product, within [-1, 1]."""
    return clipped(float(np.dot(a, b)), -1.0, 1.0)


def cosine_of(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of two vectors of any length, within [-1, 1]; 0 when either is all zeros."""
    denom = float(np.sqrt(np.dot(a, a) * np.dot(b, b)))
    return clipped(float(np.dot(a, b)) / denom, -1.0, 1.0) if denom > 0 else 0.0
