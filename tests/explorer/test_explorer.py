"""`eyt view`'s queries and pages on a tiny hand-made warehouse (tests/support/explorer_data.py): the numbers shown are
the tables' rows, each route's status and content, sorting, filters, pagination, the call links, clear 404s, and every
text a model wrote reaching the page as text only."""

from __future__ import annotations

import html as html_text
import re
from urllib.parse import quote

import pytest

from eyt_dagster.core import explorer_links
from eyt_dagster.explorer import queries
from eyt_dagster.explorer.app import dialogue_url
from eyt_dagster.explorer.formats import number
from eyt_dagster.explorer.reads import Warehouse

from support.asgi_get import get
from support.explorer_data import (
    BASELINE,
    FAILED_SEED,
    HOSTILE,
    N_BASELINE,
    N_FINISHED,
    POOL,
    SECRET,
    TARGET,
    build,
    seed_id,
)
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer", build)


def cell(app, **params) -> str:
    query = "&".join(f"{k}={quote(str(v))}" for k, v in {"target": TARGET, "pool": POOL, **params}.items())
    answer = get(app, f"/dialogues?{query}")
    assert answer.status == 200, answer.text
    return answer.text


def listed(html: str) -> list[str]:
    """The seed ids of a dialogue list, in the order shown (each row's dialogue link; its numbers' links, which open
    one number's arithmetic, are not rows)."""
    return [m.replace("%3A", ":") for m in re.findall(r'href="/dialogue/[^/"]+/([^"?]+)"', html)]


# -- queries ----------------------------------------------------------------------------------------------------


def test_the_leaderboard_query_is_the_table(data):
    board = queries.leaderboard(wh(data))
    stored = {r["target"]: r for r in data[1]["dialogue.leaderboard"]}
    assert sorted(board["target"]) == sorted(stored)
    for row in board.to_dict("records"):
        for metric in queries.HEADLINE:
            assert row[metric] == pytest.approx(stored[row["target"]][metric])
    assert queries.baseline_flags(wh(data)) == {TARGET: False, BASELINE: True}


def test_a_cell_lists_every_dialogue_finished_or_not_with_its_scores(data):
    page = queries.cell_dialogues(wh(data), TARGET, POOL, sort="empathy", descending=True)
    assert (page.total, page.pages, len(page.rows)) == (N_FINISHED + 1, 2, queries.PAGE_SIZE)
    assert list(page.rows["empathy"][:3]) == [59.0, 58.0, 57.0]
    stored = {r["seed_id"]: r for r in data[1]["dialogue.dialogue_scores"] if r["target"] == TARGET}
    for row in page.rows.to_dict("records"):
        assert row["drift"] == pytest.approx(stored[row["seed_id"]]["drift"])
        assert row["n_failed_verdicts"] == stored[row["seed_id"]]["n_failed_verdicts"]
    last = queries.cell_dialogues(wh(data), TARGET, POOL, sort="empathy", descending=True, page=2)
    assert len(last.rows) == N_FINISHED + 1 - queries.PAGE_SIZE
    assert last.rows["seed_id"].iloc[-1] == FAILED_SEED  # no scores: sorted last


@pytest.mark.parametrize(
    "failure, expected",
    [
        ("not_completed", {seed_id(i) for i in range(N_FINISHED) if i % 3 == 0}),
        ("wrong_emotion", {seed_id(i) for i in range(N_FINISHED) if i % 4 == 0}),
        ("error_rows", {seed_id(5), FAILED_SEED}),
        ("incomplete", {FAILED_SEED}),
        ("high_drift", {seed_id(i) for i in range(N_FINISHED) if i / 100 >= 0.4425}),
    ],
)
def test_each_failure_filter(data, failure, expected):
    page = queries.cell_dialogues(wh(data), TARGET, POOL, failure=failure)
    assert set(page.rows["seed_id"]) == expected and page.total == len(expected)


def test_unknown_sort_or_failure_is_refused(data):
    with pytest.raises(ValueError, match="unknown sort column"):
        queries.cell_dialogues(wh(data), TARGET, POOL, sort="1; DROP TABLE x")
    with pytest.raises(ValueError, match="unknown failure kind"):
        queries.cell_dialogues(wh(data), TARGET, POOL, failure="error_rows OR 1=1")


