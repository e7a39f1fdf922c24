"""The simulator audit: per simulator turn, deterministic checks that the user simulator played its part, and per
dialogue the flags they raise (dialogue.simulator_audit). A dialogue the simulator spoiled measures the simulator,
not the target, so the leaderboard shows each cell's flag rate and dialogue.simulator_audit_effect every metric
with and without flagged dialogues.

The checks, on the answered turns of finished dialogues (turn t's utterance is q_t, the target's reply r_t):
- `latent_leak`: q_t says the hidden latent intent outright. Either its embedding is close to the gold latent
  intent's statement in the pool's language (taxonomy.LATENT_STATEMENTS_BY_LANGUAGE; cosine >= LEAK_COSINE) or it
  holds most of that statement's content words (share >= LEAK_OVERLAP; English only: Chinese is written without
  spaces, single characters are not content words, and the share is left empty). Thresholds: on the embedded
  simulator's 2,622 English turns the cosine is at most 0.49 (p99 0.42), while hand-written utterances that state
  the intent score 0.61-0.90 (Chinese: docs/languages.md).
- `role_flip`: q_t talks as the assistant: it opens with an assistant's formula (ASSISTANT_OPENINGS, English and
  Chinese, whatever the pool's language) or repeats
  the previous reply r_{t-1} (token Jaccard >= COPY_JACCARD).
- `repetition`: q_t repeats an earlier utterance of the dialogue (the same text once normalised, or token
  Jaccard >= REPEAT_JACCARD). A person who is not helped rephrases; a simulator that cycles through a few lines
  does not. (The embedded rule-based simulator has four frustrated lines and cycles through them when replies do
  not help, so it is flagged in every dialogue with the terse baseline: the audit makes that visible.)
- `empty_turn`: q_t is empty or only punctuation.
- `early_end` (per dialogue): the stop rule fired at the first turn it can (turn ACHIEVED_TO_STOP): the simulator
  declared the goal achieved after the very first reply.
- `model_leak`, `model_role_flip` (optional): when the slate names a simulator audit model, each turn is also
  put to it once (the persona's latent intent, the previous reply, the utterance); it answers whether the turn
  states the intent and whether it talks as the assistant. Null when no model is configured or its call failed
  (`model_error` says why; a rerun retries only that call, the others come from the call cache).
Pure logic: the embedding function and the auditor are handed in, as for intent similarity and the judges.

The words are Python's `str.lower()` then each CJK ideograph and each run of [a-z0-9'] (so a Chinese utterance has
one token per character, and is not empty); sql/simulator_audit.sql splits them the same way (its header says how),
so the SQL twin recomputes every check but the cosine and the model's answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from eyt_dagster.core.bounds import cosine as unit_cosine
from eyt_dagster.core.errors import PER_ITEM_ERRORS, describe_error
from eyt_dagster.core.languages import DEFAULT_LANGUAGE, IDEOGRAPHS
from eyt_dagster.core.parallel import ordered_map
from eyt_dagster.core.replies import CallStats
from eyt_dagster.core.storage_types import column_names
from eyt_dagster.eyt_bench.dialogue_loop import ACHIEVED_TO_STOP
from eyt_dagster.eyt_bench.dialogue_scoring import answered_turns
from eyt_dagster.eyt_bench.role_protocols import SimulatorAuditor
from eyt_dagster.eyt_bench.table_contracts import SIMULATOR_AUDIT_COLUMNS
from eyt_dagster.eyt_bench.table_rows import stat_column_names, stats_columns
from eyt_dagster.eyt_bench.taxonomy import LATENT_STATEMENTS_BY_LANGUAGE
from eyt_dagster.eyt_bench.types import AuditedTurn

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
    # Chinese: how an assistant opens a message in Chinese chat
    "作为一个ai",
    "作为ai",
    "作为人工智能",
    "作为一个人工智能",
    "作为一个语言模型",
    "作为语言模型",
    "作为你的助手",
    "我是一个ai",
    "我是人工智能",
    "有什么可以帮",
    "有什么我可以帮",
    "我很乐意帮",
    "很高兴为你",
    "很高兴为您",
    "我可以帮你",
    "我可以帮您",
    "以下是一些",
    "以下是几",
    "这里有一些",
    "好问题",
    "这是个好问题",
    "当然！以下",
    "当然，以下",
)
OVERLAP_LANGUAGES = frozenset({"en"})  # where the content-word share is measured (words between spaces)
TURN_FLAGS = ("latent_leak", "role_flip", "repetition", "empty_turn")
MODEL_FLAGS = ("model_leak", "model_role_flip")  # the model check's, null without a model
FLAGS = (*TURN_FLAGS, "early_end", *MODEL_FLAGS)
MODEL_COLUMNS = [*MODEL_FLAGS, "model_reason", "model_error", "audit_model", *stat_column_names("audit_")]
# the table's columns as its contract (table_contracts.py) orders them, without what the asset adds
# (the audit prompt's hash, the embedding model, created_at)
COLUMNS = column_names(SIMULATOR_AUDIT_COLUMNS, without=("audit_prompt_hash", "embedding_model", "created_at"))
# texts -> (text -> its normalised vector, what the embedding cost)
Embed = Callable[[list[str]], tuple[dict[str, np.ndarray], Any]]
_WORD = re.compile(rf"[{IDEOGRAPHS}]|[a-z0-9']+")
# words too common to count as the statement's content
_STOP = frozenset(
    "a an and are as at be been but by can do for from how i i'm if in is it its just like me my of on or so "
    "that the this to was what when with without you your want really feel".split()
)


def _text(value: object) -> str:
    """A cell as text: a missing value (None, NaN, NA) is the empty text, as SQL's coalesce(value, '')."""
    return "" if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)) else str(value)


