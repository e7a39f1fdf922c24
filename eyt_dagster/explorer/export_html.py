"""A page the explorer rendered, made into a page of a static export, by an HTML parser that copies the markup
through and changes only links and forms:

- every href/src/action is resolved by the export: a page (or clip) of the export becomes its relative file name;
  anything else loses its URL (a link becomes plain text, a clip no file of the export holds becomes a note);
- a form (filters, sort choices) is replaced by a short note, and its controls are left out;
- the Content-Security-Policy the server sends as a header is written as a <meta http-equiv> (no script allowed)
  and a banner says what the export is.

Text is copied as it came (the templates have escaped it), entities stay entities, and an attribute that is
rewritten is escaped again, so nothing a model wrote can turn into markup on the way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser

# The attributes that hold a URL; any other attribute is copied as it is.
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "poster", "srcset", "data", "cite", "background"})

# href -> the export's relative link for it, or None when the export has no such page.
Resolve = Callable[[str], "str | None"]


@dataclass
class Found:
    """What a page links: its hrefs (links and the stylesheet) and srcs (clips)."""

    hrefs: list[str] = field(default_factory=list)
    srcs: list[str] = field(default_factory=list)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found = Found()
        self.in_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "form":
            self.in_form = True
        if self.in_form:  # a form's URLs are its filter and sort variants: not followed
            return
        for name, value in attrs:
            if value is not None and name == "href":
                self.found.hrefs.append(value)
            elif value is not None and name == "src":
                self.found.srcs.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.in_form = False


def links(html: str) -> Found:
    """The hrefs and srcs of a rendered page, outside its forms."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser.found


@dataclass(frozen=True)
class Rewrite:
    resolve: Resolve  # a link or stylesheet href -> the export's relative href, or None
    resolve_clip: Resolve  # a clip src -> the export's relative src, or None
    policy: str  # the Content-Security-Policy
    banner: str  # HTML (already escaped) shown at the top of the page
    form_note: Callable[[str, dict[str, str]], str]  # (the form's action, its hidden inputs) -> HTML note


class _Rewriter(HTMLParser):
    def __init__(self, how: Rewrite) -> None:
        super().__init__(convert_charrefs=False)
        self.how = how
        self.out: list[str] = []
        self.form: tuple[str, dict[str, str]] | None = None  # (action, hidden inputs) while inside a form
        self.anchors: list[str] = []  # the end tag of each open <a>: "a", or "span" for a link made text
        self.skip_audio = False

    # -- tags -------------------------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self.get_starttag_text() or "", closed=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, self.get_starttag_text() or "", closed=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], raw: str, closed: bool) -> None:
        values = dict(attrs)
        if self.form is not None:
            if tag == "input" and values.get("type") == "hidden" and values.get("name"):
                self.form[1][str(values["name"])] = values.get("value") or ""
            return
        if self.skip_audio:
            return
        if tag == "form":
            self.form = (values.get("action") or "", {})
            return
        if tag == "a":
            href = values.get("href")
            resolved = self.how.resolve(href) if href is not None else None
            if href is not None and resolved is None:
                kept = [(k, v) for k, v in attrs if k not in URL_ATTRIBUTES and k not in ("class", "title")]
                css = " ".join(filter(None, [values.get("class"), "not-exported"]))
                kept += [("class", css), ("title", "not in this export")]
                self.out.append(_tag("span", kept, closed))
                if not closed:
                    self.anchors.append("span")
                return
            if not closed:
                self.anchors.append("a")
            self.out.append(_tag(tag, _replace(attrs, {"href": resolved}), closed))
            return
        if tag in ("audio", "video", "source") and values.get("src") is not None:
            src = self.how.resolve_clip(str(values["src"]))
            if src is None:
                self.out.append('<span class="nocall not-exported">this clip is not in the export</span>')
                self.skip_audio = tag != "source" and not closed
                return
            self.out.append(_tag(tag, _replace(attrs, {"src": src}), closed))
            return
        urls = [(k, v) for k, v in attrs if k in URL_ATTRIBUTES and v is not None]
        if urls:
            changed = {k: (self.how.resolve(v) if k == "href" else None) for k, v in urls}
            self.out.append(_tag(tag, _replace(attrs, changed), closed))
        else:
            self.out.append(raw)
        if tag == "head":
            self.out.append(f'\n<meta http-equiv="Content-Security-Policy" content="{attribute(self.how.policy)}">')
            self.out.append('\n<meta name="referrer" content="no-referrer">')
        elif tag == "body":
            self.out.append(self.how.banner)

    def handle_endtag(self, tag: str) -> None:
        if self.form is not None:
            if tag == "form":
                action, hidden = self.form
                self.form = None
                self.out.append(self.how.form_note(action, hidden))
            return
        if self.skip_audio:
            if tag in ("audio", "video"):
                self.skip_audio = False
            return
        if tag == "a" and self.anchors:
            self.out.append(f"</{self.anchors.pop()}>")
            return
        self.out.append(f"</{tag}>")

    # -- everything else, copied as it came -------------------------------------------------------------------
    def _copy(self, text: str) -> None:
        if self.form is None and not self.skip_audio:
            self.out.append(text)

    def handle_data(self, data: str) -> None:
        self._copy(data)

    def handle_entityref(self, name: str) -> None:
        self._copy(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self._copy(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self._copy(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self._copy(f"<!{decl}>")

    def handle_pi(self, data: str) -> None:
        self._copy(f"<?{data}>")

    def unknown_decl(self, data: str) -> None:
        self._copy(f"<![{data}]>")


def _replace(attrs: list[tuple[str, str | None]], changed: dict[str, str | None]) -> list[tuple[str, str | None]]:
    """The attributes with those in `changed` set to their new value, or left out where that is None."""
    out: list[tuple[str, str | None]] = []
    for k, v in attrs:
        if k in changed:
            if changed[k] is not None:
                out.append((k, changed[k]))
        else:
            out.append((k, v))
    return out


def attribute(value: str) -> str:
    """A value for a double-quoted attribute: &, <, > and " escaped."""
    return escape(value, quote=False).replace('"', "&quot;")


def _tag(tag: str, attrs: list[tuple[str, str | None]], closed: bool) -> str:
    parts = [tag] + [k if v is None else f'{k}="{attribute(v)}"' for k, v in attrs]
    return "<" + " ".join(parts) + (" />" if closed else ">")


def rewrite(html: str, how: Rewrite) -> str:
    """The export's version of a rendered page."""
    parser = _Rewriter(how)
    parser.feed(html)
    parser.close()
    return "".join(parser.out)
