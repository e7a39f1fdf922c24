"""Every counted step shows its count from before it prepares its loop: each asset that reports progress is invoked
directly on small hand-made tables with the default slate's embedded roles, and at the first thing it prepares (its
judges, roles, encoder, voice or model) the heartbeat on disk already holds the step's total, marked preparing, as
the live table of `eyt run` shows it. Where the embedded roles make the loop cheap it runs to its end, and every
report of the loop has the total given up front."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dagster import MultiPartitionKey, build_asset_context

from eyt_dagster.core.progress import done_text
from resources.models.model_access import EmbeddingAccess, ModelAccess, SlateAccess
from resources.models.run_progress import StepProgress
from resources.roles.eyt_roles import EytRoles
from resources.roles.speech_roles import SpeechRoles
from resources.roles.voice_roles import VoiceRoles
from resources.runs.progress_files import read_heartbeats

from support.explorer_explain_data import E1, E3, POOL, chat_seeds, eyt_tables
from support.slates import remote, write_slate

pytestmark = pytest.mark.unit

TARGET = "reflective-baseline"  # the default slate's EYT-Bench and voice target
NO_PAST_RUN = "ETA after the first one (no past run)"

# The explorer's hand-made dialogues (support/explorer_explain_data.py), their intents among the taxonomy's (the
# roles read them): e1 answered 4 turns and e2 3, both finished; e3 failed after its first turn, so it is neither
# judged nor audited. The default slate has two judges.
LABELS = {"explicit_intent": "seeking_advice", "latent_intent": "need_for_security"}
TURNS = eyt_tables()["dialogue_turns"].assign(
    **{f"{side}_{label}": value for label, value in LABELS.items() for side in ("gold", "pred")}
)
ANSWERED = 4 + 3


def seeds() -> pd.DataFrame:
    """The three ChatSEEDs, all written."""
    return chat_seeds().assign(error=None, **{f"initial_{label}": value for label, value in LABELS.items()})


class Stop(Exception):
    """Raised at a watched set-up call once the test has seen what it needs."""


class Step:
    """An asset invoked directly against a data directory: what the live table shows of the directory's running
    steps at each watched set-up call, and every report (step, done, total) a step's loop made."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, contexts: ExitStack) -> None:
        self.root, self.monkeypatch, self.contexts = root, monkeypatch, contexts
        self.data = root / "data"
        self.data.mkdir()
        self.seen: list[tuple[str, list[str]]] = []
        self.reports: list[tuple[str, int, int]] = []
        report = StepProgress.__call__

        def reported(recorder: StepProgress, done: int, total: int) -> None:
            self.reports.append((recorder.step.split("__")[-1], done, total))
            report(recorder, done, total)

        monkeypatch.setattr(StepProgress, "__call__", reported)

    def live(self) -> list[str]:
        return [f"{b.step.split('__')[-1]}: {done_text(b.figures)}" for b in read_heartbeats(self.data)]

    def at(self, owner: Any, name: str, *, stop: bool = False) -> None:
        """Note the live lines when `owner.name` is called; then raise Stop, or go on."""
        original: Callable[..., Any] = getattr(owner, name)

        def watched(*args: Any, **kwargs: Any) -> Any:
            self.seen.append((name, self.live()))
            if stop:
                raise Stop
            return original(*args, **kwargs)

        self.monkeypatch.setattr(owner, name, watched)

    def resources(self, *, embeddings: bool = False, **slate: Any) -> dict[str, Any]:
        """The asset's resources: the default slate (small, with `slate`'s overrides) and the data directory."""
        folder = self.root / f"slate-{len(list(self.root.glob('slate-*')))}"
        folder.mkdir()
        given: dict[str, Any] = {
            "slate": SlateAccess(slate_path=str(write_slate(folder, **slate))),
            "models": ModelAccess(data_dir=str(self.data)),
        }
        if embeddings:
            given["embeddings"] = EmbeddingAccess(data_dir=str(self.data))
        return given

    def context(self, partition_key: Any) -> Any:
        return self.contexts.enter_context(build_asset_context(partition_key=partition_key))

    def cell(self) -> Any:
        return self.context(MultiPartitionKey({"target": TARGET, "pool": POOL}))


@pytest.fixture
def step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Step]:
    with ExitStack() as contexts:
        yield Step(tmp_path, monkeypatch, contexts)


def test_eyt_bench_verdicts_show_their_count_before_the_judges_are_built(step):
    from assets.eyt_bench.judge_verdicts import final_intent_verdicts, judge_verdicts

    step.at(EytRoles, "judges")
    given = step.resources()
    turns = judge_verdicts(step.cell(), dialogue_turns=TURNS, chat_seeds=seeds(), **given).value
    finals = final_intent_verdicts(step.cell(), dialogue_turns=TURNS, chat_seeds=seeds(), **given).value
    # 2 judges x 7 turns; 2 judges x 2 dialogues
    assert step.seen == [
        ("judges", [f"judge_verdicts: 0 of 14 turn verdicts (preparing), {NO_PAST_RUN}"]),
        ("judges", [f"final_intent_verdicts: 0 of 4 final verdicts (preparing), {NO_PAST_RUN}"]),
    ]
    assert len(turns) == 14 and len(finals) == 4
    assert {(name, total) for name, _, total in step.reports} == {("judge_verdicts", 14), ("final_intent_verdicts", 4)}
    assert step.reports[-1] == ("final_intent_verdicts", 4, 4) and not step.live()


