"""The simulator audit: per simulator turn, deterministic checks that the user simulator played its part, and per
dialogue the flags they raise (dialogue.simulator_audit). A dialogue the simulator spoiled measures the simulator,
not the target, so the leaderboard shows each cell's flag rate and dialogue.simulator_audit_effect every metric
with and without flagged dialogues.

The checks, on the answered turns of finished dialogues (turn t's utterance is q_t, the target's reply r_t):
- `latent_leak`: q_t says the hidden latent intent outright. Either its embedding is close to the gold latent
  intent's statement (taxonomy.LATENT_STATEMENTS; cosine >= LEAK_COSINE) or it holds most of that statement's
  content words (share >= LEAK_OVERLAP). Thresholds: on the embedded simulator's 2,622 turns the cosine is at
  most 0.49 (p99 0.42), while hand-written utterances that state the intent score 0.61-0.90.
- `role_flip`: q_t talks as the assistant: it opens with an assistant's formula (ASSISTANT_OPENINGS) or repeats
  the previous reply r_{t-1} (token Jaccard >= COPY_JACCARD).
- `repetition`: q_t repeats an earlier utterance of the dialogue (the same text once normalised, or token
  Jaccard >= REPEAT_JACCARD). A person who is not helped rephrases; a simulator that cycles through a few lines
  does not. (The embedded rule-based simulator has four frustrated lines and cycles through them when replies do
  not help, so it is flagged in every dialogue with the terse baseline: the audit makes that visible.)
- `empty_turn`: q_t is empty or only punctuation.
- `early_end` (per dialogue): the stop rule fired at the first turn it can (turn ACHIEVED_TO_STOP): the simulator
  declared the goal achieved after the very first reply.
Pure logic: the embedding function is handed in, as for intent similarity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.eyt_bench.dialogue_loop import ACHIEVED_TO_STOP
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.taxonomy import LATENT_STATEMENTS

LEAK_COSINE = 0.55
LEAK_OVERLAP = 0.6
COPY_JACCARD = 0.8
REPEAT_JACCARD = 0.9
ASSISTANT_OPENINGS = (
    "as an ai",
    "as a language model",
    "as your assistant",
    "how can i help",
    "how can i assist",
    "how may i help",
    "i'd be happy to help",
    "i would be happy to help",
    "i'm happy to help",
    "i can help you with",
    "here are some",
    "here's a plan",
    "here is a plan",
    "great question",
    "certainly! here",
    "sure! here",
)
TURN_FLAGS = ("latent_leak", "role_flip", "repetition", "empty_turn")
FLAGS = (*TURN_FLAGS, "early_end")
COLUMNS = [
    "target",
    "pool",
    "seed_id",
    "turn",
    "simulator",
    "leak_cosine",
    "leak_overlap",
    *TURN_FLAGS,
    "early_end",
    "simulator_flags",
    "flagged",
]
# texts -> (text -> its normalised vector, what the embedding cost)
Embed = Callable[[list[str]], tuple[dict[str, np.ndarray], Any]]
_WORD = re.compile(r"[a-z0-9']+")
# words too common to count as the statement's content
_STOP = frozenset(
    "a an and are as at be been but by can do for from how i i'm if in is it its just like me my of on or so "
    "that the this to was what when with without you your want really feel".split()
)


def words(text: object) -> list[str]:
    return _WORD.findall(str(text or "").lower())


def content_words(text: object) -> set[str]:
    return {w for w in words(text) if w not in _STOP and len(w) > 2}


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left | right else 0.0


def overlap(utterance: object, statement: str) -> float:
    """Share of the statement's content words that the utterance holds."""
    wanted = content_words(statement)
    return len(wanted & set(words(utterance))) / len(wanted) if wanted else 0.0


def assistant_like(utterance: object) -> bool:
    text = str(utterance or "").strip().lower()
    return any(text.startswith(opening) for opening in ASSISTANT_OPENINGS)


def is_empty(utterance: object) -> bool:
    return not words(utterance)