def test_one_dialogue_has_its_seed_turns_similarities_and_verdicts(data):
    d = queries.dialogue(wh(data), TARGET, seed_id(4))
    assert d is not None and d.pool == POOL and d.seed["final_intent"] == "final intent of dialogue 4"
    assert [t["turn"] for t in d.turns] == [1, 2] and d.error is None
    second = d.turns[1]
    assert ("emotion", "anxiety", "joy", False) in second["labels"]  # i % 4 == 0: the wrong emotion on turn 2
    assert second["similarity"]["cos_gold_pred"] == pytest.approx(0.52)
    assert [v["judge"] for v in second["verdicts"]] == ["judge-a"] and len(d.finals) == 1
    failed = queries.dialogue(wh(data), TARGET, FAILED_SEED)
    assert failed.error["error_kind"] == "timeout" and failed.scores is None
    assert queries.dialogue(wh(data), TARGET, "nemotron_usa:nobody") is None


def test_a_table_without_files_reads_as_an_empty_view(tmp_path):
    assert queries.leaderboard(Warehouse(tmp_path)).empty
    assert queries.targets(Warehouse(tmp_path)) == []


# -- pages ------------------------------------------------------------------------------------------------------


def test_the_leaderboard_page_shows_the_rows_and_links_every_cell(app, data):
    answer = get(app, "/")
    assert answer.status == 200
    for row in data[1]["dialogue.leaderboard"]:
        for metric in queries.HEADLINE:
            assert f">{number(row[metric], metric)}</a>" in answer.text
    assert f"/dialogues?target={TARGET}&amp;pool={POOL}&amp;sort=empathy" in answer.text
    assert f"/dialogues?target={TARGET}&amp;pool={POOL}&amp;sort=n_errors&amp;failure=incomplete" in answer.text
    assert answer.text.count('class="badge"') == 1  # the baseline's row only


def test_the_leaderboard_of_one_target_is_what_the_report_and_the_ui_link_to(app):
    one = get(app, explorer_links.leaderboard_path(target=BASELINE))
    assert one.status == 200 and f"/dialogues?target={BASELINE}&amp;" in one.text
    assert f"/dialogues?target={TARGET}&amp;" not in one.text and "every target" in one.text
    missing = get(app, explorer_links.leaderboard_path(target="nobody"))
    assert missing.status == 404 and "no row of target &#39;nobody&#39;" in missing.text


def test_the_leaderboard_and_the_dialogue_page_link_the_judges_page(app, data):
    board = get(app, "/").text
    for row in data[1]["dialogue.leaderboard"]:
        assert f'href="/judges?target={row["target"]}&amp;pool={POOL}"' in board
    assert f'href="/judges?target={TARGET}&amp;pool={POOL}"' in get(app, dialogue_url(TARGET, seed_id(1))).text
    one = get(app, f"/judges?target={TARGET}&pool={POOL}")  # this warehouse has one judge
    assert one.status == 200 and "come from one judge (judge-a)" in one.text


def test_the_dialogue_list_sorts_filters_and_pages(app):
    html = cell(app, sort="empathy", order="desc")
    assert listed(html)[:2] == [seed_id(59), seed_id(58)] and len(listed(html)) == queries.PAGE_SIZE
    assert "page 1 of 2" in html and "page=2" in html
    assert listed(cell(app, sort="empathy"))[:2] == [seed_id(0), seed_id(1)]
    assert listed(cell(app, sort="empathy", page=2))[-1] == FAILED_SEED
    assert set(listed(cell(app, failure="incomplete"))) == {FAILED_SEED}
    assert "target: timeout" in cell(app, failure="incomplete")
    assert listed(cell(app, sort="ficr")) == listed(cell(app, sort="completed"))  # a leaderboard metric's column
    baseline = get(app, f"/dialogues?target={BASELINE}&pool={POOL}").text
    assert 'class="badge"' in baseline and 'class="badge"' not in cell(app)


@pytest.mark.parametrize(
    "url, message",
    [
        (f"/dialogues?target=nobody&pool={POOL}", "no dialogues of target 'nobody'"),
        (f"/dialogues?target={TARGET}&pool=elsewhere", "has no dialogues in pool 'elsewhere'"),
        (f"/dialogue/nobody/{seed_id(1)}", "no target of the warehouse begins the path"),
        (f"/dialogue/{TARGET}/nemotron_usa:nobody", "has no dialogue of ChatSEED 'nemotron_usa:nobody'"),
        ("/call/" + "0" * 64, "hold no call with key"),
        ("/call/not-a-key", "hold no call with key"),
    ],
)
def test_unknown_targets_seeds_and_calls_are_404_with_a_clear_message(app, url, message):
    answer = get(app, url)
    assert answer.status == 404 and message in html_text.unescape(answer.text)


def test_a_bad_sort_or_page_is_400(app):
    assert get(app, f"/dialogues?target={TARGET}&pool={POOL}&sort=nope").status == 400
    assert get(app, f"/dialogues?target={TARGET}&pool={POOL}&page=two").status == 400


