"""`eyt view`'s side by side (`/compare`) and paired differences (`/pairs`) on the hand-made warehouse
(tests/support/explorer_data.py): the numbers are the tables', the marks fall where the targets differ, the rows are
sorted by |A - B| and paginated, bad requests get clear 400/404 pages, and model text stays text."""

from __future__ import annotations

import html as html_text
import re

import pytest

from eyt_dagster.core.explained_means import explained_paired_difference
from eyt_dagster.core.stats import paired_bootstrap_diff
from eyt_dagster.explorer import compare, pairs
from eyt_dagster.explorer.app import compare_url, dialogue_url, pairs_url

from support.asgi_get import get
from support.explorer_data import BASELINE, HOSTILE, N_BASELINE, POOL, TARGET, build, seed_id
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

data, app = explorer_fixtures("explorer-compare", build)


def expected_pairs(data, column: str) -> list[tuple[str, float]]:
    """(seed_id, A - B) of the ChatSEEDs both targets finished, largest |A - B| first, from the stored rows."""
    scores = data[1]["dialogue.dialogue_scores"]
    a = {r["seed_id"]: float(r[column]) for r in scores if r["target"] == TARGET}
    b = {r["seed_id"]: float(r[column]) for r in scores if r["target"] == BASELINE}
    both = sorted(set(a) & set(b))
    return sorted(((s, a[s] - b[s]) for s in both), key=lambda p: (-abs(p[1]), p[0]))


# -- queries ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric, column", [("empathy", "empathy"), ("drift", "drift"), ("ficr", "completed")])
def test_paired_differences_are_the_tables_sorted_by_their_size(data, metric, column):
    found = pairs.paired(wh(data), POOL, TARGET, BASELINE, metric)
    expected = expected_pairs(data, column)
    assert found.total == N_BASELINE == len(expected)
    assert list(found.rows["seed_id"]) == [s for s, _ in expected]
    assert list(found.rows["difference"]) == pytest.approx([d for _, d in expected])
    assert found.mean_difference == pytest.approx(sum(d for _, d in expected) / len(expected))


def test_a_mean_paired_difference_is_explained_by_the_function_that_computes_it():
    # b has no value on s3: the pairs are s1 (3 - 1 = 2), s2 (1 - 2.5 = -1.5), s4 (2 - 2 = 0): (2 - 1.5 + 0) / 3
    a, b = [3.0, 1.0, 4.0, 2.0], [1.0, 2.5, float("nan"), 2.0]
    explained = explained_paired_difference("mean A - B", a, b, ["s1", "s2", "s3", "s4"], ("x", "y"), "ChatSEED")
    assert explained.value == 0.5 / 3 == paired_bootstrap_diff(a, b, resamples=10, seed=1)["diff"]
    lines = [(s.label, s.arithmetic, s.result) for s in explained.steps]
    assert lines == [
        ("ChatSEED s1: x - y", "3 - 1", 2.0),
        ("ChatSEED s2: x - y", "1 - 2.5", -1.5),
        ("ChatSEED s4: x - y", "2 - 2", 0.0),
        ("the 3 difference(s), summed", "2 + -1.5 + 0", 0.5),
        ("mean over those ChatSEEDs", "0.5 / 3", 0.5 / 3),
    ]
    assert explained.notes == ("1 ChatSEED(s) left out: no value of x or of y",)


def test_the_pairs_mean_is_its_explanations_value(data):
    # Empathy: the chat target's dialogue i scores i, the baseline's 3i + 3, so A - B = -2i - 3 on ChatSEEDs 0-11
    found = pairs.paired(wh(data), POOL, TARGET, BASELINE, "empathy", page=2)
    hand = sum(-2 * i - 3 for i in range(N_BASELINE)) / N_BASELINE
    assert hand == -14.0 and found.mean_difference == found.mean.number() == found.mean.value == hand
    steps = {s.label: (s.arithmetic, s.result) for s in found.mean.steps}
    assert steps[f"ChatSEED {seed_id(11)}: {TARGET} - {BASELINE}"] == ("11 - 36", -25.0)
    assert steps["the 12 difference(s), summed"][1] == -168.0
    assert steps["mean over those ChatSEEDs"] == ("-168 / 12", -14.0)


def test_unknown_metrics_are_refused(data):
    for bad in ("nope", "seed_id", "empathy; DROP TABLE x", "n_failed_verdicts"):
        with pytest.raises(ValueError, match="unknown metric"):
            pairs.metric_column(bad)


