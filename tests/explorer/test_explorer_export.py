"""`eyt view --export`: the static copy of a selection of the explorer, written from the small hand-made warehouse
(tests/support/explorer_data.py) and read back as files: which pages it holds, that every link and clip in every page
resolves to a file of the export (relative, no server path, no other site), that pages outside the selection are
plain text and targets outside it are not named, that model text stays escaped, the clear refusals, and file
names safe for any id."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest
from markupsafe import escape

from eyt_dagster.explorer import export_html, export_links, pairs
from eyt_dagster.explorer.app import dialogue_url
from eyt_dagster.explorer.export import MARKER, ExportError, export
from eyt_dagster.explorer.export_selection import SelectionError
from eyt_dagster.ops import cli
from eyt_dagster.speech_eq.vocabulary import SUBSCALES

from support.asgi_get import get
from support.explorer_data import BASELINE, HOSTILE, N_BASELINE, N_FINISHED, POOL, TARGET, build, seed_id
from support.explorer_explain_data import ASR_HOSTILE, E1, E2, VOICE_TARGET, build_explain, store
from support.explorer_explain_data import POOL as EXPLAINED_POOL
from support.explorer_explain_data import TARGET as EXPLAINED_TARGET
from support.explorer_fixtures import explorer_fixtures
from support.explorer_speech_data import (
    DISSONANT,
    ITEM,
    N_ITEMS,
    REASONING_HOSTILE,
    RESONANT,
    SPEECH_BASELINE,
    SPEECH_MODEL_B,
    SPEECH_TARGET,
)

data, app = explorer_fixtures("export", build)
SAFE_NAME = re.compile(r"^[a-z0-9._/-]+$")


@pytest.fixture(scope="module")
def two_targets(data, tmp_path_factory):
    """The export of the chat target and the baseline (every pool)."""
    out = tmp_path_factory.mktemp("export") / "review"
    return out, export(data[0], out, [TARGET, BASELINE])


@pytest.fixture(scope="module")
def speech_pick(data, tmp_path_factory):
    """The baseline and one SpeechEQ target, written with --force over an earlier export."""
    out = tmp_path_factory.mktemp("export") / "speech"
    out.mkdir()
    (out / MARKER).write_text("{}")
    (out / "stale.html").write_text("from the earlier export")
    return out, export(data[0], out, [BASELINE, SPEECH_TARGET], [POOL], force=True)


def pages(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.html"))}


class Attributes(HTMLParser):
    """Every (tag, attribute, value) of a page, and the ids it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.anchors: list[tuple[str | None, str]] = []  # (href, text) of each <a>
        self._open: list[list] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            self.found.append((tag, k, v or ""))
            if k == "id":
                self.ids.add(v or "")
        if tag == "a":
            self._open.append([dict(attrs).get("href"), ""])

    def handle_data(self, text):
        for a in self._open:
            a[1] += text

    def handle_endtag(self, tag):
        if tag == "a" and self._open:
            self.anchors.append(tuple(self._open.pop()))


def parsed(html: str) -> Attributes:
    parser = Attributes()
    parser.feed(html)
    parser.close()
    return parser


def page_of(out: Path, prefix: str) -> tuple[str, str]:
    found = [(name, html) for name, html in pages(out).items() if name.startswith(prefix)]
    assert len(found) == 1, [n for n, _ in found]
    return found[0]


def call_keys(app, target: str, seed: str) -> set[str]:
    return set(re.findall(r'href="/call/([0-9a-f]{64})(?:\?prompt=[^"]+)?"', get(app, dialogue_url(target, seed)).text))


