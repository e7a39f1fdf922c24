"""Each number the explorer shows opens its arithmetic (templates/explain.html), computed by the function whose value
the warehouse stores: on a warehouse written by the pipeline's own functions (tests/support/explorer_explain_data.py,
which spells out the hand-computed values), every explanation agrees with its stored number, the pages show the
steps with the actual values, and a model's text inside an explanation reaches the page as text only."""

from __future__ import annotations

import html
import re

import pytest
from markupsafe import escape

from eyt_dagster.core.explained import Explained, Step, figure
from eyt_dagster.explorer import explain, queries
from eyt_dagster.explorer.app import dialogue_url, dialogues_url, environment

from support.asgi_get import get
from support.explorer_data import HOSTILE
from support.explorer_explain_data import (
    DIRECT_RIGHT,
    E1,
    E1_EMPATHY_100,
    E2,
    OTHER_SUBSCALE,
    POOL,
    SPEECH_RIGHT,
    SUBSCALE,
    TARGET,
    build_explain,
)
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

CHECKS = ("contextual_amnesia", "acc2_direct", "sequential_direct_delta")  # beside the accuracies, explained too

data, app = explorer_fixtures("explain", build_explain)


def blocks(page: str) -> dict[str, str]:
    """Each explanation of a page by what it explains (its first line), as plain text."""
    found = {}
    for block in re.findall(r'<details class="explain">.*?</details>', page, re.S):
        what = re.search(r'<p class="what">(.*?) = <strong>', block, re.S)
        assert what is not None, block
        text = html.unescape(re.sub(r"<[^>]+>", "", block))
        found.setdefault(html.unescape(what.group(1)), text)
    return found


def test_every_explanation_agrees_with_its_stored_number(data):
    frames = data[1]
    for seed in (E1, E2):
        found = queries.dialogue(wh(data), TARGET, seed)
        assert found is not None
        shown = explain.dialogue(found)
        assert set(shown) == {"completed", "satisfaction", "drift", "empathy", "persona", "anthropomorphic"}
        assert all(s.agrees for s in shown.values()), {k: (s.stored, s.value) for k, s in shown.items()}
    rows = frames["dialogue.leaderboard"].to_dict("records")
    cells = explain.leaderboard_cells(wh(data), rows, queries.HEADLINE)
    assert len(cells) == len(queries.HEADLINE)
    assert all(s.agrees for s in cells.values()), {k: (s.stored, s.value) for k, s in cells.items() if not s.agrees}
    for target in SPEECH_RIGHT:
        (default,) = explain.speech(wh(data), target)
        assert set(default.explained) == {"acc1", "acc2", "acc_traj", "seq", *CHECKS, "acc_traj_direct"}
        assert all(s.agrees for s in default.explained.values()), target


def test_the_dialogue_page_shows_each_numbers_arithmetic_with_its_values(app, data):
    page = get(app, dialogue_url(TARGET, E1)).text
    shown = blocks(page)
    stored = data[1]["dialogue.dialogue_scores"].set_index("seed_id").loc[E1]
    assert stored["empathy"] == pytest.approx(E1_EMPATHY_100)
    empathy = shown[f"empathy of this dialogue (Eq. 3, 0-100) = {figure(stored['empathy'])}".split(" = ")[0]]
    for written in (
        "w1 = w2 = 0.1; w3..w4 = (1 - 2 x 0.1) / (4 - 2) = 0.1, 0.1, 0.4, 0.4",
        "judge-a (1, 1, 1, 0.5, 0); judge-b (1, 0.5, 1, 0.5, 0); mean per sub-indicator (1, 0.75, 1, 0.5, 0)",
        "turn 2: no verdict (every judge call failed); its weight drops out",
        "0.1 / 0.9, 0.4 / 0.9, 0.4 / 0.9 = 0.111111, 0.444444, 0.444444",
        "0.111111 x 3.25 + 0.444444 x 4.5 + 0.444444 x 2.5 = 3.47222",
        "3.47222 x 20 = 69.4444",
    ):
        assert written in empathy, written
    completed = shown["final intent completed (majority of the judges)"]
    assert "2 of 2: 2 x 2 > 2 = yes" in completed
    satisfaction = shown["satisfaction of this dialogue (0-100)"]
    assert "(5 + 4) / 2 = 4.5" in satisfaction and "(4.5 - 1) x 25 = 87.5" in satisfaction
    drift = shown["intent drift of the dialogue (Eq. 1)"]
    assert "1 - 0.6 = 0.4" in drift and "(0.1 + 0.4 + 0.25 + 0.65) / 4 = 0.35" in drift
    assert "The stored number is" not in page
    tie = blocks(get(app, dialogue_url(TARGET, E2)).text)["final intent completed (majority of the judges)"]
    assert "1 of 2: 1 x 2 > 2 = no" in tie and "a tie counts as not completed" in tie


