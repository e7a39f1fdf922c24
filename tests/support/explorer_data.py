"""A tiny hand-made warehouse for the explorer's tests: one chat-model target with 61 dialogues (60 finished, one
failed) and an embedded baseline with the first 12 of its ChatSEEDs, on one pool (the baseline errs on other
turns and scores Empathy lower on turn 2, so side by side has differences to mark), a call cache with the calls
of the first three chat dialogues, and SpeechEQ's tables (tests/support/explorer_speech_data.py). Dialogue 0 carries
hostile text in every field a model writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd

from eyt_dagster.eyt_bench.taxonomy import SUBSCORE_COLUMNS
from eyt_dagster.table_registry import catalog
from resources.models.call_cache import CallCache
from resources.storage.warehouse import store_frame

from support.explorer_speech_data import build_speech

POOL = "nemotron_usa"
TARGET = "chat-target"
BASELINE = "rule-baseline"
JUDGE = "judge-a"
SIMULATOR = "sim-a"
N_FINISHED = 60
N_BASELINE = 12  # the baseline plays ChatSEEDs 0-11
AGE_BUCKETS = ("30-44", "45-59")
OCCUPATIONS = ("registered_nurse", "high_school_teacher", "software_developer")  # ChatSEED i's: OCCUPATIONS[i % 3]
TOPICS = ("a new job", "a move to another city", "caring for a parent", "a falling-out with a friend")
REPEATING = 3  # the chat target's dialogue 3: the simulator repeats itself at turn 2 (a simulator audit flag)  # ChatSEED i's persona is in AGE_BUCKETS[i % 2]
FAILED_SEED = f"{POOL}:p60"
HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1)) "
    '<a href="javascript:alert(2)">click</a>'
)
SECRET = "sk-explorer-test-secret-0123456789"  # set as an API key variable in the tests; no page may show it


def seed_id(i: int) -> str:
    return f"{POOL}:p{i:02d}"


def text(i: int, what: str) -> str:
    return HOSTILE if i == 0 else f"{what} of dialogue {i}"


def build(data: Path) -> dict[str, list]:
    """Write the tables and the call cache under `data`; return the frames (for the tests to compare with)."""
    seeds, turns, sims, verdicts, finals, scores, audits = [], [], [], [], [], [], []
    dialogues = [(TARGET, i) for i in range(N_FINISHED)] + [(BASELINE, i) for i in range(N_BASELINE)]
    for i in range(N_FINISHED + 1):
        seeds.append(
            dict(
                seed_id=seed_id(i),
                pool=POOL,
                persona_id=f"p{i:02d}",
                persona_text=text(i, "persona"),
                topic=HOSTILE if i == 0 else TOPICS[i % len(TOPICS)],
                initial_emotion="anxiety",
                initial_explicit_intent="advice_seeking",
                initial_latent_intent="seeking_reassurance",
                initial_intent_description=text(i, "initial intent"),
                final_intent=text(i, "final intent"),
                first_query=text(i, "first query"),
                raw_reply=json.dumps({"topic": "work", "i": i}),
                simulator=SIMULATOR,
                prompt_hash="seedhash",
            )
        )
    for target, i in dialogues:
        for turn in (1, 2):
            wrong = (i % 4 == 0 and turn == 2) if target == TARGET else (i % 3 == 0 and turn == 1)
            turns.append(
                dict(
                    target=target,
                    pool=POOL,
                    seed_id=seed_id(i),
                    turn=turn,
                    user_text=text(i, "first query") if turn == 1 else text(i, "user turn 2"),
                    gold_explicit_intent="advice_seeking",
                    pred_explicit_intent="advice_seeking",
                    gold_latent_intent="seeking_reassurance",
                    pred_latent_intent="seeking_reassurance",
                    gold_emotion="anxiety",
                    pred_emotion="joy" if wrong else "anxiety",
                    gold_intent_description=f"gold intent {turn}",
                    pred_intent_description=text(i, f"pred intent {turn}"),
                    progress="in_progress",
                    response_text=text(i, f"reply {turn}"),
                    complete=True,
                    simulator=SIMULATOR,
                    target_model=target,
                    prompt_hash="turnhash",
                )
            )
            sims.append(
                dict(
                    target=target,
                    pool=POOL,
                    seed_id=seed_id(i),
                    turn=turn,
                    cos_gold_pred=0.5 + i / 200,
                    cos_pred_final=0.25,
                )
            )
            repeated = target == TARGET and i == REPEATING and turn == 2  # the audit's repetition flag
            audits.append(
                dict(
                    target=target,
                    pool=POOL,
                    seed_id=seed_id(i),
                    turn=turn,
                    simulator=SIMULATOR,
                    leak_cosine=0.2,
                    leak_overlap=0.0,
                    latent_leak=False,
                    role_flip=False,
                    repetition=repeated,
                    empty_turn=False,
                    early_end=False,
                    simulator_flags="repetition" if target == TARGET and i == REPEATING else "",
                    flagged=target == TARGET and i == REPEATING,
                    embedding_model="m",
                )
            )
            low = target == BASELINE and turn == 2  # the baseline's turn-2 Empathy sub-indicators are 0
            verdict = {c: 0.0 if low and c.startswith("empathy_") else 1.0 for c in SUBSCORE_COLUMNS}
            failed = target == TARGET and i == 5 and turn == 1
            verdicts.append(
                dict(
                    target=target,
                    pool=POOL,
                    seed_id=seed_id(i),
                    turn=turn,
                    judge=JUDGE,
                    **({c: None for c in SUBSCORE_COLUMNS} if failed else verdict),
                    rationale=None if failed else text(i, f"rationale {turn}"),
                    raw_reply=None if failed else json.dumps({"turn": turn, "i": i, "target": target}),
                    error="timeout: no reply" if failed else None,
                    judge_model="judge-model",
                )
            )
        finals.append(
            dict(
                target=target,
                pool=POOL,
                seed_id=seed_id(i),
                judge=JUDGE,
                completed=i % 3 != 0,
                satisfaction=4,
                rationale=text(i, "final rationale"),
                raw_reply=json.dumps({"final": True, "i": i, "target": target}),
                judge_model="judge-model",
            )
        )
        scores.append(
            dict(
                target=target,
                pool=POOL,
                seed_id=seed_id(i),
                n_turns=2,
                explicit_correct=2,
                latent_correct=2,
                emotion_correct=1 if i % 4 == 0 else 2,
                drift=round(i / 100, 2),
                directional_alignment=0.1,
                completed=i % 3 != 0,
                satisfaction=75.0,
                empathy=float(i) if target == TARGET else float(3 * i + 3),
                persona=50.0,
                anthropomorphic=60.0,
                n_judged_turns=2,
                n_failed_verdicts=1 if (target == TARGET and i == 5) else 0,
                n_failed_final_verdicts=0,
                alpha=0.1,
                judge_combine="mean",
            )
        )
    # the failed dialogue: one answered turn, then the target's call timed out
    turns.append(
        dict(
            target=TARGET,
            pool=POOL,
            seed_id=FAILED_SEED,
            turn=1,
            user_text="first query of dialogue 60",
            response_text="reply 1 of dialogue 60",
            complete=False,
            simulator=SIMULATOR,
            gold_emotion="anxiety",
            pred_emotion="anxiety",
        )
    )
    turns.append(
        dict(
            target=TARGET,
            pool=POOL,
            seed_id=FAILED_SEED,
            turn=0,
            error="the target timed out",
            error_role="target",
            error_kind="timeout",
            complete=False,
        )
    )
    board = [
        dict(
            target=TARGET,
            pool=POOL,
            family="chat",
            is_baseline=False,
            n_dialogues=60,
            n_errors=1,
            explicit_acc=1.0,
            latent_acc=1.0,
            emotion_acc=0.875,
            emotion_macro_f1=0.4321,
            drift=0.295,
            ficr=0.65,
            satisfaction=75.0,
            empathy=29.5,
            persona=50.0,
            anthropomorphic=60.0,
            mean_turns=2.0,
        ),
        dict(
            target=BASELINE,
            pool=POOL,
            family="baseline",
            is_baseline=True,
            n_dialogues=N_BASELINE,
            n_errors=0,
            explicit_acc=1.0,
            latent_acc=1.0,
            emotion_acc=0.5,
            emotion_macro_f1=0.25,
            drift=0.0,
            ficr=0.0,
            satisfaction=75.0,
            empathy=0.0,
            persona=50.0,
            anthropomorphic=60.0,
            mean_turns=2.0,
        ),
    ]
    # the personas: even ChatSEEDs' are 30-44, odd ones' 45-59; a city per persona (too many values to offer); three
    # occupations (a filter too)
    personas = [
        dict(
            persona_id=f"p{i:02d}",
            pool=POOL,
            source="fixture",
            persona_text=text(i, "persona"),
            attributes=json.dumps(
                {
                    "age_bucket": AGE_BUCKETS[i % 2],
                    "city": f"city {i}",
                    "sex": "Female",
                    "occupation": OCCUPATIONS[i % 3],
                }
            ),
            topic_tags="[]",
            length_bucket="short" if i < 10 else "long",
            sample_rank=i,
        )
        for i in range(N_FINISHED + 1)
    ]
    frames = {
        "dialogue.persona_pool": (personas, ["pool"]),
        "dialogue.chat_seeds": (seeds, ["pool"]),
        "dialogue.dialogue_turns": (turns, ["pool", "target"]),
        "dialogue.intent_similarity": (sims, ["pool", "target"]),
        "dialogue.simulator_audit": (audits, ["pool", "target"]),
        "dialogue.judge_verdicts": (verdicts, ["pool", "target"]),
        "dialogue.final_intent_verdicts": (finals, ["pool", "target"]),
        "dialogue.dialogue_scores": (scores, ["pool", "target"]),
        "dialogue.leaderboard": (board, []),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, pd.DataFrame(rows), partition_by=by, catalog=catalog())
    write_calls(data, seeds, turns, verdicts, finals)
    return {table: rows for table, (rows, _) in frames.items()} | build_speech(data)


def key(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def write_calls(data: Path, seeds: list, turns: list, verdicts: list, finals: list) -> None:
    """The calls of the chat target's dialogues 0-2, as the chat client records them (eyt_dagster/eyt_bench/
    chat_roles.py names the purposes); one re-asked judge call whose first reply did not validate."""
    (data / "cache").mkdir(exist_ok=True)
    with CallCache(data / "cache" / "model_calls.sqlite") as cache:
        dialogue = None  # the dialogue whose calls are being made: dialogue 0's prompts hold HOSTILE

        def made(model_id: str, role: str, purpose: str, reply: str, **extra: object) -> str:
            # the request as the chat client keeps it; the judge's base URL carries a user name and password,
            # which are removed before it is stored, so its stored requests no longer hash to their keys
            base_url = "http://judge-user:judge-pass@127.0.0.1:9/v1" if model_id == JUDGE else "http://127.0.0.1:9/v1"
            shown = HOSTILE if dialogue == 0 else f"the {purpose} prompt"
            request = CallCache.request(
                model=f"{model_id}-model",
                base_url=base_url,
                messages=[
                    {"role": "system", "content": f"system prompt for {role}"},
                    {"role": "user", "content": shown},
                ],
                settings={"temperature": 0.0, "max_tokens": 512, "response_format": None, "reply_to": reply},
                seed=7,
            )
            k = CallCache.key_of(request)
            cache.put_request(k, request)
            cache.put(k, model=f"{model_id}-model", text=reply, tokens_in=120, tokens_out=30, latency_s=0.8)
            cache.record(
                role=role,
                model_id=model_id,
                purpose=purpose,
                cached=False,
                tokens_in=120,
                tokens_out=30,
                cost_usd=0.0012,
                latency_s=0.8,
                retries=1,
                cache_key=k,
                run_id="run-1",
                **extra,
            )
            return k

        for i in range(3):
            sid, dialogue = seed_id(i), i
            made(SIMULATOR, "simulator", f"chat_seed:{sid}", seeds[i]["raw_reply"])
            for t in (t for t in turns if t["target"] == TARGET and t["seed_id"] == sid):
                n = t["turn"]
                if n > 1:
                    made(
                        SIMULATOR,
                        "simulator",
                        f"simulate:{sid}:{n}",
                        json.dumps({"user_text": t["user_text"], "labels": {}, "progress": t["progress"]}),
                    )
                labels = {
                    f: t[f"pred_{f}"] for f in ("explicit_intent", "latent_intent", "emotion", "intent_description")
                }
                made(TARGET, "target", f"perceive:{n}", json.dumps(labels))
                made(TARGET, "target", f"respond:{n}", f"<think>planning {i}</think>{t['response_text']}")
            for v in (v for v in verdicts if v["target"] == TARGET and v["seed_id"] == sid):
                if i == 1 and v["turn"] == 1:  # a reply that did not validate, then the re-asked one
                    made(
                        JUDGE,
                        "judge",
                        f"judge_turn:{sid}:1",
                        "not json",
                        ok=False,
                        failure="invalid_reply",
                        error="reply did not validate",
                    )
                made(JUDGE, "judge", f"judge_turn:{sid}:{v['turn']}", v["raw_reply"])
            for f in (f for f in finals if f["target"] == TARGET and f["seed_id"] == sid):
                made(JUDGE, "judge", f"judge_final:{sid}", f["raw_reply"])
        # the same reply to the same step of two dialogues: dialogue 2's turn-1 response also matches this call
        made(TARGET, "target", "respond:1", turns_reply(turns, 2, 1))


def turns_reply(turns: list, i: int, n: int) -> str:
    return next(
        t["response_text"] for t in turns if t["target"] == TARGET and t["seed_id"] == seed_id(i) and t["turn"] == n
    )