def test_the_dialogue_page_shows_the_hidden_state_labels_verdicts_and_calls(app):
    answer = get(app, dialogue_url(TARGET, seed_id(1)))
    assert answer.status == 200
    html = answer.text
    for shown in (
        "persona of dialogue 1",
        "final intent of dialogue 1",
        "initial intent of dialogue 1",
        "user turn 2 of dialogue 1",
        "reply 2 of dialogue 1",
        "rationale 2 of dialogue 1",
        "final rationale of dialogue 1",
        "empathy_recognition",
        "anthro_rhythm",
        "0.505",
        "0.250",
    ):
        assert shown in html, shown
    assert "&#10003; right" in html
    # every call of this dialogue is found: seed, simulator turn 2, two perceptions, two replies, two judge turns
    # (the first after a re-ask), the final verdict
    assert len(re.findall(r'<a class="call" href="/call/[0-9a-f]{64}(?:\?prompt=[^"]+)?">', html)) == 9
    wrong = get(app, dialogue_url(TARGET, seed_id(4))).text
    assert "&#10007; wrong" in wrong and 'class="call"' not in wrong  # dialogue 4's calls are not in the cache
    assert "call(s) of chat-target for respond:1, none with this row&#39;s reply" in wrong
    baseline = get(app, dialogue_url(BASELINE, seed_id(0))).text
    assert "no call of rule-baseline for respond:1 in the ledger (an embedded baseline makes none)" in baseline


def test_a_row_that_matches_two_calls_lists_both(app):
    html = get(app, dialogue_url(TARGET, seed_id(2))).text
    assert "2 calls match, the row does not say which" in html


def test_the_call_page_shows_the_reply_and_the_ledger(app):
    html = get(app, dialogue_url(TARGET, seed_id(1))).text
    links = re.findall(r'href="(/call/[0-9a-f]{64}(?:\?prompt=[^"]+)?)"', html)
    # a call link carries the prompt hash of its row when the row has one (the fixture's verdicts have none)
    assert (
        sum("?prompt=seedhash" in link for link in links) == 1
        and sum("?prompt=turnhash" in link for link in links) >= 4
    )
    pages = [get(app, link.replace("&amp;", "&")) for link in links]
    opened = next(p.text for link, p in zip(links, pages) if link.endswith("?prompt=turnhash"))
    assert "Prompt file hash of the row that opened this page: <code>turnhash</code>" in opened
    assert all(p.status == 200 for p in pages)
    judged = next(p.text for p in pages if "judge_turn:nemotron_usa:p01:1" in p.text)
    assert "judge-a-model" in judged and "0.0012" in judged and "run-1" in judged
    # the judge's base URL held a user name and password: stored without them, so it no longer hashes to the key
    assert "does not hash to the cache key" in judged and "judge-pass" not in judged and "judge-user" not in judged
    assert "http://127.0.0.1:9/v1" in judged and "system prompt for judge" in judged
    assert "the judge_turn:nemotron_usa:p01:1 prompt" in judged and "max_tokens" in judged
    reply = next(p.text for p in pages if "respond:2" in p.text)
    assert "This request hashes to the cache key" in reply and "does not hash" not in reply
    assert "system prompt for target" in reply
    reply = next(p.text for p in pages if "respond:2" in p.text)
    assert "&lt;think&gt;planning 1&lt;/think&gt;reply 2 of dialogue 1" in reply


def test_failed_dialogue_page_shows_its_error(app):
    html = get(app, dialogue_url(TARGET, FAILED_SEED)).text
    assert "The dialogue failed" in html and "the target timed out" in html


# -- safety -----------------------------------------------------------------------------------------------------


def served(app) -> list[str]:
    """Every page that shows dialogue 0 (all its model-written fields hold HOSTILE), and its calls."""
    pages = [
        get(app, "/"),
        get(app, f"/dialogues?target={TARGET}&pool={POOL}"),
        get(app, dialogue_url(TARGET, seed_id(0))),
    ]
    keys = re.findall(r'href="/call/([0-9a-f]{64})(?:\?prompt=[^"]+)?"', pages[-1].text)
    pages += [get(app, f"/call/{k}") for k in keys]
    assert all(p.status == 200 for p in pages) and len(keys) >= 8
    assert all("script-src" not in p.headers["content-security-policy"] for p in pages)  # no script allowed
    return [p.text for p in pages]