def test_a_number_in_the_dialogue_list_opens_its_arithmetic_in_one_click(app):
    listing = get(app, dialogues_url(target=TARGET, pool=POOL)).text
    link = dialogue_url(TARGET, E1, explain="empathy")
    assert link.endswith("?explain=empathy") and f'href="{html.escape(link)}"' in listing
    assert "explain=n_turns" not in listing  # a count explains nothing: no link
    page = get(app, link).text
    opened = re.findall(r'<div class="score" id="score-(\w+)">[^<]*<details class="explain"( open)?>', page)
    assert (
        dict(opened) == {k: " open" if k == "empathy" else "" for k in dict(opened)}
        and "empathy" in dict(opened)
        and len(opened) > 1
    )


def test_a_models_text_in_an_explanation_stays_text(app):
    page = get(app, dialogue_url(TARGET, E1)).text
    drift = next(b for b in re.findall(r'<details class="explain">.*?</details>', page, re.S) if "Eq. 1" in b)
    assert str(escape(HOSTILE)) in drift  # the intent texts, escaped
    assert HOSTILE not in page and "<script" not in page and "<img" not in page


def test_the_leaderboard_explains_which_dialogues_count_and_how_the_interval_was_drawn(app, data):
    shown = blocks(get(app, "/").text)
    interval = data[1]["dialogue.leaderboard_intervals"].set_index("metric").loc["empathy"]
    empathy = shown["empathy: mean over the cell's dialogues"]
    for written in (
        "empathy (Eq. 3, 0-100) of the 2 dialogue(s) with a value, summed: 69.4444 + 50 = 119.444",
        "119.444 / 2 = 59.7222",
        "not counted: 1 unfinished dialogue(s) (simulator: 1 timeout)",
        "counted: 1 dialogue(s) the simulator audit flagged",
        "200 resamples of the 2 dialogue(s), drawn with replacement (default_rng(7))",
        f"= {figure(interval['ci_low'])} to {figure(interval['ci_high'])}",
    ):
        assert written in empathy, written
    assert (
        "completed in 1 of the 2 dialogue(s) with a final verdict: 1 / 2 = 0.5"
        in shown["ficr: mean over the cell's dialogues"]
    )
    assert "87.5 + 37.5 = 125" in shown["satisfaction: mean over the cell's dialogues"]
    pooled = shown["latent_acc: pooled over the cell's turns"]  # e1's turn 2 and e2's turn 2 are wrong
    for written in (
        "latent intent hits, summed over the cell's 2 dialogue(s): 3 + 2 = 5",
        "4 + 3 = 7",
        "5 / 7 = 0.714286",
    ):
        assert written in pooled, written
    assert "unfinished dialogues" in shown and "simulator: 1 timeout" in shown["unfinished dialogues"]