def test_the_simulator_audit_shows_its_count_before_the_encoder_embeds(step):
    from assets.eyt_bench.simulator_audit import simulator_audit

    step.at(EmbeddingAccess, "early_embeddings", stop=True)
    auditor = remote("audit-judge", "http://127.0.0.1:9/v1", api_key_env="EYT_TEST_KEY")
    with pytest.raises(Stop):
        simulator_audit(
            step.cell(), dialogue_turns=TURNS, **step.resources(embeddings=True, simulator_audit_model=auditor)
        )
    # without an audit model the step counts nothing: no line of its own
    with pytest.raises(Stop):
        simulator_audit(step.cell(), dialogue_turns=TURNS, **step.resources(embeddings=True))
    assert step.seen == [
        ("early_embeddings", [f"simulator_audit: 0 of {ANSWERED} turns audited (preparing), {NO_PAST_RUN}"]),
        ("early_embeddings", []),
    ]


def test_intent_similarity_shows_its_count_of_texts_before_the_encoder_is_taken(step):
    from assets.eyt_bench.intent_similarity import intent_similarity

    step.at(EmbeddingAccess, "early_embeddings")
    given = step.resources(embeddings=True)
    del given["models"]  # the step calls no model
    out = intent_similarity(step.cell(), chat_seeds=seeds(), dialogue_turns=TURNS, **given)
    # the distinct texts of e1's 4 and e2's 3 answered turns: gold "gold intent 1-4" and e1's hostile one (5),
    # predicted "predicted intent 1-4" and e1's hostile one (5), the one final intent of the ChatSEEDs: 11
    assert step.seen == [
        ("early_embeddings", [f"intent_similarity: 0 of 11 texts embedded (preparing), {NO_PAST_RUN}"])
    ]
    assert len(out.value) == ANSWERED and out.metadata["texts"].value == 11
    assert {total for _, _, total in step.reports} == {11} and step.reports[-1] == ("intent_similarity", 11, 11)
    assert [done for _, done, _ in step.reports] == sorted(done for _, done, _ in step.reports)


def test_the_replacement_judges_verdicts_show_their_count_before_the_judge_is_built(step):
    from assets.eyt_bench.judge_calibration import cross_judge_final_verdicts, cross_judge_verdicts

    step.at(EytRoles, "replacement_judge")
    scored = TURNS[TURNS["seed_id"] != E3][["target", "pool", "seed_id"]].drop_duplicates()  # e1 and e2
    inputs = {"dialogue_scores": scored, "dialogue_turns": TURNS, "chat_seeds": seeds()}
    given = step.resources()  # the default slate's replacement judge; a sample of up to 6 dialogues: both
    turns = cross_judge_verdicts(step.context(None), **inputs, **given).value
    finals = cross_judge_final_verdicts(step.context(None), **inputs, **given).value
    # one judge: 1 x 7 turns; 1 x 2 dialogues
    assert step.seen == [
        ("replacement_judge", [f"cross_judge_verdicts: 0 of 7 turn verdicts (preparing), {NO_PAST_RUN}"]),
        ("replacement_judge", [f"cross_judge_final_verdicts: 0 of 2 final verdicts (preparing), {NO_PAST_RUN}"]),
    ]
    assert len(turns) == 7 and len(finals) == 2
    assert {(n, total) for n, _, total in step.reports} == {
        ("cross_judge_verdicts", 7),
        ("cross_judge_final_verdicts", 2),
    }
    assert step.reports[-1] == ("cross_judge_final_verdicts", 2, 2) and not step.live()
    # without a replacement judge the step counts nothing: no line of its own, an empty table
    empty = cross_judge_verdicts(step.context(None), **inputs, **step.resources(replacement_judge=None)).value
    assert empty.empty and step.seen[-1] == ("replacement_judge", [])


def test_dialogue_turns_and_the_repeated_dialogues_show_their_count_before_the_roles_are_built(step):
    from assets.eyt_bench.dialogue_turns import dialogue_turns
    from assets.eyt_bench.repeats import repeat_dialogues

    step.at(EytRoles, "simulator", stop=True)
    step.at(EytRoles, "target", stop=True)
    with pytest.raises(Stop):
        dialogue_turns(step.cell(), chat_seeds=seeds(), **step.resources(embeddings=True))
    with pytest.raises(Stop):
        repeat_dialogues(step.cell(), chat_seeds=seeds(), **step.resources(repeats=3))
    # the 3 ChatSEEDs; repeats 1 and 2 of them
    assert step.seen == [
        ("simulator", [f"dialogue_turns: 0 of 3 dialogues (preparing), {NO_PAST_RUN}"]),
        ("target", [f"repeat_dialogues: 0 of 6 dialogues (preparing), {NO_PAST_RUN}"]),
    ]


