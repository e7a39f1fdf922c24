"""The explorer's Starlette app: each route asks queries.py or calls.py and renders one Jinja2 template
(autoescaped: every text a model wrote reaches the page as text). No page needs JavaScript, and the
Content-Security-Policy header forbids any script, so even a tag that slipped through could not run."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from eyt_dagster.explorer import queries
from eyt_dagster.explorer.call_refs import dialogue_calls
from eyt_dagster.explorer.calls import call
from eyt_dagster.explorer.failures import FAILURES
from eyt_dagster.explorer.formats import FILTERS
from eyt_dagster.explorer.reads import Warehouse

HERE = Path(__file__).parent
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def dialogue_url(target: str, seed_id: str) -> str:
    return f"/dialogue/{quote(target, safe='')}/{quote(seed_id, safe='')}"


def dialogues_url(**params: Any) -> str:
    return "/dialogues?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})


def call_url(key: str) -> str:
    return f"/call/{quote(key, safe='')}"


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined)
    env.filters.update(FILTERS)
    env.globals.update(
        dialogue_url=dialogue_url,
        dialogues_url=dialogues_url,
        call_url=call_url,
        failures=FAILURES,
        headline=queries.HEADLINE,
    )
    return env


def create_app(data_dir: Path) -> Starlette:
    wh = Warehouse(data_dir)
    env = environment()

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(template).render(data_dir=str(wh.data_dir), **context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def not_found(message: str, status: int = 404) -> HTMLResponse:
        return page("error.html", status=status, message=message)

    async def board(request: Request) -> Response:
        rows = queries.leaderboard(wh).to_dict("records")
        return page("leaderboard.html", rows=rows)

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
        try:
            found = queries.cell_dialogues(wh, target, pool, sort, descending, failure, number)
        except ValueError as exc:
            return not_found(str(exc), 400)
        if not found.total and not failure:
            return not_found(f"target '{target}' has no dialogues in pool '{pool}'")
        cell = {"target": target, "pool": pool, "failure": failure}
        return page(
            "dialogues.html",
            cell=cell,
            found=found,
            rows=found.rows.to_dict("records"),
            sort=sort,
            descending=descending,
            columns=queries.SCORE_COLUMNS,
            is_baseline=flags.get(target),
        )

    async def one_dialogue(request: Request) -> Response:
        rest = request.path_params["rest"]
        target = next((t for t in queries.targets(wh) if rest.startswith(t + "/")), None)
        if target is None:
            return not_found(f"no target of the warehouse begins the path '{rest}'")
        seed_id = rest[len(target) + 1 :]
        found = queries.dialogue(wh, target, seed_id)
        if found is None:
            return not_found(f"target '{target}' has no dialogue of ChatSEED '{seed_id}'")
        with wh.calls() as con:
            refs = dialogue_calls(con, found)
        return page(
            "dialogue.html",
            d=found,
            refs=refs,
            subscores=queries.subscores,
            is_baseline=queries.baseline_flags(wh).get(target),
        )

    async def one_call(request: Request) -> Response:
        key = request.path_params["key"]
        with wh.calls() as con:
            if con is None:
                return not_found(f"there is no call cache in {wh.data_dir} (embedded baselines make no calls)")
            found = call(con, key)
        if found is None:
            return not_found(f"the call cache and ledger hold no call with key '{key}'")
        flags = queries.baseline_flags(wh)
        return page("call.html", c=found, flags=flags)

    async def stylesheet(request: Request) -> Response:
        return Response((HERE / "static" / "explorer.css").read_text(), media_type="text/css", headers=HEADERS)

    return Starlette(
        routes=[
            Route("/", board),
            Route("/dialogues", dialogues),
            Route("/dialogue/{rest:path}", one_dialogue),
            Route("/call/{key}", one_call),
            Route("/explorer.css", stylesheet),
        ]
    )
