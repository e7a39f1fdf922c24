"""The simulator audit's optional model check, against the localhost OpenAI-compatible server that answers within the
JSON schema each request carries, through the real chat client and call cache: one call per simulator turn, the
answers in the table and the flags, one failed call an error of its turn only, and a rerun that asks only that turn
again. Also: a slate without the model keeps today's settings (so no result goes stale), and the SQL twin agrees."""

from __future__ import annotations

import json
import threading

import duckdb
import pytest
import yaml

from eyt_dagster.eyt_bench.prompts import AUDIT_PROMPT_KEY, prompt_hash, render
from eyt_dagster.eyt_bench.taxonomy import LATENT_STATEMENTS
from eyt_dagster.slate import Slate, SlateError, default_slate_path, load_slate
from eyt_dagster.slate_settings import asset_settings

from support.audit_twin import assert_twin_equals
from support.localhost_server import SchemaDrawnReplies, StubResponse, serve
from support.pipeline import materialize_dialogues
from support.slates import write_slate

KEY = "sk-audit-test-77aa"
AUDIT_SYSTEM = render(AUDIT_PROMPT_KEY, "system")


def audit_model(base_url: str) -> dict:
    return {
        "id": "audit-judge",
        "provider": "openai",
        "model": "audit-judge-v1",
        "family": "fam-audit",
        "base_url": base_url,
        "api_key_env": "EYT_AUDIT_KEY",
        "max_concurrency": 3,
        "max_retries": 0,
        "price_in_per_mtok": 1.0,
        "price_out_per_mtok": 4.0,
    }


class AuditServer:
    """Answers audit requests with a draw from their schema; while `broken`, the first audit request's content
    (and any request with the same content) gets a server error. Every other request is unexpected."""

    def __init__(self) -> None:
        self.drawn = SchemaDrawnReplies(seed=7)
        self.broken = True
        self.victim: str | None = None
        self.answers: dict[str, dict] = {}  # the audit request's user message -> the answer sent
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict):
        system, user = (m["content"] for m in request["messages"][:2])
        assert system == AUDIT_SYSTEM, f"unexpected request: {system[:60]!r}"
        assert request["response_format"]["type"] == "json_schema"
        with self._lock:
            self.asked.append(user)
            if self.victim is None:
                self.victim = user
            if self.broken and user == self.victim:
                return StubResponse(500, {"error": {"message": "audit backend down"}}, {"x-should-retry": "false"})
        answer = self.drawn(request)
        with self._lock:
            self.answers[user] = json.loads(answer)
        return answer


def expected_prompt(row: dict, previous: str | None) -> str:
    intent = row["gold_latent_intent"]
    return render(
        AUDIT_PROMPT_KEY,
        "user",
        latent_intent=intent,
        latent_statement=LATENT_STATEMENTS[intent],
        previous_reply=previous or "(none: this is the user's first message)",
        utterance=row["user_text"],
    )


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("audit-model")
    server_handler = AuditServer()
    with pytest.MonkeyPatch.context() as monkeypatch, serve(server_handler) as server:
        monkeypatch.setenv("EYT_AUDIT_KEY", KEY)
        base = yaml.safe_load(default_slate_path().read_text())
        slate = write_slate(
            tmp_path,
            pools={"nemotron_usa": {"source": "fixture"}},
            dialogues_per_pool=3,
            t_max=4,
            targets=[t for t in base["targets"] if t["id"] == "reflective-baseline"],
            simulator_audit_model=audit_model(server.base_url),
        )
        data = tmp_path / "data"
        data.mkdir()
        instance = materialize_dialogues(slate, data)
        with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
            first = con.execute("FROM dialogue.simulator_audit ORDER BY seed_id, turn").df()
            turns = con.execute("FROM dialogue.dialogue_turns WHERE turn > 0 ORDER BY seed_id, turn").df()
        asked_first = list(server_handler.asked)
        server_handler.broken = False
        materialize_dialogues(slate, data, instance)  # the server recovered: a rerun of the cell
        with duckdb.connect(str(data / "eyt.duckdb"), read_only=True) as con:
            second = con.execute("FROM dialogue.simulator_audit ORDER BY seed_id, turn").df()
        yield {
            "handler": server_handler,
            "first": first,
            "second": second,
            "turns": turns,
            "asked_first": asked_first,
            "rerun_asked": server_handler.asked[len(asked_first) :],
            "data": data,
            "server": server,
        }


