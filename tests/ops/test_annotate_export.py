"""`eyt annotate export` through `eyt`'s entry point, on the explorer tests' small hand-made warehouse (a chat target
with 60 finished dialogues, a baseline with the first 12 of its ChatSEEDs, one pool; dialogue 0 carries hostile
text in every field a model writes): the sheet's rows, the manifest against the warehouse, blind and escaped pages,
the same sheet again from the same arguments, and the refusals."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pandas as pd
import pytest

from eyt_dagster.eyt_bench.annotation_sheet import SHEET_COLUMNS, dialogue_digest, parse_manifest
from eyt_dagster.ops import cli
from eyt_dagster.table_registry import catalog
from resources.storage.warehouse import prepare

from support.explorer_data import BASELINE, HOSTILE, N_BASELINE, POOL, TARGET, build, seed_id
from support.slates import remote, write_slate

pytestmark = pytest.mark.cli


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The hand-made warehouse, a slate naming its two targets and its pool, and the environment `eyt` reads."""
    root = tmp_path_factory.mktemp("annotate")
    data = root / "data"
    data.mkdir()
    frames = build(data)
    prepare(data / "eyt.duckdb", catalog())  # the views `eyt run` leaves behind
    slate = write_slate(
        root,
        targets=[
            remote(TARGET, "http://127.0.0.1:9/v1"),
            {"id": BASELINE, "provider": "embedded", "model": "terse", "family": "eyt-baseline-target"},
        ],
        pools={POOL: {"source": "fixture"}},
        seed=7,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EYT_DATA_DIR", str(data))
        mp.setenv("EYT_SLATE", str(slate))
        mp.delenv("DAGSTER_HOME", raising=False)
        yield root, data, frames


@pytest.fixture(scope="module")
def everything(env):
    """Every ChatSEED both targets finished (asked for more than there are), prefilled for annotator 'ann'."""
    root, _, frames = env
    out = root / "all"
    code, printed = export(["--per-cell", "20", "--annotator", "ann", "--out", str(out)])
    assert code == 0, printed
    return out, printed, frames


def export(args: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main(["annotate", "export", *args])
    return code, stdout.getvalue() + stderr.getvalue()


def sheet(out: Path) -> list[dict[str, str]]:
    with (out / "sheet.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == SHEET_COLUMNS
        return list(reader)


def pages(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.html"))}


def test_the_sample_is_every_chatseed_both_targets_finished(everything):
    out, printed, frames = everything
    manifest = parse_manifest((out / "manifest.json").read_text())
    both = [seed_id(i) for i in range(N_BASELINE)]  # the baseline played ChatSEEDs 0-11, the chat target 0-59
    assert sorted((i.target, i.seed_id) for i in manifest.items) == sorted(
        (t, s) for t in (TARGET, BASELINE) for s in both
    )
    assert {i.pool for i in manifest.items} == {POOL}
    assert [i.item for i in manifest.items] == [f"i{n:03d}" for n in range(1, 25)]
    assert (manifest.seed, manifest.per_cell, manifest.slate) == (7, 20, "embedded-baselines")
    assert f"sheet {manifest.sheet}: 24 item(s), 71 row(s)" in printed
    assert f"{POOL}: 24 dialogue(s), 12 ChatSEED(s) x 2 target(s); only 12 ChatSEED(s)" in printed
    assert "eyt annotate import" in printed
    # each item's turns and digest, from the warehouse's own rows
    turns = pd.DataFrame(frames["dialogue.dialogue_turns"])
    for item in manifest.items:
        own = turns[(turns["target"] == item.target) & (turns["seed_id"] == item.seed_id)]
        assert item.digest == dialogue_digest(own.to_dict("records"))
        # the chat target's turn-1 verdict on dialogue 5 failed: only turn 2 was judged
        assert item.turns == ((2,) if (item.target, item.seed_id) == (TARGET, seed_id(5)) else (1, 2))
    saved = Path(out).parents[0] / "data" / "annotations" / "sheets" / f"{manifest.sheet}.json"
    assert saved.read_text() == (out / "manifest.json").read_text()


def test_the_sheet_has_a_row_per_judged_turn_and_one_per_dialogue(everything):
    out, _, _ = everything
    manifest = parse_manifest((out / "manifest.json").read_text())
    rows = sheet(out)
    assert len(rows) == 24 + 2 * 24 - 1  # a final row per item, two turns each but one
    assert {r["sheet"] for r in rows} == {manifest.sheet}
    assert {r["annotator"] for r in rows} == {"ann"}
    assert all(r[c] == "" for r in rows for c in SHEET_COLUMNS[4:])
    by_item = {i.item: i for i in manifest.items}
    listed: dict[str, list[str]] = {}
    for r in rows:
        listed.setdefault(r["item"], []).append(r["turn"])
    assert listed == {k: [*map(str, i.turns), "final"] for k, i in by_item.items()}


def test_the_pages_are_blind_and_show_no_judge_output(everything):
    out, _, frames = everything
    written = pages(out)
    assert len(written) == 25 and "index.html" in written
    rationales = {
        str(r["rationale"]) for r in frames["dialogue.judge_verdicts"] + frames["dialogue.final_intent_verdicts"]
    } - {HOSTILE, "None"}
    assert len(rationales) > 50
    for name, html in written.items():
        for secret in (TARGET, BASELINE, POOL, "judge-a", "judge-model", *rationales):
            assert secret not in html, (name, secret)
    index = written["index.html"]
    links = re.findall(r'href="([^"]+)"', index)
    assert links == [f"items/i{n:03d}.html" for n in range(1, 25)]
    assert all((out / link).is_file() for link in links)
    for name, html in written.items():  # relative links only, to files of the export; no script
        assert "<script" not in html
        for link in re.findall(r'href="([^"]+)"', html):
            assert (out / name).parent.joinpath(link).resolve().is_file(), (name, link)


def test_an_item_page_shows_what_the_judge_saw_escaped(everything):
    out, _, _ = everything
    manifest = parse_manifest((out / "manifest.json").read_text())
    hostile = next(i for i in manifest.items if i.seed_id == seed_id(0) and i.target == TARGET)
    html = (out / "items" / f"{hostile.item}.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<img src=x" not in html
    assert 'href="javascript' not in html
    plain = next(i for i in manifest.items if i.seed_id == seed_id(3) and i.target == BASELINE)
    html = (out / "items" / f"{plain.item}.html").read_text()
    for text in (
        "persona of dialogue 3",
        "final intent of dialogue 3",
        "first query of dialogue 3",
        "reply 2 of dialogue 3",
    ):
        assert text in html
    assert "[turn 2] Assistant:" in html  # the transcript as the judge's prompt labels it
    assert "notices the feeling the user expresses or implies" in html  # the rubric, from the judge's prompt
    assert f"Row <code>{plain.item}</code>, turn <code>final</code>" in html


def test_the_same_arguments_give_the_same_sheet(env, everything):
    root, _, _ = env
    out, _, _ = everything
    again = root / "again"
    code, printed = export(["--per-cell", "20", "--annotator", "ann", "--out", str(again)])
    assert code == 0, printed
    for name in ("sheet.csv", "manifest.json"):
        assert (again / name).read_bytes() == (out / name).read_bytes()
    assert pages(again) == pages(out)


def test_a_sample_of_one_target_and_the_default_folder(env):
    _, data, _ = env
    code, printed = export(["--target", TARGET, "--per-cell", "5", "--seed", "3"])
    assert code == 0, printed
    manifest = parse_manifest(next((data / "annotations").glob("export-s3-*/manifest.json")).read_text())
    assert manifest.sheet.startswith("s3-") and len(manifest.items) == 5
    assert {i.target for i in manifest.items} == {TARGET}
    out = data / "annotations" / f"export-{manifest.sheet}"
    assert f"wrote {out / 'sheet.csv'}" in printed
    # again, unfilled: the same files again, nothing to lose
    before = (out / "sheet.csv").read_bytes()
    code, printed = export(["--target", TARGET, "--per-cell", "5", "--seed", "3"])
    assert code == 0, printed
    assert (out / "sheet.csv").read_bytes() == before
    # once someone has filled it in there, it is refused without --force and written again with it
    filled = before.replace(b",,,,,,,\n", b",ann,3,,,,,\n", 1)
    assert filled != before
    (out / "sheet.csv").write_bytes(filled)
    code, printed = export(["--target", TARGET, "--per-cell", "5", "--seed", "3"])
    assert code == 2 and f"holds sheet {manifest.sheet} already" in printed and "--force" in printed
    assert (out / "sheet.csv").read_bytes() == filled
    code, printed = export(["--target", TARGET, "--per-cell", "5", "--seed", "3", "--force"])
    assert code == 0, printed
    assert (out / "sheet.csv").read_bytes() == before


def test_refusals(env, tmp_path, monkeypatch):
    code, printed = export(["--target", "ghost"])
    assert code == 2 and "ghost" in printed
    code, printed = export(["--pool", "cped"])
    assert code == 2 and "cped" in printed
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("EYT_DATA_DIR", str(empty))
    code, printed = export([])
    assert code == 2 and "no warehouse at" in printed and "eyt run" in printed
    prepare(empty / "eyt.duckdb", catalog())
    code, printed = export([])
    assert code == 2 and "no dialogue to sample" in printed
    assert not (empty / "annotations").exists()