# -- what is written --------------------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_export_holds_the_selection_s_pages(app, two_targets):
    out, written = two_targets
    names = list(pages(out))
    count = {kind: sum(n.startswith(kind + "/") for n in names) for kind in ("cells", "dialogues", "judges")}
    assert count == {"cells": 2 + 1, "dialogues": N_FINISHED + 1 + N_BASELINE, "judges": 2}
    assert "index.html" in names and (out / "explorer.css").is_file()
    # side by side on each of the 12 ChatSEEDs both played; paired differences by every metric
    assert sum(n.startswith("compare/") for n in names) == N_BASELINE
    assert sum(n.startswith("pairs/") for n in names) == len(pairs.METRICS)
    assert sum(n.startswith("speech/items-") for n in names) == 2
    assert sum(n.startswith("speech/item-") for n in names) == N_ITEMS
    # the calls the chat target's dialogues link (the call cache holds those of dialogues 0-2), each once
    linked = set().union(*(call_keys(app, TARGET, seed_id(i)) for i in range(3)))
    assert len(linked) >= 20 and sum(n.startswith("calls/") for n in names) == len(linked)
    manifest = json.loads((out / MARKER).read_text())
    assert manifest["targets"] == [TARGET, BASELINE] and manifest["all_pools"] and manifest["pools"] == [POOL]
    assert manifest["data_dir"] == "data" and sum(manifest["pages"].values()) == len(names)
    assert written.summary().endswith(f"open {out / 'index.html'}")
    assert f"{len(names)} pages" in written.summary() and f"{written.bytes:,} bytes" in written.summary()
    assert written.bytes == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


@pytest.mark.unit
def test_every_link_and_clip_resolves_to_a_file_of_the_export(two_targets):
    out, _ = two_targets
    checked = 0
    for name, html in pages(out).items():
        page = parsed(html)
        assert not [f for f in page.found if f[0] in ("form", "input", "select", "button", "script")], name
        for _, attribute, value in page.found:
            if attribute not in export_html.URL_ATTRIBUTES:
                continue
            assert not value.startswith(("/", "http", "javascript:", "data:", "file:")), (name, value)
            parts = urlsplit(value)
            assert not parts.scheme and not parts.netloc, (name, value)
            target = (out / name).parent / unquote(parts.path) if parts.path else out / name
            assert target.resolve().is_relative_to(out.resolve()) and target.is_file(), (name, value)
            if parts.fragment:
                assert parts.fragment in parsed(target.read_text()).ids, (name, value)
            checked += 1
        policy = [v for t, k, v in page.found if t == "meta" and k == "content" and "default-src" in v]
        assert policy == [
            "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; font-src 'self'; form-action 'none'"
        ]
        assert ("link", "href", "../explorer.css" if "/" in name else "explorer.css") in page.found, name
    assert checked > 1000


@pytest.mark.unit
def test_links_to_pages_outside_the_selection_are_plain_text(two_targets):
    out, _ = two_targets
    index = (out / "index.html").read_text()
    links = dict((text, href) for href, text in parsed(index).anchors)
    assert links["60"].startswith("cells/chat-target-") and links["12"].startswith("cells/rule-baseline-")
    # the other leaderboard numbers open sorted variants, which the export does not hold
    board = index.split('<table class="board">')[1].split("</table>")[0]
    assert board.count('<span class="not-exported" title="not in this export">') == 2 * 12
    assert '<span class="not-exported" title="not in this export">Running now</span>' in index  # a live page
    assert "Paired differences in this export" in index and "<form" not in index
    cell = (out / export_links.file_name(("dialogues", TARGET, POOL, "seed_id", "", "", 2))).read_text()
    assert "previous" in dict((t, h) for h, t in parsed(cell).anchors)  # page 2 links page 1
    assert "This static export is a fixed selection: the filter by failure kind is left out" in cell
    for name, html in pages(out).items():
        for href, text in parsed(html).anchors:
            assert href is not None, (name, text)  # a link without a page became a span, not a dead <a>
        assert SPEECH_TARGET not in html and SPEECH_BASELINE not in html, name  # not selected: not named at all
        assert "A static export of the data directory <code>data</code>" in html