def words(text: object) -> list[str]:
    return _WORD.findall(_text(text).lower())


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
    text = _text(utterance).strip().lower()
    return any(text.startswith(opening) for opening in ASSISTANT_OPENINGS)


def is_empty(utterance: object) -> bool:
    return not words(utterance)


def _normalised(text: object) -> str:
    return " ".join(words(text))


def audited_turns(dialogue_turns: pd.DataFrame) -> int:
    """How many turns `audit` puts to an auditor: every answered turn of a finished dialogue (a step knows its total
    before it builds its encoder)."""
    return len(answered_turns(dialogue_turns))


def audit(
    dialogue_turns: pd.DataFrame,
    embed: Embed,
    *,
    auditor: SimulatorAuditor | None = None,
    language: str = DEFAULT_LANGUAGE,
    workers: int = 1,
    on_done: Callable[[int, int], None] | None = None,
) -> tuple[pd.DataFrame, Any]:
    """One row per answered turn of a finished dialogue with its checks, the dialogue's `early_end`, its flags
    ("" when clean) and `flagged`; and the embedding's stats (None when no turn was answered). With an `auditor`,
    every row's turn is also put to it (`workers` calls at a time, `on_done(done, total)` after each); without
    one, the model columns are null and the flags are the deterministic checks' alone. `language` is the pool's:
    it picks the latent intents' statements and whether the content-word share is measured."""
    turns = answered_turns(dialogue_turns).sort_values(["target", "pool", "seed_id", "turn"])
    if not len(turns):
        return pd.DataFrame(columns=COLUMNS), None
    known = LATENT_STATEMENTS_BY_LANGUAGE[language]
    statements = [known.get(str(k), "") for k in turns["gold_latent_intent"]]
    texts = list(dict.fromkeys([*map(_text, turns["user_text"]), *(s for s in statements if s)]))
    vectors, stats = embed(texts)
    rows = []
    checks: list[AuditedTurn] = []  # what the auditor is asked, one per row
    for (target, pool, seed_id), dialogue in turns.groupby(["target", "pool", "seed_id"], sort=False):
        seen: list[tuple[str, list[str]]] = []  # the dialogue's earlier utterances
        previous_reply: list[str] = []
        previous_text = ""
        last = int(dialogue["turn"].max())
        early = last <= ACHIEVED_TO_STOP and str(dialogue.iloc[-1].get("progress")) == "achieved"
        for row in dialogue.itertuples(index=False):
            utterance = _text(row.user_text)
            tokens = words(utterance)
            statement = known.get(str(row.gold_latent_intent), "")
            cosine = unit_cosine(vectors[utterance], vectors[statement]) if statement else float("nan")
            measured = bool(statement) and language in OVERLAP_LANGUAGES
            share = overlap(utterance, statement) if measured else float("nan")
            leak = bool(statement) and (cosine >= LEAK_COSINE or (measured and share >= LEAK_OVERLAP))
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
                    "language": language,
                    "leak_cosine": cosine,
                    "leak_overlap": share,
                    "latent_leak": leak,
                    "role_flip": bool(flip),
                    "repetition": repeat,
                    "empty_turn": is_empty(utterance),
                    "early_end": early,
                }
            )
            checks.append(
                AuditedTurn(
                    seed_id=str(seed_id),
                    turn=int(row.turn),
                    latent_intent=_text(row.gold_latent_intent),
                    latent_statement=statement,
                    previous_reply=previous_text,
                    utterance=utterance,
                )
            )
            seen.append((_normalised(utterance), tokens))
            previous_reply = words(row.response_text)
            previous_text = _text(row.response_text)
    df = pd.DataFrame(rows)
    model_rows = model_checks(auditor, checks, workers, on_done) if auditor is not None else None
    df = df.join(pd.DataFrame(model_rows or [no_model_check()] * len(df), index=df.index))
    keys = ["target", "pool", "seed_id"]
    raised = df.groupby(keys)[list(TURN_FLAGS)].any()
    raised["early_end"] = df.groupby(keys)["early_end"].first()
    for flag in MODEL_FLAGS:  # a null (no model, or its call failed) raises nothing
        raised[flag] = df[flag].astype("boolean").fillna(False).astype(bool).groupby([df[k] for k in keys]).any()
    labels = raised.apply(lambda r: ",".join(f for f in FLAGS if r[f]), axis=1).rename("simulator_flags")
    df = df.merge(labels.reset_index(), on=keys, how="left")
    df["flagged"] = df["simulator_flags"] != ""
    return df[COLUMNS], stats


