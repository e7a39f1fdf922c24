"""Serving the explorer: uvicorn on a free port (or the one asked for) until Ctrl-C or SIGTERM."""

from __future__ import annotations

import socket
from pathlib import Path


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
    """Serve until interrupted; uvicorn handles SIGINT and SIGTERM by finishing open requests and returning."""
    import uvicorn

    from eyt_dagster.explorer.app import create_app

    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"eyt view: the explorer on http://{shown}:{sock.getsockname()[1]}/ (data {data_dir}); Ctrl-C stops it",
        flush=True,
    )
    config = uvicorn.Config(create_app(data_dir), log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