@pytest.mark.unit
def test_the_data_directory_is_named_not_its_path(data, two_targets):
    out, _ = two_targets
    for name, html in pages(out).items():
        assert str(data[0]) not in html and str(data[0].parent) not in html, name
    assert str(data[0].parent) not in (out / MARKER).read_text()


@pytest.mark.unit
def test_model_text_stays_escaped_in_the_export(two_targets):
    out, _ = two_targets
    _, dialogue = page_of(out, f"dialogues/chat-target-{export_links.slug(seed_id(0))}-")
    _, compare = page_of(out, f"compare/{export_links.slug(seed_id(0))}-")
    assert dialogue.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8
    assert "&lt;img src=x onerror=alert(1)&gt;" in dialogue and "[x](javascript:alert(1))" in dialogue
    assert compare.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4
    for name, html in pages(out).items():
        tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", html)}
        assert not tags & {"script", "img", "iframe", "object", "embed", "svg"}, (name, tags)
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I)
        assert not re.search(r"\son[a-z]+\s*=", html.replace("onerror=alert(1)&gt;", ""), re.I), name
        assert HOSTILE not in html


@pytest.mark.unit
def test_a_speech_item_shows_the_selected_targets_choices_and_plays_copied_clips(data, speech_pick):
    out, written = speech_pick
    assert not (out / "stale.html").exists()  # --force replaced the earlier export whole
    _, item = page_of(out, f"speech/item-{export_links.slug(ITEM, 80)}-")
    assert f"<h3>{SPEECH_TARGET}</h3>" in item and SPEECH_BASELINE not in item
    assert item.count("&lt;script&gt;alert(3)&lt;/script&gt;") == 3 and REASONING_HOSTILE not in item
    sources = [v for t, k, v in parsed(item).found if t == "audio" and k == "src"]
    assert len(sources) == 4 and all(s.startswith("../clips/") for s in sources)
    copied = {(out / "speech" / s).resolve().read_bytes() for s in sources}
    assert copied == {(data[0] / RESONANT).read_bytes(), (data[0] / DISSONANT).read_bytes()}
    assert sorted(p.suffix for p in (out / "clips").iterdir()) == [".wav", ".wav"] and written.clips == 2
    for html in pages(out).values():  # one EYT target selected: no side by side, and the other is not named
        assert TARGET not in html and 'href="../compare/' not in html
    assert not any(n.startswith(("compare/", "pairs/")) for n in pages(out))
    # the item list, and the selected SpeechEQ target's choices counted per item (both lists, every page)
    counted = [h for n, h in pages(out).items() if n.startswith(f"speech/items-{SPEECH_TARGET}-")]
    assert len(counted) == 2 and all(f"count the choices of <strong>{SPEECH_TARGET}</strong>" in h for h in counted)
    assert sum(n.startswith("speech/items-") for n in pages(out)) == 4


@pytest.mark.unit
def test_the_seq_pages_are_exported_and_the_navigation_reaches_them(speech_pick):
    out, written = speech_pick
    exported = pages(out)
    board_name, board = page_of(out, "seq/leaderboard-")
    subscales = {n: h for n, h in exported.items() if n.startswith("seq/") and n != board_name}
    assert len(subscales) == len(SUBSCALES) == written.pages["seq_subscale"] and written.pages["seq"] == 1
    for name, html in exported.items():  # the navigation's "SEQ leaderboard" opens the exported leaderboard
        nav = html.split("<header>", 1)[1].split("</header>", 1)[0]
        links = dict((text, href) for href, text in parsed(nav).anchors)
        assert (out / name).parent.joinpath(unquote(links["SEQ leaderboard"])).resolve() == (out / board_name).resolve()
    # the leaderboard: the selected SpeechEQ target, the chance row, the cohort member not selected left unnamed
    main = board.split("</header>", 1)[1]
    assert f'<span class="not-exported" title="not in this export">{SPEECH_TARGET}</span>' in main  # its choices
    assert SPEECH_TARGET in board and '<tr class="chance">' in board and SPEECH_MODEL_B not in board
    assert f"({SPEECH_TARGET} and 1 target(s) not shown here)" in board
    assert "This static export is a fixed selection: the choice of persona condition is left out" in board
    linked = [h for h, _ in parsed(main).anchors if h and not h.startswith(("../", "leaderboard-"))]
    assert len(linked) == len(SUBSCALES) and all((out / "seq" / unquote(h)).is_file() for h in linked)
    _, empathy = page_of(out, "seq/interpersonal-empathy-")
    back = dict((t, h) for h, t in parsed(empathy).anchors)["the SEQ leaderboard"]
    assert (out / "seq" / unquote(back)).resolve() == (out / board_name).resolve()
    # SEQ is explained only where its whole cohort is read: under the persona condition (the chat target alone, SEQ
    # 100), not under the default one, whose cohort has a target not selected
    seq = [v for html in exported.values() for v in re.findall(r"SEQ \(Eq. 2-3\) = <strong>([^<]+)<", html)]
    assert seq and set(seq) == {"100"}
    assert not any(SPEECH_MODEL_B in html for html in exported.values())


