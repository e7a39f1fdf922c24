"""The explorer's Starlette app: each route asks queries.py or calls.py and renders one Jinja2 template
(autoescaped: every text a model wrote reaches the page as text). No page needs JavaScript, and the
Content-Security-Policy header forbids any script, so even a tag that slipped through could not run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from eyt_dagster.core import explorer_links
from eyt_dagster.explorer import (
    builder,
    compare,
    costs,
    dialogue_names,
    explain,
    explain_voice,
    judges,
    pairs,
    personas,
    queries,
    repeats,
    seq,
    sequential,
    speech,
    voice,
)
from eyt_dagster.explorer.call_refs import dialogue_calls
from eyt_dagster.explorer.calls import call
from eyt_dagster.explorer.clips import clip_file
from eyt_dagster.explorer.failures import FAILURES
from eyt_dagster.explorer.formats import FILTERS
from eyt_dagster.explorer.reads import Warehouse
from eyt_dagster.explorer.running import running_steps
from eyt_dagster.eyt_bench import judge_correction, shown_figures
from eyt_dagster.reporting.cjk_font import shipped_font
from eyt_dagster.speech_eq.contrast import FEATURES
from eyt_dagster.speech_eq.seq_tables import CHANCE_TARGET
from eyt_dagster.speech_eq.vocabulary import COMPOSITES, SUBSCALES, VALENCES, eq_scale
from resources.models.cache_backend import CacheBackend

HERE = Path(__file__).parent
CJK_FONT_FILE = "eyt-sans-sc.otf"  # the shipped Chinese font, beside the stylesheet (explorer.css names it)
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; media-src 'self'; font-src 'self'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


# The pages' addresses, defined once (the Dagster UI's and the report's links use the same functions).
dialogue_url = explorer_links.dialogue_path
dialogues_url = explorer_links.dialogues_path
call_url = explorer_links.call_path
compare_url = explorer_links.compare_path
pairs_url = explorer_links.pairs_path
judges_url = explorer_links.judges_path
corrected_url = explorer_links.corrected_path
speech_url = explorer_links.speech_path
speech_item_url = explorer_links.speech_item_path
speech_build_url = explorer_links.speech_build_path
seq_url = explorer_links.seq_path
seq_subscale_url = explorer_links.seq_subscale_path
voice_url = explorer_links.voice_path
voice_dialogue_url = explorer_links.voice_dialogue_path
sequential_url = explorer_links.sequential_path
costs_url = explorer_links.costs_path


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined)
    env.filters.update(FILTERS)
    env.globals.update(
        dialogue_url=dialogue_url,
        dialogues_url=dialogues_url,
        call_url=call_url,
        compare_url=compare_url,
        pairs_url=pairs_url,
        judges_url=judges_url,
        corrected_url=corrected_url,
        speech_url=speech_url,
        speech_item_url=speech_item_url,
        speech_build_url=speech_build_url,
        seq_url=seq_url,
        seq_subscale_url=seq_subscale_url,
        leaderboard_url=explorer_links.leaderboard_path,
        page_size=queries.PAGE_SIZE,
        clip_url=speech.clip_url,
        voice_url=voice_url,
        voice_dialogue_url=voice_dialogue_url,
        sequential_url=sequential_url,
        costs_url=costs_url,
        scale=eq_scale,
        composites=COMPOSITES,
        subscales=SUBSCALES,
        valences=VALENCES,
        features=FEATURES,
        failures=FAILURES,
        headline=queries.HEADLINE,
        judge_made=shown_figures.JUDGE_MADE,
    )
    return env


def corrected_figures(wh: Warehouse, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a page needs to show the judge-made numbers of `rows`' cells as eyt_bench/shown_figures.py says:
    `corrected` (each cell's figure by '<target>|<pool>|<metric>'), `corrected_marks` (the marker each carries),
    `corrected_legend` and `judge_only_note` (for the headers). All empty when the warehouse has no
    dialogue.judge_corrected, and the page is then what it was before."""
    cells = {(str(r["target"]), str(r["pool"])) for r in rows}
    found = {k: f for k, f in shown_figures.figures(queries.judge_corrected(wh)).items() if k[:2] in cells}
    among = list(found.values())
    return {
        "corrected": {"|".join(k): f for k, f in found.items()},
        "corrected_marks": {"|".join(k): shown_figures.marker(f, among) for k, f in found.items()},
        "corrected_legend": shown_figures.legend(among),
        "judge_only_note": shown_figures.header_note(among),
    }