def test_the_speech_page_explains_a_targets_seq(app):
    shown = blocks(get(app, "/speech?target=t9").text)
    seq = shown["SEQ (Eq. 2-3)"]
    for written in (
        "t2 0.2, t4 0.4, t5 0.5, t9 0.9",
        "median(0.2, 0.4, 0.5, 0.9) = 0.45",
        "median(0.05, 0.05, 0.25, 0.45) = 0.15",
        "(0.9 - 0.45) / (1.4826 x 0.15) = 2.02347",
        "100 + 15 x 2.02347 = 130.352",
        "t9 is a member of the cohort",
    ):
        assert written in seq, written
    assert "9 / 10 = 0.9" in shown["Acc_traj"] and "10 / 10 = 1" in shown["Acc2"]
    t2 = blocks(get(app, "/speech?target=t2").text)
    assert "1 item(s) left out: a call never reached the model" in t2["Acc1"]
    assert "100 + 15 x (-1.12415) = 83.1377" in t2["SEQ (Eq. 2-3)"]


def test_the_seq_leaderboard_explains_each_targets_numbers(app):
    page = get(app, "/seq").text
    board = page.split('<table class="board seq">', 1)[1].split("</table>", 1)[0]
    rows = {
        re.search(r'<td class="target">(?:<a [^>]*>)?([^<]+)', r).group(1).strip(): r for r in board.split("<tr")[2:]
    }
    t9 = blocks(rows["t9"])
    assert "100 + 15 x 2.02347 = 130.352" in t9["SEQ (Eq. 2-3)"] and "9 / 10 = 0.9" in t9["Acc_traj"]
    assert "100 + 15 x (-1.12415) = 83.1377" in blocks(rows["t2"])["SEQ (Eq. 2-3)"]
    assert "The stored number" not in board  # the table's numbers are the explanations' own


def test_a_subscales_accuracies_are_explained_from_its_items_alone(app, data):
    breakdown = data[1]["speech.seq_breakdown"]
    stored = breakdown[breakdown["level"] == "subscale"].set_index(["name", "target"])
    # on Empathy items 0-7: t9 right on all 8, t5 on 5, t4 on 4, t2 on 2 (its failed item left out); Self-Regard
    # items 8 and 9: t9 right on item 8 only
    hand = {(SUBSCALE, "t9"): 8 / 8, (SUBSCALE, "t5"): 5 / 8, (SUBSCALE, "t4"): 4 / 8, (SUBSCALE, "t2"): 2 / 8}
    hand |= {(OTHER_SUBSCALE, "t9"): 1 / 2, (OTHER_SUBSCALE, "t2"): 0.0}
    for (slug, target), value in hand.items():
        explained = explain.speech_subscale(
            wh(data), slug, "default", [stored.loc[(slug, target)].to_dict() | {"target": target}]
        )
        acc_traj = explained[target]["acc_traj"]
        assert acc_traj.agrees and stored.loc[(slug, target), "acc_traj"] == value, (slug, target)
        assert acc_traj.value == figure(value) and explained[target]["acc2"].value == "1"
    page = get(app, "/seq/subscale/" + SUBSCALE).text
    board = page.split('<table class="board seq">', 1)[1].split("</table>", 1)[0]
    rows = {re.search(r'<td class="target"><a [^>]*>([^<]+)', r).group(1): r for r in board.split("<tr")[2:]}
    assert set(rows) == set(SPEECH_RIGHT)
    t2 = blocks(rows["t2"])
    assert "items with both rounds right, over the items scored: 2 / 8 = 0.25" in t2["Acc_traj"]
    assert "items scored: both rounds answered, no failed call (8 of 9)" in t2["Acc_traj"]
    assert "1 item(s) left out: a call never reached the model" in t2["Acc1"]
    assert "8 / 8 = 1" in blocks(rows["t9"])["Acc_traj"] and "The stored number" not in board
    assert "1 / 2 = 0.5" in blocks(get(app, "/seq/subscale/" + OTHER_SUBSCALE).text)["Acc_traj"]


