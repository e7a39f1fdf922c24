"""`eyt view`'s judges page (/judges) on a small hand-made warehouse: an ensemble of three judges on one target
and a single judge on another. The spreads are hand-computed from how the scores are made: judge-c takes half a
point off the first `i % 6` Empathy sub-indicators of dialogue i, judge-b half a point off persona_memory on
turn 2, so turn t of dialogue i spreads Empathy by 0.5 * (i % 6), Persona by 0.5 on turn 2 and nothing else."""

from __future__ import annotations

import re
from urllib.parse import quote

import pandas as pd
import pytest

from eyt_dagster.explorer import judges
from eyt_dagster.explorer.app import dialogue_url
from eyt_dagster.explorer.queries import PAGE_SIZE
from eyt_dagster.eyt_bench.taxonomy import RUBRIC, SUBSCORE_COLUMNS
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import store_frame

from support.asgi_get import get
from support.explorer_data import HOSTILE
from support.explorer_fixtures import explorer_fixtures, wh

pytestmark = pytest.mark.unit

POOL, OTHER_POOL = "nemotron_usa", "personamem_v2"
ENSEMBLE, SOLO = "ensemble-target", "solo-target"
JUDGES = ("judge-a", "judge-b", "judge-c")
N = 30  # dialogues of the ensemble target, two turns each: 60 turns, two pages
EMPATHY = [f"empathy_{s}" for s in RUBRIC["empathy"]]


def seed(i: int) -> str:
    return f"{POOL}:p{i:02d}"


def scores(i: int, turn: int, judge: str) -> dict[str, float]:
    out = {c: 1.0 for c in SUBSCORE_COLUMNS}
    if judge == "judge-c":
        for c in EMPATHY[: i % 6]:
            out[c] = 0.5
    if judge == "judge-b" and turn == 2:
        out["persona_memory"] = 0.5
    return out


def build(data) -> dict:
    turns, verdicts, dscores = [], [], []
    cells = [(ENSEMBLE, POOL, i, JUDGES) for i in range(N)] + [(SOLO, POOL, i, JUDGES[:1]) for i in range(3)]
    cells += [(ENSEMBLE, OTHER_POOL, i, JUDGES) for i in range(2)]
    for target, pool, i, panel in cells:
        sid = seed(i) if pool == POOL else f"{pool}:q{i}"
        for turn in (1, 2):
            turns.append(dict(target=target, pool=pool, seed_id=sid, turn=turn, complete=True))
            for judge in panel:
                # dialogue 0, turn 1: judge-c's call failed; dialogue 1, turn 1: only judge-a answered
                failed = (i == 0 and turn == 1 and judge == "judge-c") or (i == 1 and turn == 1 and judge != "judge-a")
                failed = failed and pool == POOL and target == ENSEMBLE
                verdicts.append(
                    dict(
                        target=target,
                        pool=pool,
                        seed_id=sid,
                        turn=turn,
                        judge=judge,
                        **({c: None for c in SUBSCORE_COLUMNS} if failed else scores(i, turn, judge)),
                        rationale=None if failed else (HOSTILE if i == 5 else f"{judge} on {sid} turn {turn}"),
                        error="timeout: no reply" if failed else None,
                    )
                )
        dscores.append(
            dict(
                target=target,
                pool=pool,
                seed_id=sid,
                n_turns=2,
                n_judged_turns=2,
                n_failed_verdicts=0,
                n_failed_final_verdicts=0,
                judge_combine="mean",
            )
        )
    annotations = [
        dict(annotator="ann1", target=ENSEMBLE, pool=POOL, seed_id=seed(4), turn=2, dimension="empathy", score=3.5),
        dict(annotator="ann2", target=ENSEMBLE, pool=POOL, seed_id=seed(4), turn=2, dimension="empathy", score=4.5),
        dict(annotator="ann1", target=ENSEMBLE, pool=POOL, seed_id=seed(4), turn=2, dimension="persona", score=4.0),
    ]
    frames = {
        "dialogue.dialogue_turns": (turns, ["pool", "target"]),
        "dialogue.judge_verdicts": (verdicts, ["pool", "target"]),
        "dialogue.dialogue_scores": (dscores, ["pool", "target"]),
        "dialogue.human_annotations": (annotations, []),
    }
    for table, (rows, by) in frames.items():
        store_frame(data, table, pd.DataFrame(rows), partition_by=by, catalog=catalog())
    return frames


data, app = explorer_fixtures("explorer_judges", build)


def expected_order() -> list[tuple[str, int, float, float]]:
    """(seed, turn, Empathy spread, Persona spread) of every turn two or more judges answered, by hand, in the
    page's order: widest dimension spread first, then the widest sub-indicator spread, then seed and turn."""
    rows = []
    for i in range(N):
        for turn in (1, 2):
            if i == 1 and turn == 1:
                continue  # one judge answered
            empathy = 0.0 if (i == 0 and turn == 1) else 0.5 * (i % 6)  # judge-c failed there
            persona = 0.5 if turn == 2 else 0.0
            sub = 0.5 if (empathy or persona) else 0.0
            rows.append((seed(i), turn, empathy, persona, sub))
    rows.sort(key=lambda r: (-max(r[2], r[3]), -r[4], r[0], r[1]))
    return [r[:4] for r in rows]