@pytest.mark.materialisation
def test_each_simulator_turn_is_put_once_to_the_audit_model_with_its_intent_reply_and_utterance(audited):
    first, turns = audited["first"], audited["turns"]
    assert len(first) == len(turns) > 3
    assert len(audited["asked_first"]) == len(first)  # one call per turn (a failed one is not retried at once)
    prompts = []
    for _, dialogue in turns.groupby("seed_id"):
        previous = None
        for row in dialogue.to_dict("records"):
            prompts.append(expected_prompt(row, previous))
            previous = row["response_text"]
    assert sorted(prompts) == sorted(audited["asked_first"])
    assert "(none: this is the user's first message)" in prompts[0]


@pytest.mark.materialisation
def test_the_answers_reach_the_table_and_the_flags(audited):
    handler, second, turns = audited["handler"], audited["second"], audited["turns"]
    by_key = {(r["seed_id"], r["turn"]): r for r in second.to_dict("records")}
    for _, dialogue in turns.groupby("seed_id"):
        previous = None
        for row in dialogue.to_dict("records"):
            answer = handler.answers[expected_prompt(row, previous)]
            audited_row = by_key[(row["seed_id"], row["turn"])]
            assert audited_row["model_leak"] == answer["leaks_intent"]
            assert audited_row["model_role_flip"] == answer["speaks_as_assistant"]
            assert audited_row["model_reason"] == answer["reason"]
            assert audited_row["audit_model"] == "audit-judge"
            assert audited_row["audit_prompt_hash"] == prompt_hash(AUDIT_PROMPT_KEY)
            assert audited_row["audit_cost_usd"] == pytest.approx(
                (audited_row["audit_tokens_in"] * 1.0 + audited_row["audit_tokens_out"] * 4.0) / 1e6
            )
            previous = row["response_text"]
    for seed_id, rows in second.groupby("seed_id"):
        flags = rows["simulator_flags"].iloc[0].split(",")
        assert ("model_leak" in flags) == bool(rows["model_leak"].any()), seed_id
        assert ("model_role_flip" in flags) == bool(rows["model_role_flip"].any()), seed_id
    # the drawn answers raise both flags somewhere, so the check above is not vacuous
    assert second["model_leak"].any() and second["model_role_flip"].any()


@pytest.mark.materialisation
def test_a_failed_call_is_an_error_of_its_turn_only_and_a_rerun_asks_only_it(audited):
    handler, first, second = audited["handler"], audited["first"], audited["second"]
    failed = first[first["model_error"].notna()]
    assert len(failed) >= 1 and failed["model_error"].str.contains("audit backend down").all()
    assert failed["model_leak"].isna().all() and failed["model_role_flip"].isna().all()
    kept = first[first["model_error"].isna()]
    assert len(kept) == len(first) - len(failed) and kept["model_leak"].notna().all()
    # the deterministic checks of the failed turn are there, and its null answers raise no model flag
    assert failed["latent_leak"].notna().all() and failed["repetition"].notna().all()
    # the rerun asked again only what had failed; the answered calls came from the call cache
    assert audited["rerun_asked"] and set(audited["rerun_asked"]) == {handler.victim}
    assert len(audited["rerun_asked"]) == len(failed)
    assert second["model_error"].isna().all() and second["model_leak"].notna().all()
    answers = ["model_leak", "model_role_flip", "model_reason"]
    assert first.loc[kept.index, answers].values.tolist() == second.loc[kept.index, answers].values.tolist()
    # a dialogue without a failed turn keeps its flags; the recovered turn's dialogue may gain one
    untouched = ~first["seed_id"].isin(failed["seed_id"])
    assert untouched.any()
    assert first.loc[untouched, "simulator_flags"].equals(second.loc[untouched, "simulator_flags"])