def test_side_by_side_marks_where_the_targets_differ(data):
    c = compare.compare(wh(data), seed_id(0), [TARGET, BASELINE])
    assert c.pool == POOL and [d.target for d in c.dialogues] == [TARGET, BASELINE]
    turns = dict(c.turns)
    rows = {n: {r.name: r for r in turns[n]} for n in turns}
    # the chat target misses the emotion on turn 2 (i % 4 == 0), the baseline on turn 1 (i % 3 == 0)
    assert rows[1]["emotion"].differ and rows[2]["emotion"].differ and not rows[1]["explicit_intent"].differ
    assert rows[1]["emotion"].cells == [("anxiety", "anxiety", True), ("joy", "anxiety", False)]
    # the baseline's turn-2 Empathy sub-indicators are 0: its dimension is 0 of 5 against the target's 5
    assert rows[2]["empathy (0-5)"].cells == [5.0, 0.0] and rows[2]["empathy (0-5)"].differ
    assert rows[2]["empathy_support"].differ and not rows[2]["persona_style"].differ
    assert not rows[1]["empathy (0-5)"].differ
    summary = {r.name: r for r in c.summary}
    assert summary["empathy"].cells == [0.0, 3.0] and not summary["empathy"].differ  # 3 < 20 points apart
    far = compare.compare(wh(data), seed_id(11), [TARGET, BASELINE])
    assert {r.name: r for r in far.summary}["empathy"].differ  # 11 against 36


def test_combined_scores_leave_failed_verdicts_out(data):
    d = compare.compare(wh(data), seed_id(5), [TARGET, BASELINE]).dialogues[0]
    combined = compare.combined_scores(d)
    assert set(combined) == {2}  # turn 1's only verdict failed


def test_a_target_without_the_seed_is_a_key_error(data):
    with pytest.raises(KeyError):
        compare.compare(wh(data), seed_id(30), [TARGET, BASELINE])


# -- pages ------------------------------------------------------------------------------------------------------


def test_the_pairs_page_sorts_links_and_pages(app, data, monkeypatch):
    answer = get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="empathy"))
    assert answer.status == 200
    expected = expected_pairs(data, "empathy")
    linked = [html_text.unescape(u) for u in re.findall(r'class="compare" href="([^"]+)"', answer.text)]
    assert linked == [compare_url(s, [TARGET, BASELINE]) for s, _ in expected]
    assert f"{N_BASELINE} ChatSEED(s) both targets finished" in answer.text
    monkeypatch.setattr(pairs, "PAGE_SIZE", 5)
    second = get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="empathy", page=2)).text
    shown = re.findall(r'class="compare" href="([^"]+)"', second)
    assert [html_text.unescape(u) for u in shown] == [compare_url(s, [TARGET, BASELINE]) for s, _ in expected[5:10]]
    assert "page 2 of 3" in second and "page=1" in second and "page=3" in second


@pytest.mark.parametrize(
    "url, status, message",
    [
        (pairs_url(pool=POOL, a="nobody", b=BASELINE), 404, "no dialogues of target 'nobody'"),
        (pairs_url(pool="elsewhere", a=TARGET, b=BASELINE), 404, "no ChatSEED in common in pool 'elsewhere'"),
        (pairs_url(pool=POOL, a=TARGET, b=TARGET), 400, "two different targets"),
        (pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="nope"), 400, "unknown metric 'nope'"),
        (pairs_url(pool=POOL, a=TARGET, b=BASELINE, page="two"), 400, "page must be a number"),
        (compare_url(seed_id(1), [TARGET]), 400, "two or more different targets"),
        (compare_url(seed_id(1), [TARGET, TARGET]), 400, "two or more different targets"),
        (compare_url(seed_id(30), [TARGET, BASELINE]), 404, f"'{BASELINE}' has no dialogue of ChatSEED"),
        (compare_url("nemotron_usa:nobody", [TARGET, BASELINE]), 404, "has no dialogue of ChatSEED"),
    ],
)
def test_bad_pairs_and_compare_requests(app, url, status, message):
    answer = get(app, url)
    assert answer.status == status and message in html_text.unescape(answer.text)


def test_the_compare_page_marks_the_differing_rows_and_prints_the_thresholds(app):
    answer = get(app, compare_url(seed_id(0), [TARGET, BASELINE]))
    assert answer.status == 200
    html = answer.text
    marked = re.findall(r'<tr class="(?:label|score) differ"><th>([a-z_ ()0-9-]+) <span class="flag">', html)
    assert marked == ["emotion", "emotion", "empathy (0-5)", *[f"empathy_{s}" for s in compare_subs()]]
    assert "more than 1.00 apart" in html and "more than 0.250" in html and "more than 20.0 apart" in html
    assert f'href="{dialogue_url(BASELINE, seed_id(0))}"' in html and 'class="badge"' in html


