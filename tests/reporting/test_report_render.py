"""The PNG figures and the self-contained HTML report (pure functions: no Dagster, no DuckDB)."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from eyt_dagster.reporting import plots
from eyt_dagster.reporting.html_report import Section, render_report, render_table, write_report

pytestmark = pytest.mark.unit

PNG = b"\x89PNG\r\n\x1a\n"
DIMS = ("empathy", "persona", "anthropomorphic")
TARGETS = {"reflective-baseline": True, "model-x": False}


def turn_frame() -> pd.DataFrame:
    rows = [
        {"target": t, "pool": p, "dimension": d, "turn": k, "mean_score": 40 + 5 * k, "n": 10, "is_baseline": b}
        for t, b in TARGETS.items()
        for p in ("usa", "mem")
        for d in DIMS
        for k in range(1, 5)
    ]
    return pd.DataFrame(rows)


def alpha_frame() -> pd.DataFrame:
    rows = [
        {"target": t, "pool": "usa", "dimension": d, "alpha": a, "weighted": 50 + 30 * a, "is_baseline": b}
        for t, b in TARGETS.items()
        for d in DIMS
        for a in (0.0, 0.1, 0.5, 1.0)
    ]
    return pd.DataFrame(rows)


def interval_frame() -> pd.DataFrame:
    rows = [
        {"target": t, "pool": p, "metric": "empathy", "value": 60.0, "ci_low": 55.0, "ci_high": 66.0, "is_baseline": b}
        for t, b in TARGETS.items()
        for p in ("usa", "mem")
    ]
    rows.append(
        {
            "target": "model-x",
            "pool": "usa",
            "metric": "ficr",
            "value": 0.5,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "is_baseline": False,
        }
    )
    return pd.DataFrame(rows)


def pairwise_frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "pool": "usa",
                "metric": "empathy",
                "target_a": "model-x",
                "target_b": "reflective-baseline",
                "diff": 4.0,
                "ci_low": 1.0,
                "ci_high": 7.0,
                "excludes_zero": True,
            },
            {
                "pool": "mem",
                "metric": "empathy",
                "target_a": "model-x",
                "target_b": "reflective-baseline",
                "diff": 1.0,
                "ci_low": -2.0,
                "ci_high": 3.5,
                "excludes_zero": False,
            },
        ]
    )


@pytest.mark.parametrize(
    ("draw", "frame"),
    [
        (plots.turn_curves_png, turn_frame),
        (plots.alpha_sweep_png, alpha_frame),
        (lambda df: plots.interval_png(df, "empathy"), interval_frame),
        (lambda df: plots.pairwise_png(df, "empathy", baseline_targets={"reflective-baseline"}), pairwise_frame),
    ],
    ids=["turn_curves", "alpha_sweep", "interval", "pairwise"],
)
def test_plots_return_png_for_data_and_for_empty_input(draw, frame):
    full, empty = draw(frame()), draw(pd.DataFrame())
    assert full.startswith(PNG) and empty.startswith(PNG)
    assert len(full) > len(empty)


def test_interval_plot_of_an_absent_metric_is_a_placeholder():
    assert plots.interval_png(interval_frame(), "no-such-metric").startswith(PNG)
    assert plots.interval_png(interval_frame(), "ficr").startswith(PNG)  # NaN bounds draw no whisker


def test_png_markdown_round_trips():
    png = plots.turn_curves_png(pd.DataFrame())
    text = plots.png_markdown(png, "turn [curves]")
    match = re.fullmatch(r"!\[([^\]]*)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", text)
    assert match and match.group(1) == "turn (curves)"
    assert base64.b64decode(match.group(2)) == png


def test_table_merges_intervals_formats_numbers_and_escapes():
    table = pd.DataFrame(
        {
            "target": ["reflective-baseline", "<script>alert(1)</script>"],
            "empathy": [12.34, np.nan],
            "empathy_ci_low": [10.12, np.nan],
            "empathy_ci_high": [14.16, np.nan],
            "ficr": [0.5, 0.25],
            "n_dialogues": [65, 3],
            "self_preference_risk": [False, True],
        }
    )
    out = render_table(table, ["reflective-baseline"])
    assert "12.3 [10.1, 14.2]" in out and "\u2013 [\u2013, \u2013]" in out
    assert "empathy_ci_low" not in out and "0.500" in out and ">65<" in out
    assert "<script>" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert out.count('class="badge baseline"') == 1 and out.count('class="badge warn"') == 1


def test_pairwise_table_uses_bare_ci_columns_and_marks_both_sides():
    out = render_table(pairwise_frame(), ["reflective-baseline"])
    assert "4.0 [1.0, 7.0]" in out and out.count('class="badge baseline"') == 2


def test_report_is_self_contained_with_banner_badges_and_provenance(tmp_path):
    sections = [
        Section(
            "Leaderboard",
            "Headline <metrics> & more.",
            interval_frame().drop(columns="metric"),
            [("warm-up", plots.turn_curves_png(pd.DataFrame()))],
            note="Caller note: see https://example.org",
        ),
        Section("No table", "Text only."),
    ]
    slate = "seed: 20260521\ntargets:\n  - id: reflective-baseline  # <b>not bold</b>\n"
    page = render_report(
        sections,
        title="EYT report",
        generated_at="2026-05-21T10:00:00Z",
        slate_yaml=slate,
        prompt_hashes={"judge": "abc123"},
        baseline_targets=["reflective-baseline"],
    )
    assert 'class="banner"' in page and "not evaluations of a language model" in page
    assert 'reflective-baseline<span class="badge baseline">baseline</span>' in page
    assert "60.0 [55.0, 66.0]" in page and "data:image/png;base64," in page
    assert "Headline &lt;metrics&gt; &amp; more." in page and "&lt;b&gt;not bold&lt;/b&gt;" in page
    assert "seed: 20260521" in page and "abc123" in page and "2026-05-21T10:00:00Z" in page
    assert "<script" not in page.lower() and not re.search(r"(href|src)=\"(?!#|data:)", page)
    assert page.replace("see https://example.org", "").count("http") == 0
    path = write_report(tmp_path / "out" / "report.html", page)
    assert path.read_text(encoding="utf-8") == page


def test_no_banner_without_baselines():
    page = render_report([], title="t", generated_at="now", slate_yaml="", prompt_hashes={}, baseline_targets=[])
    assert 'class="banner"' not in page


def test_the_pairwise_figure_draws_a_pools_largest_differences_at_many_targets():
    import itertools

    targets = [f"t{i:03d}" for i in range(100)]
    rows = [
        {
            "pool": "usa",
            "metric": "empathy",
            "target_a": a,
            "target_b": b,
            "diff": float(i % 97) - 48,
            "ci_low": -60.0,
            "ci_high": 60.0,
            "excludes_zero": False,
        }
        for i, (a, b) in enumerate(itertools.combinations(targets, 2))
    ]
    frame = pd.DataFrame(rows)
    shown = plots.pairs_shown(frame)
    assert len(shown) == plots.MAX_PAIRS_SHOWN and shown["diff"].abs().min() >= 47  # the largest |diff| only
    small = plots.pairs_shown(frame.head(10))
    assert len(small) == 10  # a pool with few pairs: all of them
    assert plots.pairwise_png(frame, "empathy").startswith(PNG)  # its cost: bench/reports_scale.py