def test_the_spreads_are_the_hand_computed_ones_in_order(data):
    found = judges.disagreements(wh(data), ENSEMBLE, POOL)
    want = expected_order()
    assert found.judges == list(JUDGES) and found.total == len(want) == 2 * N - 1
    assert (found.page, found.pages, len(found.rows)) == (1, 2, PAGE_SIZE)
    last = judges.disagreements(wh(data), ENSEMBLE, POOL, page=2)
    got = [(r["seed_id"], r["turn"], r["empathy"], r["persona"]) for r in found.rows + last.rows]
    assert got == [(s, t, pytest.approx(e), pytest.approx(p)) for s, t, e, p in want]
    top = found.rows[0]
    assert top["n_judges"] == 3 and top["anthropomorphic"] == 0.0 and top["largest_subscore"] == 0.5
    assert top["widest_subscore"] in EMPATHY
    # each judge's dimension sums and their mean on turn 2 of dialogue 5 (the second row: turn 1 sorts first)
    assert [(r["seed_id"], r["turn"]) for r in found.rows[:2]] == [(seed(5), 1), (seed(5), 2)]
    sums = {v["judge"]: v["dimensions"] for v in found.rows[1]["verdicts"]}
    assert sums["judge-a"] == {"empathy": 5.0, "persona": 5.0, "anthropomorphic": 5.0}
    assert sums["judge-b"]["persona"] == 4.5 and sums["judge-c"]["empathy"] == 2.5
    assert found.rows[1]["combined"]["empathy"] == pytest.approx(12.5 / 3)
    assert found.rows[1]["combined"]["persona"] == pytest.approx(14.5 / 3)
    assert top["human"] is None


def test_a_failed_verdict_is_left_out_and_a_one_judge_turn_is_not_listed(data):
    every = [r for n in (1, 2) for r in judges.disagreements(wh(data), ENSEMBLE, POOL, page=n).rows]
    row = next(r for r in every if (r["seed_id"], r["turn"]) == (seed(0), 1))
    assert row["n_judges"] == 2 and row["empathy"] == 0.0
    failed = next(v for v in row["verdicts"] if v["judge"] == "judge-c")
    assert failed["error"] == "timeout: no reply" and failed["dimensions"]["empathy"] is None
    assert (seed(1), 1) not in {(r["seed_id"], r["turn"]) for r in every}


def test_sorting_by_one_sub_indicator(data):
    found = judges.disagreements(wh(data), ENSEMBLE, POOL, sort="persona_memory")
    assert all(r["turn"] == 2 for r in found.rows[:N])  # every turn 2 spreads persona_memory by 0.5
    with pytest.raises(ValueError, match="unknown sort"):
        judges.disagreements(wh(data), ENSEMBLE, POOL, sort="1; DROP TABLE x")


def test_human_scores_stand_beside_the_judges_when_annotated(data):
    found = judges.disagreements(wh(data), ENSEMBLE, POOL, sort="persona")
    row = next(r for r in found.rows if (r["seed_id"], r["turn"]) == (seed(4), 2))
    assert found.has_human
    assert row["human"]["empathy"] == 4.0 and row["human"]["persona"] == 4.0 and row["human"]["anthropomorphic"] is None
    assert not judges.disagreements(wh(data), ENSEMBLE, OTHER_POOL).has_human


# -- the page ---------------------------------------------------------------------------------------------------


def page(app, **params) -> str:
    answer = get(app, "/judges?" + "&".join(f"{k}={quote(str(v))}" for k, v in params.items()))
    assert answer.status == 200, answer.text
    return answer.text


def listed(html: str) -> list[tuple[str, int]]:
    return [
        (s.replace("%3A", ":"), int(t)) for s, t in re.findall(r'href="/dialogue/[^/"]+/([^"#]+)#turn-(\d+)"', html)
    ]


def test_the_page_lists_the_turns_in_order_and_pages(app):
    want = [(s, t) for s, t, _, _ in expected_order()]
    first = page(app, target=ENSEMBLE, pool=POOL)
    assert listed(first) == want[:PAGE_SIZE] and "page 1 of 2" in first and "page=2" in first
    assert listed(page(app, target=ENSEMBLE, pool=POOL, page=2)) == want[PAGE_SIZE:]
    link = f'href="{dialogue_url(ENSEMBLE, seed(5))}#turn-2"'
    assert link in first


def test_the_human_column_is_there_only_when_the_cell_is_annotated(app):
    annotated = page(app, target=ENSEMBLE, pool=POOL, sort="persona")
    assert "<th>human (mean)</th>" in annotated and "empathy 4.00" in annotated
    assert "<th>human (mean)</th>" not in page(app, target=ENSEMBLE, pool=OTHER_POOL)
    assert "has no rows of this cell" in page(app, target=ENSEMBLE, pool=OTHER_POOL)


def test_one_judge_says_there_is_no_disagreement(app):
    html = page(app, target=SOLO, pool=POOL)
    assert "come from one judge (judge-a)" in html and "no disagreement to show" in html
    assert 'class="judges"' not in html


@pytest.mark.parametrize(
    "url, status",
    [
        (f"/judges?target=nobody&pool={POOL}", 404),
        (f"/judges?target={SOLO}&pool={OTHER_POOL}", 404),
        (f"/judges?target={ENSEMBLE}&pool={POOL}&sort=nope", 400),
        (f"/judges?target={ENSEMBLE}&pool={POOL}&page=two", 400),
    ],
)
def test_unknown_cells_and_bad_parameters(app, url, status):
    assert get(app, url).status == status


def test_a_rationale_is_shown_as_text_only(app):
    html = page(app, target=ENSEMBLE, pool=POOL)  # dialogue 5's turns are on the first page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and HOSTILE not in html
    tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", html)}
    assert not tags & {"script", "img", "iframe", "object", "embed", "svg"}
    assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)
