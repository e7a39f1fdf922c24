"""The pages of an annotation sheet (`eyt annotate export`, docs/annotation.md): `index.html`, how to fill in the
sheet with the fields, their scales and the rubric, and a link per item; and `items/<item>.html`, what the judge
saw of one dialogue (the user's persona, the user's goal, the transcript) with the rows to fill in for it.

Static pages that work from file:// without JavaScript. Autoescaped: every text a model wrote reaches the page as
text. They show neither the judge's scores nor its rationales, nor which target or pool an item comes from. The
rubric is read from the judge's prompts of each dialogue's judge language, so the pages say what the judge was
told."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from eyt_dagster.eyt_bench.annotation_sample import DialogueView, Dimension, final_question, rubric
from eyt_dagster.eyt_bench.annotation_sheet import DIALOGUE_FIELDS, FINAL_TURN, SCALES, TURN_FIELDS, SheetManifest
from eyt_dagster.eyt_bench.prompts import load_prompts, render, transcript_labels

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class Rubric:
    """One judge language's rubric: the per-turn dimensions with their criteria, and what the judge's whole-dialogue
    instructions ask (word for word, without the reply format)."""

    dimensions: tuple[Dimension, ...]
    final_instructions: str


def language_rubric(language: str) -> Rubric:
    """The rubric of the judge's prompt file of `language` (EYT_PROMPTS / EYT_PROMPTS_ZH, else the packaged one)."""
    turn = str(load_prompts(language)["judge_turn"]["system"])
    return Rubric(rubric(turn), final_question(render("judge_final", "system", language)))


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined)
    env.globals.update(scales=SCALES, turn_fields=TURN_FIELDS, dialogue_fields=DIALOGUE_FIELDS, final_turn=FINAL_TURN)
    return env


def sheet_pages(manifest: SheetManifest, views: Sequence[DialogueView], languages: Mapping[str, str]) -> dict[str, str]:
    """Every page of the sheet, by its path relative to the export folder: `index.html` and `items/<item>.html`.
    `languages` gives each item's judge language (the prompts its judge read)."""
    env = _environment()
    rubrics = {lang: language_rubric(lang) for lang in sorted(set(languages.values()))}
    labels = {lang: {k: v.strip() for k, v in transcript_labels(lang).items()} for lang in rubrics}
    pages = {
        "index.html": env.get_template("annotation_index.html").render(
            sheet=manifest.sheet, items=manifest.items, rubrics=rubrics
        )
    }
    item_page = env.get_template("annotation_item.html")
    names = [v.item for v in views]
    by_item = manifest.by_item()
    for n, view in enumerate(views):
        language = languages[view.item]
        pages[f"items/{view.item}.html"] = item_page.render(
            sheet=manifest.sheet,
            view=view,
            judged=list(by_item[view.item].turns),
            language=language,
            rubric=rubrics[language],
            labels=labels[language],
            previous=names[n - 1] if n > 0 else None,
            next=names[n + 1] if n + 1 < len(names) else None,
        )
    return pages