def test_model_text_is_shown_as_text_only(app):
    pages = served(app)
    dialogue = pages[2]
    assert dialogue.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8  # persona, intents, replies, rationales
    assert "&lt;img src=x onerror=alert(1)&gt;" in dialogue
    assert "[x](javascript:alert(1))" in dialogue
    prompts = [html for html in pages[3:] if 'class="text prompt">&lt;script&gt;alert(1)&lt;/script&gt;' in html]
    assert len(prompts) >= 8  # the stored requests of dialogue 0's calls carry it in their user message
    for html in pages:
        tags = re.findall(r"<\s*([a-zA-Z]+)", html)
        assert not {t.lower() for t in tags} & {"script", "img", "iframe", "object", "embed", "svg"}, tags
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)
        assert not re.search(r"\son[a-z]+\s*=", html.replace("onerror=alert(1)&gt;", ""), re.I)


def test_no_secret_reaches_a_page(app, monkeypatch):
    monkeypatch.setenv("EYT_TEST_API_KEY", SECRET)
    assert all(SECRET not in html for html in served(app))
    assert HOSTILE not in "".join(served(app))  # never unescaped


def test_eyt_view_takes_the_port_of_its_address_and_says_when_that_is_taken(monkeypatch):
    from eyt_dagster.explorer.server import bind, bind_preferred

    holder = bind("127.0.0.1", 0)
    taken = holder.getsockname()[1]
    try:
        monkeypatch.setenv("EYT_VIEW_URL", f"http://127.0.0.1:{taken}")
        sock, note = bind_preferred("127.0.0.1", None)
        with sock:
            assert sock.getsockname()[1] != taken and f"port {taken}" in note and "do not reach" in note
    finally:
        holder.close()
    sock, note = bind_preferred("127.0.0.1", None)  # now free: the links' port
    with sock:
        assert sock.getsockname()[1] == taken and note == ""
    sock, _ = bind_preferred("127.0.0.1", 0)
    with sock:
        assert sock.getsockname()[1] != taken


def test_a_cells_dialogues_filtered_by_a_persona_attribute(app, data):
    from eyt_dagster.explorer import personas

    offered = personas.facets(wh(data), POOL)
    # city has a value per persona: not offered; sex has one value: nothing to filter
    assert offered == {
        "age_bucket": ["30-44", "45-59"],
        "length_bucket": ["long", "short"],
        "occupation": ["high_school_teacher", "registered_nurse", "software_developer"],
    }
    page = queries.cell_dialogues(wh(data), BASELINE, POOL, persona=("age_bucket", "45-59"))
    assert list(page.rows["seed_id"]) == [seed_id(i) for i in range(1, N_BASELINE, 2)]  # the odd ones of 0-11
    short = queries.cell_dialogues(wh(data), BASELINE, POOL, persona=("length_bucket", "short"))
    assert short.total == 10
    html = get(app, f"/dialogues?target={BASELINE}&pool={POOL}&persona=age_bucket:30-44&sort=empathy").text
    assert "6 dialogue(s) of personas with age_bucket:30-44" in html
    assert "persona=age_bucket%3A30-44" in html  # the sort and page links keep the filter
    for bad, says in (("city:city 3", "unknown persona attribute &#39;city&#39;"), ("age_bucket:99", "no persona of")):
        answer = get(app, f"/dialogues?target={BASELINE}&pool={POOL}&persona={bad}")
        assert answer.status == 400 and says in answer.text


def test_the_simulator_audit_shows_on_the_list_and_the_dialogue(app, data):
    from support.explorer_data import REPEATING

    page = queries.cell_dialogues(wh(data), TARGET, POOL, failure="simulator_flagged")
    assert list(page.rows["seed_id"]) == [seed_id(REPEATING)]
    html = get(app, dialogue_url(TARGET, seed_id(REPEATING))).text
    assert "The simulator audit flagged this dialogue: repetition" in html
    assert html.count('<span class="flag">repetition</span>') == 1  # on turn 2 only
    clean = get(app, dialogue_url(TARGET, seed_id(1))).text
    assert "The simulator audit raised no flag" in clean


def test_the_stylesheet_names_a_chinese_font_the_explorer_serves(app):
    css = get(app, "/explorer.css")
    assert css.status == 200 and 'font-family: "EYT Sans SC"; src: url(eyt-sans-sc.otf)' in css.text
    assert "unicode-range: U+3000-303F, U+4E00-9FFF, U+FF00-FFEF" in css.text
    font = get(app, "/eyt-sans-sc.otf")
    assert font.status == 200 and font.headers["content-type"] == "font/otf"
    from eyt_dagster.reporting.cjk_font import shipped_font

    assert font.body == shipped_font().read_bytes()
