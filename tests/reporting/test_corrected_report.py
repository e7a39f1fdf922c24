"""The HTML report's judge-made numbers under correction (reporting/corrected_section.py): hand-made
dialogue.judge_corrected rows, one cell corrected and the others judge only; a warehouse without the table reports
as before; the section "Rankings under correction" from hand-made corrected_rank_intervals / corrected_pairwise."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from eyt_dagster.eyt_bench import shown_figures
from eyt_dagster.eyt_bench.taxonomy import NEMOTRON_POOL
from eyt_dagster.reporting import paper_tables as pt
from eyt_dagster.reporting.html_report import MARK_CSS, render_report
from eyt_dagster.reporting.report_sections import REPORT_TABLES, build_sections, leaderboard_with_intervals
from eyt_dagster.reporting.speech_sections import card_section

from support.corrected_data import judge_corrected, pair_row, rank_row

pytestmark = pytest.mark.unit

POOL = NEMOTRON_POOL
MODEL = "model-x"
HOSTILE = "<script>alert(1)</script>"  # a target id as a hostile slate could write it: shown as text only
LEGEND_H = "h: corrected with 12 human-labelled dialogues (prediction-powered, docs/eyt-metrics.md)"


def board() -> pd.DataFrame:
    rows = [
        {"target": MODEL, "empathy": 60.0, "ficr": 0.5, "is_baseline": False},
        {"target": HOSTILE, "empathy": 40.0, "ficr": 0.25, "is_baseline": False},
    ]
    return pd.DataFrame(
        [
            {
                "target": r["target"],
                "pool": POOL,
                "is_baseline": r["is_baseline"],
                "self_preference_risk": False,
                "n_dialogues": 20,
                "n_errors": 0,
                "explicit_acc": 0.75,
                "latent_acc": 0.5,
                "emotion_acc": 0.5,
                "drift": 0.25,
                "ficr": r["ficr"],
                "satisfaction": 70.0,
                "empathy": r["empathy"],
                "persona": 50.0,
                "anthropomorphic": 55.0,
            }
            for r in rows
        ]
    )


def intervals() -> pd.DataFrame:
    """Judge-only bootstrap intervals: the value +- 2 (0-100 scores), +- 0.02 (shares)."""
    rows = []
    for r in board().to_dict("records"):
        for metric in ("explicit_acc", *shown_figures.JUDGE_MADE):
            width = 0.02 if metric in ("ficr", "explicit_acc") else 2.0
            v = r[metric]
            rows.append(
                {
                    "target": r["target"],
                    "pool": POOL,
                    "metric": metric,
                    "value": v,
                    "ci_low": v - width,
                    "ci_high": v + width,
                }
            )
    return pd.DataFrame(rows)


def tables(**extra: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"leaderboard": board(), "leaderboard_intervals": intervals(), **extra}


def corrected_one() -> pd.DataFrame:
    """model-x's Empathy corrected (71.34 [65.5, 77.0] from 12 labelled dialogues); every other number judge only."""
    return judge_corrected(board().to_dict("records"), {(MODEL, POOL, "empathy"): (71.34, 65.5, 77.0, 12)})


def leaderboard_html(sections) -> str:
    found = next(s for s in sections if s.title == "Leaderboard")
    return render_report([found], title="t", generated_at="fixed", slate_yaml="", prompt_hashes={}, baseline_targets=[])


