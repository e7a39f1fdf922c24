"""A scenario's valence (Positive / Negative / Conflict) from its text, for released items that do not state it.

The authors' published items carry no `scenario_valence`. The project needs one per item: the acoustic chooser's
arousal rule and the per-valence breakdowns read it. These embedded rules count cue words in the scenario's title,
context, description and target intent:

* a conflict cue (an argument, a complaint, blame) makes it Conflict when conflict cues are at least as many as
  either other kind;
* otherwise more positive cues than negative ones make it Positive;
* otherwise it is Negative. That is also the answer when there is no cue: a scene that tests an EQ skill is more
  often a difficulty than a celebration.

The result names how it was obtained (the counts), and the importer records that beside the item
(`generation_metadata.valence_source`), so a reader can tell a published valence from an inferred one. Pure logic.
"""

from __future__ import annotations

import re

from eyt_dagster.speech_eq.vocabulary import Valence

POSITIVE_CUES = (
    "celebrat", "congratulat", "promot", "won ", "wins", "win ", "success", "excit", "proud", "happy", "joy",
    "good news", "achiev", "engag", "birthday", "wedding", "graduat", "accepted", "thrill", "delight", "grateful",
    "thank", "surprise party", "new job", "new baby", "reunion",
)  # fmt: skip
NEGATIVE_CUES = (
    "loss", "lost", "died", "death", "passed away", "funeral", "diagnos", "fired", "laid off", "rejected", "reject",
    "fail", "sad", "grief", "griev", "worr", "anxi", "bad news", "sick", "ill ", "illness", "hospital", "broke up",
    "breakup", "divorce", "lonely", "afraid", "fear", "scared", "stress", "overwhelm", "disappoint", "hurt", "injur",
    "debt", "evict", "miss ", "cancel", "struggl", "exhaust", "burnout", "setback",
)  # fmt: skip
CONFLICT_CUES = (
    "argu", "conflict", "disagree", "dispute", "confront", "accus", "blame", "fight", "quarrel", "complain",
    "criticis", "criticiz", "tension", "resent", "angry", "anger", "furious", "frustrat", "betray", "clash",
    "demand", "refus", "insult", "unfair",
)  # fmt: skip


def _count(text: str, cues: tuple[str, ...]) -> int:
    return sum(len(re.findall(re.escape(cue), text)) for cue in cues)


def infer_valence(*texts: str) -> tuple[Valence, str]:
    """The valence of a scene from its texts, and how it was obtained (for `valence_source`)."""
    text = " " + " ".join(t.lower() for t in texts if t) + " "
    positive, negative, conflict = (_count(text, cues) for cues in (POSITIVE_CUES, NEGATIVE_CUES, CONFLICT_CUES))
    valence: Valence
    if conflict and conflict >= max(positive, negative):
        valence = "Conflict"
    elif positive > negative:
        valence = "Positive"
    else:
        valence = "Negative"
    how = (
        f"inferred by the embedded rules from the scenario text ({positive} positive, {negative} negative, "
        f"{conflict} conflict cue(s))"
    )
    return valence, how