def test_repeated_verdicts_show_their_count_before_the_judges_are_built(step):
    from assets.eyt_bench.repeats import repeat_scores

    step.at(EytRoles, "judges")
    out = repeat_scores(
        step.cell(),
        chat_seeds=seeds(),
        dialogue_turns=TURNS,
        repeat_dialogues=TURNS.iloc[:0].assign(repeat=0, sample_seed=0),  # one play of each dialogue
        intent_similarity=eyt_tables()["intent_similarity"],
        **step.resources(embeddings=True, judge_repeats=2),
    ).value
    # judge repeat 1 of the cell's own dialogues: 2 judges x (7 turns + 2 finals)
    assert step.seen == [("judges", [f"repeat_scores: 0 of 18 verdicts (preparing), {NO_PAST_RUN}"])]
    assert len(out) == 2 and {total for _, _, total in step.reports} == {18} and step.reports[-1][1:] == (18, 18)


def voice_cell(step: Step) -> Any:
    from assets.eyt_voice.partitions import voice_cell_key

    return step.context(voice_cell_key(TARGET, POOL))


def test_voice_verdicts_count_both_modes_at_once_before_the_judges_are_built(step):
    from assets.eyt_voice.scoring import final_intent_verdicts, judge_verdicts

    step.at(EytRoles, "judges")
    given = step.resources()
    text = TURNS[TURNS["seed_id"] == E1]  # the text control finished e1 only (4 turns)
    inputs = {"voiced_turns": TURNS, "text_turns": text, "chat_seeds": seeds()}
    turns = judge_verdicts(voice_cell(step), **inputs, **given).value
    finals = final_intent_verdicts(voice_cell(step), **inputs, **given).value
    # one count over both modes: 2 judges x (7 voiced + 4 text turns); 2 judges x (2 + 1 dialogues)
    assert step.seen == [
        ("judges", [f"judge_verdicts: 0 of 22 turn verdicts (preparing), {NO_PAST_RUN}"]),
        ("judges", [f"final_intent_verdicts: 0 of 6 final verdicts (preparing), {NO_PAST_RUN}"]),
    ]
    assert len(turns) == 22 and len(finals) == 6
    verdicts = [(done, total) for name, done, total in step.reports if name == "judge_verdicts"]
    assert {total for _, total in verdicts} == {22} and verdicts[-1] == (22, 22)
    assert [done for done, _ in verdicts] == sorted(done for done, _ in verdicts)  # the text mode counts on
    assert step.reports[-1] == ("final_intent_verdicts", 6, 6)


def test_voiced_dialogues_and_the_prosody_probe_show_their_count_before_the_voice_is_loaded(step, monkeypatch):
    from assets.eyt_voice import dialogues
    from assets.eyt_voice.dialogues import prosody_probe, voiced_turns

    monkeypatch.setattr(dialogues, "seed_voices", lambda *args: {})  # the personas' voices: not what is tested
    step.at(VoiceRoles, "voicer", stop=True)
    given = step.resources()  # voice: 2 dialogues per pool
    with pytest.raises(Stop):
        voiced_turns(voice_cell(step), chat_seeds=seeds(), persona_pool=pd.DataFrame(), **given)
    heard = TURNS.assign(gold_emotion=TURNS["gold_emotion"].mask(TURNS["turn"] == 1, "neutral"))
    with pytest.raises(Stop):
        prosody_probe(voice_cell(step), chat_seeds=seeds(), persona_pool=pd.DataFrame(), voiced_turns=heard, **given)
    # the first 2 ChatSEEDs; the 7 answered turns but e1's and e2's neutral first ones
    assert step.seen == [
        ("voicer", [f"voiced_turns: 0 of 2 dialogues (preparing), {NO_PAST_RUN}"]),
        ("voicer", [f"prosody_probe: 0 of 5 turns (preparing), {NO_PAST_RUN}"]),
    ]


def test_speech_steps_show_their_count_before_the_voice_or_the_target_is_loaded(step):
    from assets.speech_eq.audio_stages import speech_audio
    from assets.speech_eq.slm_choices import slm_choices

    step.at(SpeechRoles, "tts", stop=True)
    step.at(SpeechRoles, "speech_target", stop=True)
    given = step.resources()
    three = pd.DataFrame({"scenario_id": ["a", "b", "c"]})
    empty = pd.DataFrame()
    with pytest.raises(Stop):
        list(
            speech_audio(
                step.context("basic"),
                scenarios=three,
                dialogues=empty,
                tone_instructions=empty,
                tone_selection=empty,
                **given,
            )
        )
    with pytest.raises(Stop):
        slm_choices(step.context("random-chooser-baseline"), eq_items=three.head(2), **given)
    # 3 scenarios; 2 items x the default slate's one condition
    assert step.seen == [
        ("tts", [f"speech_audio: 0 of 3 scenarios (preparing), {NO_PAST_RUN}"]),
        ("speech_target", [f"slm_choices: 0 of 2 trajectories (preparing), {NO_PAST_RUN}"]),
    ]