def no_model_check() -> dict[str, Any]:
    """The model columns of a turn no model checked."""
    return {column: None for column in MODEL_COLUMNS}


def model_check(auditor: SimulatorAuditor, turn: AuditedTurn) -> dict[str, Any]:
    """The auditor's answer on one turn as the model columns; a failed call leaves the answer null and says why in
    `model_error` (a rerun asks again: only answered calls are in the call cache)."""
    try:
        reply = auditor.check_turn(turn)
    except PER_ITEM_ERRORS as exc:
        return {**no_model_check(), "audit_model": auditor.model_id, "model_error": describe_error(exc)}
    verdict = reply.value
    return {
        "model_leak": verdict.leaks_intent,
        "model_role_flip": verdict.speaks_as_assistant,
        "model_reason": verdict.reason,
        "model_error": None,
        "audit_model": auditor.model_id,
        **stats_columns("audit_", reply.stats),
    }


def model_checks(
    auditor: SimulatorAuditor, turns: list[AuditedTurn], workers: int, on_done: Callable[[int, int], None] | None = None
) -> list[dict[str, Any]]:
    """The auditor on every turn, `workers` calls at a time (its endpoint's budget caps them), in turn order."""
    return ordered_map(lambda turn: model_check(auditor, turn), turns, workers, on_done)


def model_stats(audit_rows: pd.DataFrame) -> CallStats:
    """What the model check's calls behind these rows cost (cache hits report the original reply's cost)."""
    if not len(audit_rows) or audit_rows["audit_model"].isna().all():
        return CallStats()
    answered = audit_rows[audit_rows["model_error"].isna() & audit_rows["audit_model"].notna()]
    return CallStats(
        calls=len(answered),
        tokens_in=int(answered["audit_tokens_in"].sum()),
        tokens_out=int(answered["audit_tokens_out"].sum()),
        cost_usd=float(answered["audit_cost_usd"].sum()),
        latency_s=float(answered["audit_latency_s"].sum()),
    )


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