def compare_subs() -> list[str]:
    return ["recognition", "attribution", "resonance", "response", "support"]


def test_the_leaderboard_and_the_dialogue_page_link_to_the_comparisons(app):
    board = get(app, "/").text
    assert 'action="/pairs"' in board and f'<option value="{BASELINE}" selected>' in board
    dialogue = get(app, dialogue_url(TARGET, seed_id(0))).text
    assert "The same ChatSEED with other targets" in dialogue
    assert f'href="{html_text.escape(compare_url(seed_id(0), [TARGET, BASELINE]))}"' in dialogue
    assert "The same ChatSEED" not in get(app, dialogue_url(TARGET, seed_id(30))).text


def test_the_pairs_page_explains_its_mean_and_links_each_value_to_its_arithmetic(app):
    page = get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="empathy")).text
    # in a <div>: a <details> inside a <p> would close the paragraph and leave the ? outside its number
    assert re.search(r'<div class="count summary">[^<]*<span class="mean">', page)
    mean = re.search(r'<span class="mean">(.*?)</span>;', page, re.S)
    assert mean is not None and mean.group(1).startswith('-14.0<details class="explain">')
    text = html_text.unescape(re.sub(r"<[^>]+>", "", mean.group(1)))
    assert f"mean paired difference {TARGET} - {BASELINE} of empathy = -14" in text
    assert "the 12 difference(s), summed" in text and "-168 / 12 = -14" in text
    assert f"ChatSEED {seed_id(11)}: {TARGET} - {BASELINE}: 11 - 36 = -25" in text
    for target, value in ((TARGET, "11.0"), (BASELINE, "36.0")):  # ChatSEED 11, the largest |A - B|: first
        link = html_text.escape(dialogue_url(target, seed_id(11), explain="empathy"))
        assert f'<a href="{link}" title="its arithmetic, on the dialogue\'s page">{value}</a>' in page
    counted = get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE, metric="n_turns")).text
    assert "explain=" not in counted and '<details class="explain">' in counted  # a count: its mean only


def test_the_compare_page_links_each_dialogue_number_to_its_arithmetic(app):
    page = get(app, compare_url(seed_id(11), [TARGET, BASELINE])).text
    summary = page.split("<h2>Dialogue scores", 1)[1].split("</table>", 1)[0]
    for target in (TARGET, BASELINE):
        for column in ("completed", "satisfaction", "empathy", "persona", "anthropomorphic", "drift"):
            assert f'href="{html_text.escape(dialogue_url(target, seed_id(11), explain=column))}"' in summary
    assert "explain=n_turns" not in summary
    assert "explain=" not in page.split("</table>", 1)[1]  # a turn's numbers have no link of their own


def test_model_text_on_the_comparison_pages_is_text_only(app):
    pages = [
        get(app, compare_url(seed_id(0), [TARGET, BASELINE])),
        get(app, pairs_url(pool=POOL, a=TARGET, b=BASELINE)),
    ]
    assert all(p.status == 200 for p in pages)
    assert pages[0].text.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4  # both users' and replies' text
    for html in (p.text for p in pages):
        assert HOSTILE not in html
        tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", html)}
        assert not tags & {"script", "img", "iframe", "object", "embed", "svg"}, tags
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)


def test_the_targets_of_a_seed_follow_a_partition_rewritten_by_a_run(tmp_path):
    """seed_targets keeps each file's seeds per file version: a partition that a run replaces is read again."""
    import pandas as pd

    from eyt_dagster.explorer.reads import Warehouse
    from resources.storage.warehouse import store_frame

    def write(seeds: list[str]) -> None:
        rows = pd.DataFrame({"target": "t1", "pool": POOL, "seed_id": seeds, "turn": 1})
        store_frame(tmp_path, "dialogue.dialogue_turns", rows, partition_by=["target", "pool"])

    write([seed_id(0), seed_id(1)])
    found = Warehouse(tmp_path)
    assert pairs.seed_targets(found, POOL, seed_id(1)) == ["t1"]
    write([seed_id(0)])  # the rerun no longer has seed 1
    assert pairs.seed_targets(found, POOL, seed_id(1)) == [] and pairs.seed_targets(found, POOL, seed_id(0)) == ["t1"]
    assert pairs.seed_targets(found, POOL, seed_id(0)) == ["t1"]  # a cached answer is the same