@pytest.mark.materialisation
def test_the_sql_twin_agrees_with_the_model_flags(audited):
    with duckdb.connect(str(audited["data"] / "eyt.duckdb"), read_only=True) as con:
        merged = assert_twin_equals(con)
    assert merged["simulator_flags"].str.contains("model_").any()


@pytest.mark.materialisation
def test_the_key_stays_in_the_authorization_header(audited):
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in audited["server"].chat_requests)
    for path in audited["data"].rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"


@pytest.mark.unit
def test_without_an_audit_model_the_settings_and_code_version_are_todays():
    slate = load_slate(default_slate_path())
    assert slate.simulator_audit_model is None
    assert asset_settings("dialogue/simulator_audit", slate) == {"embedding_model": slate.embedding_model}
    raw = yaml.safe_load(default_slate_path().read_text())
    with_model = Slate.model_validate({**raw, "simulator_audit_model": audit_model("http://127.0.0.1:9/v1")})
    settings = asset_settings("dialogue/simulator_audit", with_model)
    assert settings["simulator_audit_model"]["id"] == "audit-judge"
    assert settings["simulator_audit_model"]["prompt_hash"] == prompt_hash(AUDIT_PROMPT_KEY)


@pytest.mark.unit
def test_an_embedded_audit_model_is_refused(tmp_path):
    raw = yaml.safe_load(default_slate_path().read_text())
    raw["simulator_audit_model"] = {"id": "x", "provider": "embedded", "model": "rubric-heuristic", "family": "f"}
    path = tmp_path / "slate.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(SlateError, match="simulator_audit_model: there is no embedded audit model"):
        load_slate(path)


@pytest.mark.materialisation
def test_the_explorers_dialogue_page_shows_the_models_answer_escaped(audited):
    from markupsafe import escape

    from eyt_dagster.explorer.app import create_app, dialogue_url

    from support.asgi_get import get

    second = audited["second"]
    assert any(str(escape(r)) != r for r in second["model_reason"])  # some drawn reason needs escaping
    app = create_app(audited["data"])
    for seed_id, rows in second.groupby("seed_id"):
        page = get(app, dialogue_url("reflective-baseline", seed_id)).text
        flags = rows["simulator_flags"].iloc[0]
        if flags:
            assert f"The simulator audit flagged this dialogue: {escape(flags)}" in page
        assert page.count("; audit model audit-judge: ") == len(rows)
        for row in rows.to_dict("records"):
            assert f"<q>{escape(row['model_reason'])}</q>" in page  # the model's text, escaped
        assert page.count('<span class="flag">model_leak</span>') == int(rows["model_leak"].sum())


@pytest.mark.materialisation
def test_the_reports_section_counts_the_models_flags(audited):
    from eyt_dagster.reporting.audit_section import audit_model_section, audit_model_table
    from eyt_dagster.reporting.html_report import render_report

    first, second = audited["first"], audited["second"]
    table = audit_model_table(first).set_index(["target", "pool"])
    row = table.loc[("reflective-baseline", "nemotron_usa")]
    assert row["audit_model"] == "audit-judge" and row["dialogues"] == first["seed_id"].nunique()
    assert row["failed_calls"] == first["model_error"].notna().sum()
    assert row["turns_checked"] == len(first) - row["failed_calls"]
    leaked = second.groupby("seed_id")["model_leak"].any()
    assert audit_model_table(second)["dialogues_model_leak"].iloc[0] == leaked.sum()
    page = render_report(
        [audit_model_section(second)],
        title="t",
        generated_at="now",
        slate_yaml="",
        prompt_hashes={},
        baseline_targets=[],
    )
    assert "Simulator audit: the audit model&#x27;s flags" in page and "dialogues_model_only" in page
    # a table no model read (no audit model in the slate) has no section
    no_model = second.assign(**{c: None for c in ("audit_model", "model_leak", "model_role_flip", "model_error")})
    assert audit_model_section(no_model) is None