def cell(html: str, row: int, column: int) -> str:
    """The text of a body cell of the first table (0-based row and column), tags kept."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body)
    return re.findall(r"<td[^>]*>(.*?)</td>", rows[row])[column]


def column(html: str, name: str) -> int:
    head = html.split("<thead>", 1)[1].split("</thead>", 1)[0]
    return [h.split(" [95% CI]")[0] for h in re.findall(r"<th>(.*?)</th>", head)].index(name)


def test_the_corrected_cell_shows_its_figure_and_interval_with_the_h_marker():
    html = leaderboard_html(build_sections(tables(judge_corrected=corrected_one())))
    empathy = column(html, "empathy")
    title = "corrected with 12 human-labelled dialogues (prediction-powered, docs/eyt-metrics.md)"
    assert cell(html, 0, empathy) == f'71.3<sup class="mark h" title="{title}">h</sup> [65.5, 77.0]'
    # the other target's Empathy: the judge's figure and interval, marked j since the table mixes both
    assert cell(html, 1, empathy) == '40.0<sup class="mark j" title="judge only: no human labels">j</sup> [38.0, 42.0]'
    # every judge-made number says which it is; the accuracies are not the judge's and carry nothing
    ficr = column(html, "ficr")
    assert cell(html, 0, ficr).startswith('0.500<sup class="mark j"')
    assert "<sup" not in cell(html, 0, column(html, "explicit_acc"))
    assert LEGEND_H in html and "j: judge only" in html
    assert MARK_CSS.strip() in html


def test_the_plot_captions_say_which_cells_are_corrected():
    found = next(s for s in build_sections(tables(judge_corrected=corrected_one())) if s.title == "Leaderboard")
    assert [caption for caption, _ in found.images] == [
        "empathy with 95% intervals: 1 of 2 cells corrected (h in the table), the others judge only",
        "ficr with 95% intervals (judge only)",
    ]


def test_a_table_of_judge_only_figures_says_so_in_its_headers_and_legend_and_marks_no_number():
    only_judge = judge_corrected(board().to_dict("records"), {})
    html = leaderboard_html(build_sections(tables(judge_corrected=only_judge)))
    assert "<th>empathy (judge only) [95% CI]</th>" in html
    assert "<th>explicit_acc [95% CI]</th>" in html
    assert "<sup" not in html
    assert "are judge only: no cell has enough human-labelled dialogues" in html
    assert "`eyt annotate export`" in html
    assert cell(html, 0, column(html, "empathy (judge only)")) == "60 [58, 62]"  # whole numbers: no decimals, as before


def test_without_judge_corrected_the_report_is_what_it_was():
    plain = build_sections(tables())
    leaderboard = next(s for s in plain if s.title == "Leaderboard")
    pd.testing.assert_frame_equal(leaderboard.table, leaderboard_with_intervals(board(), intervals()))
    assert leaderboard.description == next(d for n, _, d in REPORT_TABLES if n == "leaderboard")
    assert (leaderboard.marks, leaderboard.labels) == ({}, {})
    assert [caption for caption, _ in leaderboard.images] == ["empathy with 95% intervals", "ficr with 95% intervals"]
    html = render_report(plain, title="t", generated_at="fixed", slate_yaml="", prompt_hashes={}, baseline_targets=[])
    assert "Rankings under correction" not in html and "sup.mark" not in html and "judge only" not in html
    # an empty table (written, no rows) reads as none
    empty = build_sections(tables(judge_corrected=corrected_one().iloc[0:0]))
    again = render_report(empty, title="t", generated_at="fixed", slate_yaml="", prompt_hashes={}, baseline_targets=[])
    assert again == html


def test_the_rankings_section_lists_each_changed_ranking_and_verdict_and_what_was_compared():
    both = judge_corrected(
        board().to_dict("records"),
        {(MODEL, POOL, "empathy"): (71.34, 65.5, 77.0, 12), (HOSTILE, POOL, "empathy"): (75.0, 70.0, 80.0, 12)},
    )
    ranks = pd.DataFrame([rank_row(POOL, "empathy", MODEL, 1, 2), rank_row(POOL, "empathy", HOSTILE, 2, 1)])
    pairs = pd.DataFrame([pair_row(POOL, "empathy", MODEL, HOSTILE, (20.0, 15.0, 25.0), (-3.66, -10.0, 2.7))])
    sections = build_sections(
        tables(
            judge_corrected=both,
            corrected_rank_intervals=ranks,
            corrected_pairwise=pairs,
            rank_intervals=pd.DataFrame(),
        )
    )
    titles = [s.title for s in sections]
    assert titles[titles.index("Ranks with intervals") + 1] == "Rankings under correction"
    html = render_report(
        sections, title="t", generated_at="fixed", slate_yaml="", prompt_hashes={}, baseline_targets=[]
    )
    text = html.split("Rankings under correction</h2>", 1)[1]
    esc = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"Compared: 1 of 5 pool x metric groups had every cell labelled ({POOL} x empathy)." in text
    assert (
        f"{POOL}, Empathy: model-x ranks 1st judged alone, 2nd corrected (human labels on 12 dialogues per cell)."
        in text
    )
    assert (
        f"{POOL}, Empathy: {esc} ranks 2nd judged alone, 1st corrected (human labels on 12 dialogues per cell)." in text
    )
    assert (
        f"{POOL}, Empathy, model-x against {esc}: judge only model-x better (difference 20.0 [15.0, 25.0]), "
        "corrected no clear difference (difference -3.7 [-10.0, 2.7])." in text
    )
    assert HOSTILE not in html


def test_with_no_group_labelled_throughout_the_rankings_are_the_judges_alone():
    sections = build_sections(tables(judge_corrected=corrected_one(), rank_intervals=pd.DataFrame()))
    found = next(s for s in sections if s.title == "Rankings under correction")
    assert found.table is None
    assert found.note == (
        "The rankings are the judge's alone: in none of the 5 pool x metric groups does every cell have enough "
        "human-labelled dialogues. Add labels with `eyt annotate export`."
    )


def test_the_model_cards_pool_the_corrected_figures_where_every_pool_is_corrected():
    """Empathy: both pools corrected, 60 (se 2, 30 dialogues) and 70 (se 4, 10 dialogues): pooled 0.75 x 60 +
    0.25 x 70 = 62.5, se sqrt((0.75 x 2)^2 + (0.25 x 4)^2) = sqrt(3.25). FICR: one pool judge only, so the card's
    own (judge-only) figure, marked j beside the corrected one."""
    cards = pd.DataFrame(
        {
            "target": [MODEL],
            "eyt_pooled_empathy": [75.0],
            "eyt_pooled_empathy_ci_low": [70.0],
            "eyt_pooled_empathy_ci_high": [80.0],
            "eyt_pooled_ficr": [0.5],
            "eyt_pooled_explicit_acc": [0.75],
        }
    )

    def cell(value: float, se: float, n: int, shown: str = "corrected") -> shown_figures.ShownFigure:
        return shown_figures.ShownFigure(
            value, value - 1.96 * se, value + 1.96 * se, shown, 12, "", se=se, n_dialogues=n
        )

    figures = {
        (MODEL, "a", "empathy"): cell(60.0, 2.0, 30),
        (MODEL, "b", "empathy"): cell(70.0, 4.0, 10),
        (MODEL, "a", "ficr"): cell(0.4, 0.05, 30),
        (MODEL, "b", "ficr"): cell(0.6, float("nan"), 10, "judge only"),
    }
    plain = card_section(cards)
    marked = card_section(cards, figures)
    row = marked.table.iloc[0]
    se = math.sqrt(3.25)
    assert row["eyt_pooled_empathy"] == pytest.approx(62.5)
    assert row["eyt_pooled_empathy_ci_low"] == pytest.approx(62.5 - 1.959964 * se, abs=1e-6)
    assert row["eyt_pooled_empathy_ci_high"] == pytest.approx(62.5 + 1.959964 * se, abs=1e-6)
    assert row["eyt_pooled_ficr"] == 0.5  # the card's own: not every pool is corrected
    assert marked.marks[(0, "eyt_pooled_empathy")][0] == "h" and marked.marks[(0, "eyt_pooled_ficr")][0] == "j"
    assert "not every pool" in marked.marks[(0, "eyt_pooled_ficr")][1]
    assert (0, "eyt_pooled_explicit_acc") not in marked.marks
    assert marked.labels["eyt_pooled_empathy"] == plain.labels["eyt_pooled_empathy"] == "EYT Empathy (0-100)"
    assert "corrected with 24 human-labelled dialogues" in marked.description and not plain.marks


def test_the_model_cards_say_judge_only_when_no_pool_is_corrected():
    cards = pd.DataFrame({"target": [MODEL], "eyt_pooled_empathy": [60.0], "eyt_pooled_explicit_acc": [0.75]})
    judge_only = {k: f for k, f in shown_figures.figures(corrected_one()).items() if not f.corrected and k[0] == MODEL}
    marked = card_section(cards, judge_only)
    assert marked.labels["eyt_pooled_empathy"] == "EYT Empathy (0-100) (judge only)" and not marked.marks
    assert marked.table.iloc[0]["eyt_pooled_empathy"] == 60.0


def paper_sources(**extra: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"dialogue.leaderboard": board(), "dialogue.leaderboard_intervals": intervals(), **extra}


def test_the_paper_tables_keep_the_judges_numbers_and_their_footnote_says_where_the_corrected_ones_are():
    before = pt.provenance(paper_sources(), slate="s", seed=1, code_version="v")
    after = pt.provenance(paper_sources(**{pt.CORRECTED_SOURCE: corrected_one()}), slate="s", seed=1, code_version="v")
    assert after[:-1] == before  # an older warehouse: the footnote as it was
    assert after[-1] == (
        "Empathy, Persona, Anthropomorphic, FICR and satisfaction are the judge's alone (judge only), as in the "
        "papers; 1 of 10 cell x metric figures are also corrected with human labels (prediction-powered, "
        "docs/eyt-metrics.md): dialogue.judge_corrected and the Leaderboard of `eyt report` show them."
    )
    subjective = next(
        t
        for t in pt.build_tables(paper_sources(**{pt.CORRECTED_SOURCE: corrected_one()}))
        if t.name == "eyt_subjective"
    )
    row = subjective.cells[subjective.cells["Model"] == MODEL].iloc[0]
    assert row["Nemo. Emp."] == "60.0 [58.0, 62.0]"  # the judge's, not the corrected 71.3
    only_judge = judge_corrected(board().to_dict("records"), {})
    line = pt.provenance(paper_sources(**{pt.CORRECTED_SOURCE: only_judge}), slate="s", seed=1, code_version="v")[-1]
    assert line.endswith("no cell has enough human-labelled dialogues to correct them (`eyt annotate export`).")


def test_the_trajectory_sections_ficr_and_satisfaction_follow_the_same_rule():
    trajectory = board()[
        ["target", "pool", "is_baseline", "self_preference_risk", "n_dialogues", "ficr", "satisfaction"]
    ]
    corrected = judge_corrected(board().to_dict("records"), {(MODEL, POOL, "ficr"): (0.625, 0.5, 0.75, 12)})
    sections = build_sections({"trajectory": trajectory, "judge_corrected": corrected})
    found = next(s for s in sections if s.title.startswith("Trajectory"))
    assert found.table is not None
    assert list(found.table["ficr"]) == [0.625, 0.25]  # model-x's corrected, the other's judge figure
    assert found.marks[(0, "ficr")][0] == "h" and found.marks[(1, "ficr")][0] == "j"
    assert found.marks[(0, "satisfaction")] == ("j", "judge only: no human labels")