def corrected_explanations(wh: Warehouse, corrected: dict[str, shown_figures.ShownFigure]) -> dict[str, Any]:
    """The arithmetic of every corrected figure among `corrected` (corrected_figures' by '<target>|<pool>|<metric>'),
    by '<target>|<pool>|corrected_<metric>': explain.corrected_cells', the tables read once for all the cells."""
    cells = {(key.split("|")[0], key.split("|")[1]) for key, f in corrected.items() if f.corrected}
    out: dict[str, Any] = {}
    for (target, pool), found in explain.corrected_cells(wh, cells).items():
        for metric, number in found.explained.items():
            figure = corrected.get(f"{target}|{pool}|{metric}")
            if figure is not None and figure.corrected:
                out[f"{target}|{pool}|corrected_{metric}"] = number
    return out


def create_app(
    data_dir: Path, warehouse: Warehouse | None = None, call_backend: CacheBackend | None = None
) -> Starlette:
    """The explorer over `data_dir`; `warehouse` reads it instead of a plain Warehouse (the static export's
    reader of a selection). `call_backend` is where the call cache is (resources/models/cache_backend.py: the Dagster
    instance's Postgres database, or by default the SQLite file under `data_dir`)."""
    wh = warehouse or Warehouse(data_dir, call_backend)
    env = environment()

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(data_dir=str(wh.data_dir), **context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def not_found(message: str, status: int = 404) -> HTMLResponse:
        return page("error.html", status=status, message=message)

    def page_number(request: Request) -> int | None:
        try:
            return int(request.query_params.get("page", "1"))
        except ValueError:
            return None

    async def board(request: Request) -> Response:
        rows = queries.leaderboard(wh).to_dict("records")
        pools = sorted({str(r["pool"]) for r in rows})
        targets = sorted({str(r["target"]) for r in rows})
        only = request.query_params.get("target", "")
        if only and only not in targets:
            return not_found(f"the leaderboard has no row of target '{only}'; the targets are {', '.join(targets)}")
        shown = [r for r in rows if str(r["target"]) == only] if only else rows
        pool = request.query_params.get("pool", "") if only else ""
        if pool:
            shown = [r for r in shown if str(r["pool"]) == pool]
            if not shown:
                return not_found(f"target '{only}' has no leaderboard row in pool '{pool}'")
        explained = explain.leaderboard_cells(wh, shown, queries.HEADLINE)
        figures = corrected_figures(wh, shown)
        explained.update(corrected_explanations(wh, figures["corrected"]))
        return page(
            "leaderboard.html",
            rows=shown,
            pools=pools,
            targets=targets,
            metrics=pairs.METRICS,
            only=only,
            pool=pool,
            explained=explained,
            opened=request.query_params.get("explain", ""),
            **figures,
        )

    async def dialogues(request: Request) -> Response:
        q = request.query_params
        target, pool = q.get("target", ""), q.get("pool", "")
        sort = q.get("sort", "seed_id")
        sort = queries.HEADLINE.get(sort, sort) if sort not in queries.SORT_KEYS else sort
        descending, failure = q.get("order") == "desc", q.get("failure", "")
        try:
            number = int(q.get("page", "1"))
        except ValueError:
            return not_found(f"page must be a number, not '{q.get('page')}'", 400)
        flags = queries.baseline_flags(wh)
        if target not in queries.targets(wh):
            return not_found(f"no dialogues of target '{target}' in the warehouse")
        offered = personas.facets(wh, pool)
        try:
            persona = personas.parse(q.get("persona", ""), offered)
            found = queries.cell_dialogues(wh, target, pool, sort, descending, failure, number, persona)
        except ValueError as exc:
            return not_found(str(exc), 400)
        if not found.total and not failure and persona is None:
            return not_found(f"target '{target}' has no dialogues in pool '{pool}'")
        cell = {"target": target, "pool": pool, "failure": failure, "persona": q.get("persona", "")}
        rows = found.rows.to_dict("records")
        return page(
            "dialogues.html",
            **corrected_figures(wh, [{"target": target, "pool": pool}]),
            cell=cell,
            found=found,
            rows=rows,
            names=dialogue_names.seed_names(wh, pool, [str(r["seed_id"]) for r in rows]),
            sort=sort,
            descending=descending,
            columns=queries.SCORE_COLUMNS,
            explained_numbers=explain.DIALOGUE_NUMBERS,
            is_baseline=flags.get(target),
            facets=offered,
        )

    async def one_dialogue(request: Request) -> Response:
        rest = request.path_params["rest"]
        target = next((t for t in queries.targets(wh) if rest.startswith(t + "/")), None)
        if target is None:
            return not_found(f"no target of the warehouse begins the path '{rest}'")
        seed_id = rest[len(target) + 1 :]
        repeat = request.query_params.get("repeat", "0")
        if not repeat.isdigit():
            return not_found(f"repeat must be a whole number, got '{repeat}'", status=400)
        played = repeats.repeat_dialogue(wh, target, seed_id, int(repeat)) if int(repeat) else None
        found = played[0] if played else queries.dialogue(wh, target, seed_id)
        if found is None or (int(repeat) and played is None):
            which = f"repeat {repeat} of " if int(repeat) else ""
            return not_found(f"target '{target}' has no {which}dialogue of ChatSEED '{seed_id}'")
        with wh.calls() as reads:
            refs = dialogue_calls(reads, found)
        others = [t for t in pairs.seed_targets(wh, found.pool, seed_id) if t != target]
        return page(
            "dialogue.html",
            d=found,
            names=dialogue_names.seed_names(wh, found.pool, [seed_id]),
            refs=refs,
            others=others,
            subscores=queries.subscores,
            is_baseline=queries.baseline_flags(wh).get(target),
            repeat=int(repeat),
            sample_seed=played[1] if played else None,
            samples=repeats.samples(wh, target, seed_id),
            explained={} if int(repeat) else explain.dialogue(found),
            opened=request.query_params.get("explain", ""),
        )

    async def one_call(request: Request) -> Response:
        key = request.path_params["key"]
        with wh.calls() as reads:
            if reads.missing:
                return not_found(f"{reads.missing} ({wh.calls_where}; embedded baselines make no calls)")
            found = call(reads, key)
        if found is None:
            return not_found(f"the call cache and ledger hold no call with key '{key}'")
        flags = queries.baseline_flags(wh)
        prompt = request.query_params.get("prompt", "")
        prompt = prompt if re.fullmatch(r"[0-9A-Za-z_.:-]{1,80}", prompt) else ""  # a hash, shown as text anyway
        return page("call.html", c=found, flags=flags, prompt=prompt)

    async def side_by_side(request: Request) -> Response:
        seed_id = request.query_params.get("seed", "")
        targets = list(dict.fromkeys(request.query_params.getlist("target")))
        if len(targets) < 2:
            return not_found("name two or more different targets: /compare?seed=<seed_id>&target=A&target=B", 400)
        try:
            found = compare.compare(wh, seed_id, targets)
        except KeyError as exc:
            return not_found(f"target '{exc.args[0]}' has no dialogue of ChatSEED '{seed_id}'")
        except ValueError as exc:
            return not_found(str(exc), 400)
        gaps = {"dimension": compare.DIMENSION_GAP, "subscore": compare.SUBSCORE_GAP, "headline": compare.HEADLINE_GAP}
        names = dialogue_names.seed_names(wh, found.pool, [seed_id])
        return page(
            "compare.html",
            c=found,
            gaps=gaps,
            flags=queries.baseline_flags(wh),
            names=names,
            explained_numbers=explain.DIALOGUE_NUMBERS,
        )

    async def paired(request: Request) -> Response:
        q = request.query_params
        pool, a, b = q.get("pool", ""), q.get("a", ""), q.get("b", "")
        metric = q.get("metric", "empathy")
        number = page_number(request)
        if number is None:
            return not_found(f"page must be a number, not '{q.get('page')}'", 400)
        known = queries.targets(wh)
        for target in (a, b):
            if target not in known:
                return not_found(f"no dialogues of target '{target}' in the warehouse")
        if a == b:
            return not_found("name two different targets as a and b", 400)
        try:
            metric = pairs.metric_column(metric)
        except ValueError as exc:
            return not_found(str(exc), 400)
        found = pairs.paired(wh, pool, a, b, metric, number)
        if not found.total:
            return not_found(f"targets '{a}' and '{b}' finished no ChatSEED in common in pool '{pool}'")
        chosen = {"pool": pool, "a": a, "b": b, "metric": metric}
        rows = found.rows.to_dict("records")
        flags = queries.baseline_flags(wh)
        names = dialogue_names.seed_names(wh, pool, [str(r["seed_id"]) for r in rows])
        return page(
            "pairs.html",
            p=chosen,
            found=found,
            rows=rows,
            metrics=pairs.METRICS,
            flags=flags,
            names=names,
            mean=explain.shown(found.mean, found.mean_difference),
            explained_numbers=explain.DIALOGUE_NUMBERS,
        )

    async def judge_turns(request: Request) -> Response:
        q = request.query_params
        target, pool, sort = q.get("target", ""), q.get("pool", ""), q.get("sort", judges.LARGEST)
        number = page_number(request)
        if number is None:
            return not_found(f"page must be a number, not '{q.get('page')}'", 400)
        if target not in queries.targets(wh):
            return not_found(f"no dialogues of target '{target}' in the warehouse")
        try:
            found = judges.disagreements(wh, target, pool, sort, number)
        except ValueError as exc:
            return not_found(str(exc), 400)
        if not found.judges:
            return not_found(f"target '{target}' has no judge verdicts in pool '{pool}'")
        return page(
            "judges.html",
            cell={"target": target, "pool": pool},
            found=found,
            rows=found.rows,
            names=dialogue_names.seed_names(wh, pool, [str(r["seed_id"]) for r in found.rows]),
            sort=sort,
            sorts=judges.SORTS,
            dimensions=judges.DIMENSIONS,
            is_baseline=queries.baseline_flags(wh).get(target),
        )

    async def corrected_cell(request: Request) -> Response:
        q = request.query_params
        target, pool = q.get("target", ""), q.get("pool", "")
        found = explain.corrected(wh, target, pool)
        if not found.rows and not found.explained:
            return not_found(f"target '{target}' has no scored dialogues in pool '{pool}'")
        return page(
            "corrected.html",
            cell={"target": target, "pool": pool},
            found=found,
            metrics=judge_correction.METRICS,
            opened=q.get("explain", ""),
        )

    async def speech_items(request: Request) -> Response:
        q = request.query_params
        chosen = {k: q.get(k, "") for k in ("composite", "subscale", "valence", "target", "condition", "outcome")}
        number = page_number(request)
        if number is None:
            return not_found(f"page must be a number, not '{q.get('page')}'", 400)
        targets, conditions = speech.choice_targets(wh)
        try:
            found = speech.items(wh, page=number, known=(targets, conditions), **chosen)
        except ValueError as exc:
            return not_found(str(exc), 400)
        rows = found.rows.to_dict("records")
        columns = speech.ITEM_COLUMNS + (speech.CHOICE_COLUMNS if chosen["target"] else ())
        seq_cells = explain.speech(wh, chosen["target"]) if chosen["target"] else []
        return page(
            "speech_items.html",
            found=found,
            rows=rows,
            chosen=chosen,
            columns=columns,
            choice_columns=speech.CHOICE_COLUMNS,
            choice_targets=targets,
            conditions=conditions,
            outcomes=speech.OUTCOMES,
            flags=queries.baseline_flags(wh) | seq.baseline_flags(wh),
            seq_cells=seq_cells,
        )

    async def speech_build(request: Request) -> Response:
        q = request.query_params
        chosen = {k: q.get(k, "") for k in ("subscale", "kind")}
        number = page_number(request)
        if number is None:
            return not_found(f"page must be a number, not '{q.get('page')}'", 400)
        try:
            found = builder.build(wh, page=number, **chosen)
        except ValueError as exc:
            return not_found(str(exc), 400)
        return page("speech_build.html", b=found, chosen=chosen, kinds=builder.KINDS)

    async def speech_item(request: Request) -> Response:
        dataset_id = request.path_params["dataset_id"]
        found = speech.item(wh, dataset_id)
        if found is None:
            return not_found(f"speech.eq_items has no item '{dataset_id}'")
        condition = request.query_params.get("condition", "")
        if condition:
            found = speech.with_condition(found, condition)
        return page("speech_item.html", s=found, condition=condition)

    async def seq_board(request: Request) -> Response:
        q = request.query_params
        try:
            order = seq.check_order(q.get("sort", ""), q.get("order") != "asc", seq.BOARD_COLUMNS)
            found = seq.board(wh, q.get("condition", ""), order)
        except ValueError as exc:
            return not_found(str(exc), 400)
        # each target's numbers under this condition with their arithmetic, and its Acc_traj on each subscale
        targets = [str(r["target"]) for r in found.rows if r["target"] != CHANCE_TARGET]
        explained = explain.speech_board(wh, targets, found.condition)
        return page(
            "seq.html",
            b=found,
            explained=explained,
            by_subscale=explain.speech_subscales(wh, found.condition, found.subscales),
            columns=seq.BOARD_COLUMNS,
            intervals=seq.INTERVALS,
            labels=seq.LABELS,
            chance=CHANCE_TARGET,
            flags=seq.baseline_flags(wh),
        )

    async def seq_subscale(request: Request) -> Response:
        q, slug = request.query_params, request.path_params["slug"]
        if slug not in SUBSCALES:
            return not_found(f"'{slug}' is not an EQ-i 2.0 subscale; the subscales are {', '.join(SUBSCALES)}")
        try:
            order = seq.check_order(q.get("sort", ""), q.get("order") != "asc", seq.SUBSCALE_COLUMNS)
            found = seq.subscale(wh, slug, q.get("condition", ""), order)
        except ValueError as exc:
            return not_found(str(exc), 400)
        # each target's numbers on this subscale with their arithmetic
        explained = explain.speech_subscale(wh, slug, found.condition, found.rows)
        return page(
            "seq_subscale.html",
            s=found,
            explained=explained,
            columns=seq.SUBSCALE_COLUMNS,
            intervals=seq.INTERVALS,
            labels=seq.LABELS,
            flags=seq.baseline_flags(wh),
        )

    async def clip(request: Request) -> Response:
        stored = request.path_params["path"]
        found = clip_file(wh, stored)
        if found is None:
            return not_found(f"'{stored}' is not a clip file under {wh.data_dir} that a speech table names")
        path, media = found
        return FileResponse(path, media_type=media, headers=HEADERS)

    async def voice_report(request: Request) -> Response:
        target, pool = request.query_params.get("target", ""), request.query_params.get("pool", "")
        found = voice.report(wh, target, pool)
        names = dialogue_names.seed_names(wh, pool, [str(d["seed_id"]) for d in found.dialogues]) if pool else {}
        return page("voice.html", r=found, names=names, explained=explain_voice.report(wh, found))

    async def voice_dialogue(request: Request) -> Response:
        target, seed_id = request.path_params["target"], request.path_params["seed_id"]
        found = voice.voiced(wh, target, seed_id)
        if found is None:
            return not_found(f"voice target '{target}' has no voiced dialogue of ChatSEED '{seed_id}'")
        return page(
            "voice_dialogue.html",
            d=found,
            names=dialogue_names.seed_names(wh, found.pool, [seed_id]),
            explained=explain_voice.dialogue(wh, found),
            opened=request.query_params.get("explain", ""),
        )

    async def settled(request: Request) -> Response:
        return page("sequential.html", s=sequential.settled(wh), flags=queries.baseline_flags(wh))

    async def spent(request: Request) -> Response:
        return page("costs.html", c=costs.costs(wh))

    async def running_now(request: Request) -> Response:
        running, ended = running_steps(wh.data_dir)
        return page("running.html", running=running, ended=ended)

    async def stylesheet(request: Request) -> Response:
        return Response((HERE / "static" / "explorer.css").read_text(), media_type="text/css", headers=HEADERS)

    async def cjk_font(request: Request) -> Response:
        return Response(shipped_font().read_bytes(), media_type="font/otf", headers=HEADERS)

    return Starlette(
        routes=[
            Route("/", board),
            Route("/dialogues", dialogues),
            Route("/dialogue/{rest:path}", one_dialogue),
            Route("/call/{key}", one_call),
            Route("/compare", side_by_side),
            Route("/pairs", paired),
            Route("/judges", judge_turns),
            Route("/corrected", corrected_cell),
            Route("/speech", speech_items),
            Route("/speech/build", speech_build),
            Route("/speech/item/{dataset_id:path}", speech_item),
            Route("/seq", seq_board),
            Route("/seq/subscale/{slug}", seq_subscale),
            Route("/clip/{path:path}", clip),
            Route("/voice", voice_report),
            Route("/voice/dialogue/{target}/{seed_id:path}", voice_dialogue),
            Route("/sequential", settled),
            Route("/costs", spent),
            Route("/running", running_now),
            Route("/explorer.css", stylesheet),
            Route(f"/{CJK_FONT_FILE}", cjk_font),
        ]
    )
