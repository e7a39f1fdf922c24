"""A whole EYT-Bench run, and the SpeechEQ text generator, against the localhost server behaving as each provider
documents its OpenAI-compatible endpoint (tests/support/provider_behaviours.py): every role (simulator, target, judge,
replacement judge, SpeechEQ text generator) on that provider. Each run must finish every dialogue with no error row,
and no reasoning text may reach a reply, a table or a metric."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from eyt_dagster.explorer.app import create_app
from eyt_dagster.slate import load_slate
from eyt_dagster.speech_eq.vocabulary import VALENCES
from resources.models.cache_backend import CALL_CACHE_FILE
from resources.models.call_cache import CallCache
from resources.models.model_access import ModelAccess
from resources.roles.speech_roles import SpeechRoles

from support.asgi_get import get
from support.localhost_server import serve
from support.pipeline import materialize_all
from support.provider_behaviours import HIDDEN_REASONING_TOKENS, REASONING_MARK, behave_as, returns_reasoning
from support.role_play import RolePlay
from support.slates import KEY, STUB_ENDPOINT, remote, write_slate
from support.speech_play import SpeechPlay

pytestmark = [pytest.mark.materialisation, pytest.mark.slow]
SUBSCALE = "interpersonal_empathy"
DIALOGUES = 2
# (behaviour of the server, the slate's profile): each provider as its profile, and two as a new user meets them
# behind an address no profile recognises (auto: generic, which learns the rest from the server's refusals)
RUNS = [
    ("openai", "openai"),
    ("openai-reasoning", "openai-reasoning"),
    ("openai-reasoning", "auto"),
    ("anthropic", "anthropic"),
    ("gemini", "gemini"),
    ("vllm", "vllm"),
    ("llama.cpp", "llama.cpp"),
    ("ollama", "ollama"),
    ("thinking", "auto"),
]


class EveryRole:
    """Answers EYT-Bench's roles (RolePlay) and SpeechEQ's text stages (SpeechPlay) by their system prompts."""

    def __init__(self) -> None:
        self.eyt, self.speech = RolePlay(), SpeechPlay()

    def __call__(self, request: dict[str, Any]) -> Any:
        try:
            self.eyt.role_of(request)
        except AssertionError:
            return self.speech(request)
        return self.eyt(request)


def model(model_id: str, family: str, base_url: str, profile: str, behaviour: str) -> dict[str, Any]:
    extra = {"google": {"thinking_config": {"include_thoughts": True}}} if behaviour == "gemini" else {}
    return remote(model_id, base_url, family=family, **STUB_ENDPOINT, profile=profile, max_retries=0, extra_body=extra)


def text_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [name for name, kind, *_ in con.execute(f"DESCRIBE {table}").fetchall() if kind == "VARCHAR"]


@pytest.mark.parametrize(("behaviour", "profile"), RUNS, ids=[f"{b}-as-{p}" for b, p in RUNS])
def test_a_run_against_each_provider_finishes_every_dialogue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str, profile: str
) -> None:
    monkeypatch.setenv("EYT_TEST_KEY", KEY)
    roles = EveryRole()
    with serve(behave_as(behaviour, roles)) as server:
        url = server.base_url
        slate = write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=DIALOGUES,
            t_max=3,
            cross_judge_dialogues=DIALOGUES,
            simulator=model("sim", "fam-sim", url, profile, behaviour),
            targets=[model("chat", "fam-target", url, profile, behaviour)],
            judges=[model("judge", "fam-judge", url, profile, behaviour)],
            replacement_judge=model("judge-b", "fam-judge-b", url, profile, behaviour),
            speech={"generator": "speech-gen", "models": [model("speech-gen", "fam-gen", url, profile, behaviour)]},
        )
        data = tmp_path / "data"
        data.mkdir()
        materialize_all(slate, data)
        generator = SpeechRoles(load_slate(slate), ModelAccess(data_dir=str(data))).speech_generator()
        scenario = generator.scenario(SUBSCALE, VALENCES[1], 0)
        lines = generator.dialogue(scenario)
        verdict = generator.validate_dialogue(scenario, lines)
        tone = generator.tone_instruction(scenario, lines, 1, "context", 1, [])
    speech_text = " ".join([scenario.model_dump_json(), *(line.text for line in lines), verdict[1], tone])
    assert len(lines) == 6 and tone and REASONING_MARK not in speech_text

    with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
        board = con.execute("SELECT * FROM dialogue.leaderboard").df().iloc[0]
        assert (board["n_dialogues"], board["n_errors"]) == (DIALOGUES, 0), board["failures"]
        for table in (
            "chat_seeds",
            "dialogue_turns",
            "judge_verdicts",
            "final_intent_verdicts",
            "cross_judge_verdicts",
        ):
            assert con.execute(f"SELECT count(*) FROM dialogue.{table} WHERE error IS NOT NULL").fetchone() == (0,)
        # reasoning only in its own column: never in a reply, a user turn, a rationale or a raw reply
        for (table,) in con.execute(
            "SELECT DISTINCT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema = 'dialogue'"
        ).fetchall():
            for column in text_columns(con, table):
                if column == "response_reasoning":
                    continue
                hits = con.execute(f"SELECT count(*) FROM {table} WHERE {column} LIKE '%{REASONING_MARK}%'").fetchone()
                assert hits == (0,), f"reasoning reached {table}.{column}"
        turns = con.execute("SELECT * FROM dialogue.dialogue_turns WHERE turn > 0").df()
        if returns_reasoning(behaviour, {"google": {"thinking_config": {"include_thoughts": True}}}):
            assert turns["response_reasoning"].str.contains(REASONING_MARK).all()
            assert (turns["target_reasoning_tokens"] > 0).all() and (turns["simulator_reasoning_tokens"] > 0).all()
            # the explorer's call page shows it apart from the reply, escaped
            with CallCache(data / CALL_CACHE_FILE) as cache:
                key = next(r["cache_key"] for r in cache.ledger() if r["role"] == "target" and r["ok"])
            page = get(create_app(data), f"/call/{key}").text
            assert '<pre class="text reasoning">' in page and "time &lt; care &amp; cost" in page
        else:
            assert turns["response_reasoning"].isna().all()
        if behaviour == "openai-reasoning":  # hidden reasoning: the provider's token count, perception and reply
            assert (turns["target_reasoning_tokens"] == 2 * HIDDEN_REASONING_TOKENS).all()
            assert (
                board["sampling_adapted"]
                and "temperature: provider default (1); the slate asked 0" in board["adaptations"]
            )
            assert "max_tokens sent as max_completion_tokens" in board["adaptations"]
        elif behaviour != "anthropic":
            assert not board["sampling_adapted"]
        # the SQL twin counts the same
        sql = Path(__file__).parents[2] / "sql"
        for name in ("turn_dimensions", "leaderboard"):
            con.execute((sql / f"{name}.sql").read_text())
        twin = con.execute("SELECT cut_replies, adaptations, sampling_adapted FROM leaderboard_sql").df().iloc[0]
        assert (twin["cut_replies"], twin["adaptations"], twin["sampling_adapted"]) == (
            board["cut_replies"],
            board["adaptations"],
            board["sampling_adapted"],
        )
