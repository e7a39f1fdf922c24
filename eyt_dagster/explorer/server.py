"""Serving the explorer: uvicorn on a free port (or the one asked for) until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from types import FrameType


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


def serve(data_dir: Path, host: str = "127.0.0.1", port: int = 0) -> int:
    """Serve until Ctrl-C or SIGTERM, then exit with status 0. uvicorn finishes the open requests and then raises
    the signal again with the handlers it found; ours turn that into a normal return."""
    import uvicorn

    from eyt_dagster.explorer.app import create_app

    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"eyt view: the explorer on http://{shown}:{sock.getsockname()[1]}/ (data {data_dir}); Ctrl-C stops it",
        flush=True,
    )
    config = uvicorn.Config(create_app(data_dir), log_level="warning", access_log=False, lifespan="off")
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