def _normalised(text: object) -> str:
    return " ".join(words(text))


def audit(dialogue_turns: pd.DataFrame, embed: Embed) -> tuple[pd.DataFrame, Any]:
    """One row per answered turn of a finished dialogue with its checks, the dialogue's `early_end`, its flags
    ("" when clean) and `flagged`; and the embedding's stats (None when no turn was answered)."""
    turns = answered_turns(dialogue_turns).sort_values(["target", "pool", "seed_id", "turn"])
    if not len(turns):
        return pd.DataFrame(columns=COLUMNS), None
    statements = [LATENT_STATEMENTS.get(str(k), "") for k in turns["gold_latent_intent"]]
    texts = list(dict.fromkeys([*map(str, turns["user_text"]), *(s for s in statements if s)]))
    vectors, stats = embed(texts)
    rows = []
    for (target, pool, seed_id), dialogue in turns.groupby(["target", "pool", "seed_id"], sort=False):
        seen: list[tuple[str, list[str]]] = []  # the dialogue's earlier utterances
        previous_reply: list[str] = []
        last = int(dialogue["turn"].max())
        early = last <= ACHIEVED_TO_STOP and str(dialogue.iloc[-1].get("progress")) == "achieved"
        for row in dialogue.itertuples(index=False):
            utterance = str(row.user_text or "")
            tokens = words(utterance)
            statement = LATENT_STATEMENTS.get(str(row.gold_latent_intent), "")
            cosine = float(np.dot(vectors[utterance], vectors[statement])) if statement else float("nan")
            share = overlap(utterance, statement) if statement else float("nan")
            leak = bool(statement) and (cosine >= LEAK_COSINE or share >= LEAK_OVERLAP)
            flip = assistant_like(utterance) or (
                bool(previous_reply) and jaccard(tokens, previous_reply) >= COPY_JACCARD
            )
            repeat = any(
                _normalised(utterance) == text or jaccard(tokens, earlier) >= REPEAT_JACCARD
                for text, earlier in seen
                if tokens
            )
            rows.append(
                {
                    "target": target,
                    "pool": pool,
                    "seed_id": seed_id,
                    "turn": int(row.turn),
                    "simulator": getattr(row, "simulator", None),
                    "leak_cosine": cosine,
                    "leak_overlap": share,
                    "latent_leak": leak,
                    "role_flip": bool(flip),
                    "repetition": repeat,
                    "empty_turn": is_empty(utterance),
                    "early_end": early,
                }
            )
            seen.append((_normalised(utterance), tokens))
            previous_reply = words(row.response_text)
    df = pd.DataFrame(rows)
    keys = ["target", "pool", "seed_id"]
    raised = df.groupby(keys)[list(TURN_FLAGS)].any()
    raised["early_end"] = df.groupby(keys)["early_end"].first()
    labels = raised.apply(lambda r: ",".join(f for f in FLAGS if r[f]), axis=1).rename("simulator_flags")
    df = df.merge(labels.reset_index(), on=keys, how="left")
    df["flagged"] = df["simulator_flags"] != ""
    return df[COLUMNS], stats


def dialogue_flags(audit_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per audited dialogue: target, pool, seed_id, simulator_flags, flagged."""
    keys = ["target", "pool", "seed_id"]
    if not len(audit_rows):
        return pd.DataFrame(columns=[*keys, "simulator_flags", "flagged"])
    return audit_rows.drop_duplicates(keys)[[*keys, "simulator_flags", "flagged"]].reset_index(drop=True)


def flag_rates(audit_rows: pd.DataFrame) -> pd.DataFrame:
    """Per target x pool: the share of audited dialogues the audit flagged (the leaderboard's column)."""
    flags = dialogue_flags(audit_rows)
    if not len(flags):
        return pd.DataFrame(columns=["target", "pool", "simulator_flag_rate"])
    rates = flags.groupby(["target", "pool"])["flagged"].mean().rename("simulator_flag_rate").reset_index()
    return rates