def board_rows(page: str) -> dict[str, str]:
    """The rows of a SEQ page's first table (the leaderboard, or a subscale's targets) by target."""
    board = page.split('<table class="board seq">', 1)[1].split("</table>", 1)[0]
    return {
        re.search(r'<td class="target">(?:<a [^>]*>)?([^<]+)', r).group(1).strip(): r for r in board.split("<tr")[2:]
    }


def cell(row: str, column: int) -> str:
    """The text a row's number column shows (0: the first after the target), its arithmetic left out."""
    cells = re.findall(r'<td class="num">(.*?)</td>', row, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<details.*?</details>", "", cells[column], flags=re.S)))


def test_a_subscales_amnesia_and_direct_inference_are_explained_from_its_items_alone(app, data):
    breakdown = data[1]["speech.seq_breakdown"]
    stored = breakdown[breakdown["level"] == "subscale"].set_index(["name", "target"])
    # on Empathy's 8 clean items (round 2 right on all under sequential inference): Acc1 - Acc2 = k / 8 - 1; t9's
    # direct round 2 right on 6 of its 8: 6 / 8, and 6 / 8 - 8 / 8 for direct - sequential Acc2
    hand = {
        (SUBSCALE, "t9", "contextual_amnesia"): 8 / 8 - 1,
        (SUBSCALE, "t5", "contextual_amnesia"): 5 / 8 - 1,
        (SUBSCALE, "t2", "contextual_amnesia"): 2 / 8 - 1,
        (SUBSCALE, "t9", "acc2_direct"): DIRECT_RIGHT / 8,
        (SUBSCALE, "t9", "sequential_direct_delta"): DIRECT_RIGHT / 8 - 1,
        (OTHER_SUBSCALE, "t9", "contextual_amnesia"): 1 / 2 - 1,
    }
    assert hand[(SUBSCALE, "t9", "sequential_direct_delta")] == -0.25
    for (slug, target, name), value in hand.items():
        explained = explain.speech_subscale(
            wh(data), slug, "default", [stored.loc[(slug, target)].to_dict() | {"target": target}]
        )[target][name]
        assert explained.agrees and explained.value == figure(value), (slug, target, name, explained.value)
        assert stored.loc[(slug, target), name] == value, (slug, target, name)
    # no direct item: missing, as stored (t5 on Empathy, t9 on Self-Regard)
    for slug, target in ((SUBSCALE, "t5"), (OTHER_SUBSCALE, "t9")):
        row = [stored.loc[(slug, target)].to_dict() | {"target": target}]
        missing = explain.speech_subscale(wh(data), slug, "default", row)[target]["sequential_direct_delta"]
        assert (
            missing.value == "missing"
            and missing.agrees
            and "0 / 0 = missing" in " ".join(line.arithmetic + " = " + line.result for line in missing.lines)
        )
    rows = board_rows(get(app, "/seq/subscale/" + SUBSCALE).text)
    t9, t5 = blocks(rows["t9"]), blocks(rows["t5"])
    # the page's columns: Acc_traj, Acc1, Acc2, items, Acc1 - Acc2, items direct, Acc2 direct, direct - sequential
    assert cell(rows["t9"], 6).strip() == "0.750" and cell(rows["t9"], 7).strip() == "-0.250"
    assert cell(rows["t5"], 4).strip() == "-0.375" and cell(rows["t9"], 5).strip() == "8"
    assert "items with round 2 (turn 6) right, over the items scored: 6 / 8 = 0.75" in t9["Acc2, direct"]
    assert "direct inference: the resonant turn-4 clip is always in the history" in t9["Acc2, direct"]
    delta = t9["direct - sequential Acc2"]
    assert "Acc2: items with round 2 (turn 6) right, over the items scored: 8 / 8 = 1" in delta
    assert "Acc2, direct - Acc2: 0.75 - 1 = -0.25" in delta
    amnesia = t5["contextual amnesia (Acc1 - Acc2)"]
    assert "Acc1: items with round 1 (turn 4) right, over the items scored: 5 / 8 = 0.625" in amnesia
    assert "Acc1 - Acc2: 0.625 - 1 = -0.375" in amnesia
    assert "items, direct" not in " ".join(t9)  # a count has no arithmetic
    assert "The stored number" not in "".join(rows.values())


def test_the_seq_pages_table_per_subscale_explains_each_targets_acc_traj(app, data):
    breakdown = data[1]["speech.seq_breakdown"]
    stored = breakdown[breakdown["level"] == "subscale"].set_index(["name", "target"])["acc_traj"]
    page = get(app, "/seq").text
    table = page.split('<table class="subscales">', 1)[1].split("</table>", 1)[0]
    heads = re.findall(r"<th>([^<]+?) ?(?:<span|</th>)", table.split("</thead>", 1)[0])[2:]
    hand = {SUBSCALE: {"t9": 8 / 8, "t5": 5 / 8, "t4": 4 / 8, "t2": 2 / 8}, OTHER_SUBSCALE: {"t9": 1 / 2}}
    hand[OTHER_SUBSCALE] |= {"t5": 0.0, "t4": 0.0, "t2": 0.0}
    shown = explain.speech_subscales(
        wh(data),
        "default",
        [
            {"slug": slug, "targets": {t: {"acc_traj": stored.loc[(slug, t)]} for t in values}}
            for slug, values in hand.items()
        ],
    )
    for slug, values in hand.items():
        for target, value in values.items():
            e = shown[slug][target]["acc_traj"]
            assert set(shown[slug][target]) == {"acc_traj"} and e.agrees and e.value == figure(value)
            assert stored.loc[(slug, target)] == value
    rows = {re.search(r"subscale/([a-z_]+)\?", r).group(1): r for r in table.split("<tr>")[2:]}
    assert set(rows) == {SUBSCALE, OTHER_SUBSCALE}
    opened = {}
    for slug, row in rows.items():
        cells = re.findall(r'<td class="num">(.*?)</td>', row, re.S)
        assert len(cells) == len(heads) == 4
        for target, written in zip(heads, cells):
            (opened[(slug, target.strip())],) = blocks(written).values()
            value = hand[slug][target.strip()]
            assert f"Acc_traj = {figure(value)}\n" in opened[(slug, target.strip())], (slug, target)
            assert re.sub(r"<[^>]+>", "", written).startswith(f"{value:.3f} (")  # the number shown, 3 decimals
    assert "items with both rounds right, over the items scored: 5 / 8 = 0.625" in opened[(SUBSCALE, "t5")]
    assert "items scored: both rounds answered, no failed call (8 of 9)" in opened[(SUBSCALE, "t2")]
    assert "items with both rounds right, over the items scored: 1 / 2 = 0.5" in opened[(OTHER_SUBSCALE, "t9")]
    assert "The stored number" not in table


def test_the_seq_leaderboard_explains_the_amnesia_and_the_direct_columns(app):
    t9 = blocks(board_rows(get(app, "/seq").text)["t9"])
    assert "Acc1 - Acc2: 0.9 - 1 = -0.1" in t9["contextual amnesia (Acc1 - Acc2)"]
    assert "6 / 8 = 0.75" in t9["Acc2, direct"] and "0.75 - 1 = -0.25" in t9["direct - sequential Acc2"]


def test_an_explanation_that_disagrees_says_so_and_escapes_its_text():
    explained = Explained(
        f"drift of {HOSTILE}", 0.35, (Step(f"turn 1: {HOSTILE}", "1 - 0.65", 0.35),), notes=(HOSTILE,)
    )
    macro = environment().from_string('{% from "explain.html" import explain %}{{ explain(e) }}')
    page = macro.render(e=explain.shown(explained, stored=0.4))
    assert "The stored number is 0.4, these rows give 0.35" in page
    assert HOSTILE not in page and str(escape(HOSTILE)) in page
    assert "The stored number" not in macro.render(e=explain.shown(explained, stored=0.35))