@pytest.mark.unit
def test_the_seq_pages_keys_and_files():
    key = export_links.page_key
    assert key("/seq")[0] == key("/seq?condition=default")[0] == export_links.SEQ
    assert key("/seq?condition=default&sort=acc1")[0] == ("variant", "/seq")
    slug = "interpersonal_empathy"
    assert key(f"/seq/subscale/{slug}")[0] == key(f"/seq/subscale/{slug}?condition=default")[0]
    assert key(f"/seq/subscale/{slug}?condition=persona")[0] == ("seq_subscale", slug, "persona")
    assert key("/seq/subscale/no_such_subscale")[0] is None
    assert key("/speech/item/x?condition=persona")[0] == ("speech_item", "x")  # the page shows every condition
    for k in (export_links.SEQ, ("seq", "persona"), ("seq_subscale", slug, "default"), ("seq_subscale", slug, "p")):
        assert SAFE_NAME.match(export_links.file_name(k)) and key(export_links.page_url(k, []))[0] == k


@pytest.fixture(scope="module")
def voiced(tmp_path_factory):
    """The spoken EYT-Bench's target alone, exported from a warehouse the pipeline's functions wrote
    (support/explorer_explain_data.py: its e1 and e2 voiced, e1's first transcript hostile), e1's first user turn
    with a clip."""
    data = tmp_path_factory.mktemp("export-voice") / "data"
    data.mkdir()
    frames = build_explain(data)
    turns = frames["voice.voiced_turns"]
    clip = data / VOICE_CLIP
    clip.parent.mkdir(parents=True)
    clip.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    first = (turns["seed_id"] == E1) & (turns["turn"] == 1)
    store(data, "voice.voiced_turns", turns.assign(clip_path=turns["clip_path"].mask(first, VOICE_CLIP)))
    out = tmp_path_factory.mktemp("export") / "voice"
    return data, out, export(data, out, [VOICE_TARGET])


VOICE_CLIP = "audio/voice/e1-turn-1.wav"


