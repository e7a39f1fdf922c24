"""The sequential design's outcome in words, the same in the HTML report and the explorer: a comparison's verdict,
whether it was decided early, and the one sentence that states the design's error guarantee
(docs/eyt-metrics.md#stopping-when-the-ranking-is-settled)."""

from __future__ import annotations

import math

from eyt_dagster.core import sequential

VERDICT_WORDS = {
    sequential.A_AHEAD: "A ahead",
    sequential.B_AHEAD: "B ahead",
    sequential.WITHIN_MARGIN: "within margin",
    sequential.UNDECIDED: "undecided",
}
GUARANTEE = (
    "The guarantee: for each pool and metric, the chance that any of its comparisons is ever decided the wrong way "
    "(or called within the margin when the true difference is at least the margin) is at most the slate's alpha, "
    "family-wise over every pair of that pool and metric, because each pair is judged by an anytime-valid "
    "confidence sequence at level alpha / K (K pairs); like the paired bootstrap it replaces, the guarantee is "
    "asymptotic, holding as the number of dialogues grows."
)


def verdict_words(verdict: object, undecided_at_n: object, n_total: object) -> str:
    """ "A ahead", "B ahead", "within margin", "undecided at N=100: full design's verdict applies" (a pair still
    open when both targets played the pool's N), or "undecided" (still open: the run has not finished)."""
    if str(verdict) == sequential.UNDECIDED and _true(undecided_at_n):
        n = _whole(n_total)
        return f"undecided at N{'' if n is None else f'={n}'}: full design's verdict applies"
    return VERDICT_WORDS.get(str(verdict), str(verdict))


def early_words(decided_early: object) -> str:
    return "yes" if _true(decided_early) else "no"


def usd(value: object) -> str:
    """'$1.23' (two decimals, thousands separated); an en dash when there is no number."""
    number = _float(value)
    return "\u2013" if number is None else f"${number:,.2f}"


def _true(value: object) -> bool:
    return value is True or str(value).strip().lower() in {"true", "1", "yes"}


def _float(value: object) -> float | None:
    try:
        number = float(str(value))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _whole(value: object) -> int | None:
    number = _float(value)
    return None if number is None else int(number)
