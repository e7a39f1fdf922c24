"""Serving the explorer: uvicorn on the port of its address (EYT_VIEW_URL, default 8765) or, when that is taken, a
free one (or the one asked for), until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from types import FrameType

from eyt_dagster.core import explorer_links
from resources.models.cache_backend import CacheBackend


class _Stopped(Exception):
    """Ctrl-C or SIGTERM after uvicorn has shut down gracefully."""


def _stopped(sig: int, frame: FrameType | None) -> None:
    raise _Stopped(sig)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 lets the system pick a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def bind_preferred(host: str, port: int | None) -> tuple[socket.socket, str]:
    """The socket to serve on: `port` when given (0: a free one); else the port of EYT_VIEW_URL (the address the
    Dagster UI's and the report's links name) when it is free, else a free one, with a note saying the links
    then miss."""
    if port is not None:
        return bind(host, port), ""
    wanted = explorer_links.view_port()
    try:
        return bind(host, wanted), ""
    except OSError:
        note = (
            f"; port {wanted} of {explorer_links.view_url()} is taken, so the links in the Dagster UI and the "
            f"report do not reach this explorer (stop what holds it, or set {explorer_links.VIEW_URL_ENV})"
        )
        return bind(host, 0), note


def serve(
    data_dir: Path, host: str = "127.0.0.1", port: int | None = None, call_backend: CacheBackend | None = None
) -> int:
    """Serve until Ctrl-C or SIGTERM, then exit with status 0. uvicorn finishes the open requests and then raises
    the signal again with the handlers it found; ours turn that into a normal return. The call pages read the call
    cache on `call_backend` (default: the SQLite file under `data_dir`)."""
    import uvicorn

    from eyt_dagster.explorer.app import create_app

    sock, note = bind_preferred(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"eyt view: the explorer on http://{shown}:{sock.getsockname()[1]}/ (data {data_dir}); Ctrl-C stops it{note}",
        flush=True,
    )
    config = uvicorn.Config(
        create_app(data_dir, call_backend=call_backend), log_level="warning", access_log=False, lifespan="off"
    )
    before = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        sock.close()
    print("eyt view: stopped", flush=True)
    return 0