@pytest.mark.unit
def test_the_voice_pages_are_exported_their_links_resolve_and_model_text_stays_text(voiced):
    data, out, written = voiced
    exported = pages(out)
    # the report, the one voice cell's dialogues, its two scored dialogues (e3 did not finish: no page links it)
    voice = sorted(n for n in exported if n.startswith("voice/"))
    assert voice == sorted(
        [
            "voice/report.html",
            export_links.file_name(("voice", VOICE_TARGET, EXPLAINED_POOL)),
            *(export_links.file_name(("voice_dialogue", VOICE_TARGET, s)) for s in (E1, E2)),
        ]
    )
    assert written.pages["voice"] == 2 and written.pages["voice_dialogue"] == 2
    for name, html in exported.items():  # the navigation's "Spoken EYT" opens the exported report
        nav = html.split("<header>", 1)[1].split("</header>", 1)[0]
        links = dict((text, href) for href, text in parsed(nav).anchors)
        assert (out / name).parent.joinpath(unquote(links["Spoken EYT"])).resolve() == (
            out / "voice/report.html"
        ).resolve()
    for name in voice:  # every link and clip of the voice pages is a file of the export
        page = parsed(exported[name])
        for _, attribute, value in page.found:
            if attribute in export_html.URL_ATTRIBUTES and not value.startswith("#"):
                assert not value.startswith(("/", "http", "javascript:")), (name, value)
                assert ((out / name).parent / unquote(urlsplit(value).path)).resolve().is_file(), (name, value)
    report = parsed(exported["voice/report.html"])
    cell_name = export_links.file_name(("voice", VOICE_TARGET, EXPLAINED_POOL))
    assert {h for h, t in report.anchors if t == VOICE_TARGET} == {cell_name.split("/", 1)[1]}
    cell = parsed(exported[cell_name])
    opened = {unquote(h) for h, _ in cell.anchors if h and h.startswith("dialogues/")}
    assert opened == {export_links.file_name(("voice_dialogue", VOICE_TARGET, s))[len("voice/") :] for s in (E1, E2)}
    e1 = exported[export_links.file_name(("voice_dialogue", VOICE_TARGET, E1))]
    sources = [v for t, k, v in parsed(e1).found if t == "audio" and k == "src"]
    assert len(sources) == 1 and written.clips == 1
    assert (out / "voice/dialogues" / unquote(sources[0])).resolve().read_bytes() == (data / VOICE_CLIP).read_bytes()
    # each mode's five numbers keep their arithmetic: heard, e1's judges split on completion (a tie: no); read, yes
    assert e1.count('<details class="explain">') == 10
    completed = re.findall(r"final intent completed \(majority of the judges\) = <strong>(\w+)</strong>", e1)
    assert completed == ["no", "yes"]
    # model text: the cascade's hostile transcript is text on e1's page; nothing hostile runs anywhere
    assert str(escape(ASR_HOSTILE)) in e1
    for name, html in exported.items():
        assert HOSTILE not in html and ASR_HOSTILE not in html, name
        tags = {t.lower() for t in re.findall(r"<\s*([a-zA-Z]+)", html)}
        assert not tags & {"script", "img", "iframe", "object", "embed", "svg"}, (name, tags)
        assert EXPLAINED_TARGET not in html, name  # the EYT-Bench target was not selected: not named


@pytest.mark.unit
def test_the_voice_pages_keys_and_files():
    key = export_links.page_key
    assert key("/voice")[0] == key("/voice?target=&pool=")[0] == export_links.VOICE
    assert key("/voice?target=t&pool=p")[0] == ("voice", "t", "p")
    assert key("/voice?target=t")[0] == ("variant", "/voice") == key("/voice?target=t&pool=p&sort=x")[0]
    plain = key("/voice/dialogue/a%2Fb/p%3Ae1")[0]
    assert plain == ("voice_dialogue", "a/b", "p:e1") == key("/voice/dialogue/a%2Fb/p%3Ae1?explain=voice_empathy")[0]
    assert key("/voice/dialogue/a/p%3Ae1?page=2")[0] is None
    for k in (export_links.VOICE, ("voice", "t", "p"), plain):
        assert SAFE_NAME.match(export_links.file_name(k)) and key(export_links.page_url(k, []))[0] == k


