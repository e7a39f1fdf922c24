"""Whether an import of released SpeechEQ items into one subscale succeeded: zero items is a failure, and so is a
share of skipped folders above the slate's `speech.max_skipped_fraction`. The reasons are grouped so that one line
says what went wrong with how many folders ("45 of 45 skipped: scenario.eq_scale missing"). Pure logic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class ImportVerdict:
    imported: int
    skipped: int
    reasons: tuple[tuple[str, int], ...]  # (reason without the folder, folders), most frequent first
    ok: bool
    text: str


def reason_of(folder: str, why: str) -> str:
    """A skip reason without its folder name: "emp_001: scenario.title: missing" -> "scenario.title missing"."""
    name = PurePath(folder).name
    text = why.removeprefix(f"{name}: ")
    field, sep, problem = text.partition(": ")
    return f"{field} {problem}" if sep and " " not in field else text


def import_verdict(
    subscale: str, imported: int, skipped: Sequence[tuple[str, str]], max_skipped_fraction: float
) -> ImportVerdict:
    """The verdict on one subscale's import, with the line the run's summary and the build report show."""
    folders = imported + len(skipped)
    counts = Counter(reason_of(folder, why) for folder, why in skipped)
    reasons = tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    share = len(skipped) / folders if folders else 1.0
    ok = imported > 0 and share <= max_skipped_fraction + 1e-12
    if folders == 0:
        text = f"{subscale}: no item folder under the released data for this subscale (0 imported)"
    else:
        text = f"{subscale}: {imported} of {folders} item folder(s) imported"
        if reasons:
            text += "; " + "; ".join(f"{n} of {folders} skipped: {reason}" for reason, n in reasons)
    if not ok and folders:
        text += (
            f" (at most {max_skipped_fraction:g} of the folders may be skipped: speech.max_skipped_fraction; "
            f"an import with no item always fails)"
        )
    return ImportVerdict(imported, len(skipped), reasons, ok, text)