# -- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.cli
def test_an_unknown_target_or_pool_is_named_with_the_known_ones(data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "never"
    with pytest.raises(SelectionError) as refused:
        export(data[0], out, [TARGET, "no-such-target"])
    message = str(refused.value)
    assert "unknown target 'no-such-target'" in message
    assert all(f"'{t}'" in message for t in (TARGET, BASELINE, SPEECH_TARGET, SPEECH_BASELINE))
    with pytest.raises(SelectionError, match=f"unknown pool 'mars'; the warehouse's pools are '{POOL}'"):
        export(data[0], out, [], ["mars"])
    monkeypatch.setenv("EYT_DATA_DIR", str(data[0]))
    assert cli.main(["view", "--export", str(out), "--target", "ghost"]) == 2
    assert "eyt view --export: unknown target 'ghost'; the warehouse's targets are" in capsys.readouterr().err
    assert cli.main(["view", "--target", TARGET]) == 2  # a selection without --export
    assert "--export DIR" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.unit
def test_a_folder_holding_anything_but_an_earlier_export_is_refused(data, tmp_path):
    kept = tmp_path / "notes"
    kept.mkdir()
    (kept / "mine.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(ExportError, match="holds no earlier export"):
            export(data[0], kept, [BASELINE], force=force)
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / MARKER).write_text("{}")
    with pytest.raises(ExportError, match="pass --force"):
        export(data[0], earlier, [BASELINE])
    with pytest.raises(ExportError, match="holds the data directory"):
        export(data[0], data[0].parent, [BASELINE], force=True)
    assert (kept / "mine.txt").read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == [
        "earlier",
        "notes",
    ]


# -- names and links --------------------------------------------------------------------------------------------

ODD_IDS = ["org/model:v1.5", "Model A", "model a", "..", "Émotion-模型", "x" * 300, "a%2Fb", "a/b", "", "p?q#r&s"]


@pytest.mark.unit
def test_file_names_are_safe_and_distinct_for_any_id():
    keys = []
    for target in ODD_IDS:
        keys += [
            ("dialogue", target, f"pool:{target}"),
            ("dialogues", target, "pool one", "seed_id", "", "", 2),
            ("judges", target, "pool", "largest", 1),
            ("speech_item", target),
            ("call", target),
            ("compare", target, tuple(sorted((target, "other")))),
            ("pairs", "pool", target, "other", "empathy", 1),
            ("voice", f"t{target}", f"pool {target}"),
            ("voice_dialogue", target, f"pool:{target}"),
        ]
    names = [export_links.file_name(k) for k in keys]
    assert len(set(names)) == len(keys)  # "Model A" and "model a" too: the hash tells them apart
    for name in names:
        assert SAFE_NAME.match(name) and len(name) < 200 and ".." not in name.split("/"), name
    for key in keys:  # an explorer URL of the page names it again, whatever its id holds
        assert export_links.page_key(export_links.page_url(key, []))[0] == key, key


@pytest.mark.unit
def test_equal_pages_share_one_key_and_variants_do_not():
    key = export_links.page_key
    plain = key(f"/dialogues?target={TARGET}&pool={POOL}")[0]
    assert key(f"/dialogues?target={TARGET}&pool={POOL}&sort=n_dialogues&page=1")[0] == plain
    assert key(f"/dialogues?target={TARGET}&pool={POOL}&sort=empathy")[0] != plain
    assert key(f"/dialogues?target={TARGET}&pool={POOL}&failure=incomplete")[0] != plain
    assert key("/compare?seed=s&target=a&target=b")[0] == key("/compare?seed=s&target=b&target=a")[0]
    assert key("/pairs?pool=p&a=x&b=y")[0] == key("/pairs?pool=p&a=x&b=y&metric=empathy&page=1")[0]
    assert key("/dialogue/a%2Fb/c%3Ad#turn-2") == (("dialogue", "a/b", "c:d"), "turn-2")
    assert key("/speech?target=x")[0] != key("/speech")[0] == key("/speech?page=1&target=")[0]
    assert key("/?target=x")[0] != key("/")[0] == export_links.INDEX
    assert key(f"/dialogues?target={TARGET}&pool={POOL}&later=1")[0] == ("variant", "/dialogues")
    for foreign in ("https://example.org/", "javascript:alert(1)", "//evil/x", "relative.html", "/nowhere"):
        assert key(foreign)[0] is None, foreign
    assert key("/pairs?pool=p&a=x&b=y&metric=nope")[0] is None and key("/speech?page=x")[0] is None


@pytest.mark.unit
def test_the_rewriter_changes_only_links_and_forms():
    page = (
        '<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/explorer.css"></head><body>'
        '<p class="text">&lt;script&gt;x&lt;/script&gt; &amp; &#10003;</p>'
        '<a class="call" href="/call/k1">kept</a> <a href="/call/other" title="t">gone</a>'
        '<a href="https://example.org/">away</a>'
        '<form action="/speech"><input type="hidden" name="a" value="b"><select name="s"></select></form>'
        '<audio controls src="/clip/a.wav"></audio><audio controls src="/clip/b.wav"><p>inside</p></audio>'
        '<span title="&quot;quoted&quot; &lt;b&gt;">t</span></body></html>'
    )
    notes = []
    how = export_html.Rewrite(
        resolve=lambda h: {"/explorer.css": "explorer.css", "/call/k1": "calls/k1.html"}.get(h),
        resolve_clip=lambda s: "clips/a.wav" if s == "/clip/a.wav" else None,
        policy="default-src 'none'",
        banner="<div>BANNER</div>",
        form_note=lambda action, hidden: notes.append((action, hidden)) or "<p>NOTE</p>",
    )
    html = export_html.rewrite(page, how)
    assert '<p class="text">&lt;script&gt;x&lt;/script&gt; &amp; &#10003;</p>' in html
    assert '<a class="call" href="calls/k1.html">kept</a>' in html
    assert '<span class="not-exported" title="not in this export">gone</span>' in html
    assert '<span class="not-exported" title="not in this export">away</span>' in html
    assert "<p>NOTE</p>" in html and "select" not in html and notes == [("/speech", {"a": "b"})]
    assert '<audio controls src="clips/a.wav"></audio>' in html and "inside" not in html and "b.wav" not in html
    assert '<span title="&quot;quoted&quot; &lt;b&gt;">t</span>' in html
    assert html.index('http-equiv="Content-Security-Policy"') < html.index("<link")
    assert '<link rel="stylesheet" href="explorer.css">' in html and "<body><div>BANNER</div>" in html


@pytest.mark.cli
def test_a_warehouse_older_than_a_column_renders_and_a_page_that_fails_is_left_out(tmp_path, capsys, monkeypatch):
    """Files written before dialogue_turns had its error_kind and error_role columns read those columns as NULL,
    so everything is exported; then a data file the explorer cannot read makes its pages fail (as on the server,
    500): the export writes the rest, names those pages, and exits 1."""
    older = tmp_path / "data"
    older.mkdir()
    build(older)
    shutil.rmtree(older / "warehouse" / "speech")  # a small export: no SpeechEQ items
    parts = sorted((older / "warehouse" / "dialogue" / "dialogue_turns").rglob("*.parquet"))
    for part in parts:
        if part.name != "_schema.parquet":
            frame = pd.read_parquet(part)
            frame.drop(columns=["error_kind", "error_role"]).to_parquet(part, index=False)
    (older / "warehouse" / "dialogue" / "dialogue_turns" / "_schema.parquet").unlink(missing_ok=True)
    monkeypatch.setenv("EYT_DATA_DIR", str(older))
    whole = tmp_path / "whole"
    assert cli.main(["view", "--export", str(whole), "--target", BASELINE]) == 0
    assert (whole / "cells").exists()
    capsys.readouterr()
    from eyt_dagster.explorer import judges

    def fails(*args, **kwargs):
        raise RuntimeError("the judges page failed")

    monkeypatch.setattr(judges, "disagreements", fails)
    out = tmp_path / "partial"
    assert cli.main(["view", "--export", str(out), "--target", BASELINE]) == 1
    printed = capsys.readouterr().out
    assert f"not exported, the explorer fails to render it: /judges?target={BASELINE}&pool={POOL}" in printed
    assert f"open {out / 'index.html'}" in printed
    index = (out / "index.html").read_text()
    assert (out / "cells").exists() and "disagreements" in index  # the rest is there
