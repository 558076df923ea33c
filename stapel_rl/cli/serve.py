"""stapel-serve: play the agents, watch their search and replay games in the browser.

    stapel-serve                                   # http://127.0.0.1:8000, the committed agents
    stapel-serve --port 8080 --checkpoints runs/first/checkpoints

The server binds to localhost unless ``--host`` says otherwise. It offers the
baselines, the committed ``checkpoints/*.pt`` and every ``*.pt`` below each
``--checkpoints`` directory, by name (``mcts:variant_I``); the JSON API behind
the page is described in docs/web_api.md.
"""

from __future__ import annotations

import argparse
import pathlib
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from stapel_rl.cli.threads import add_threads_option, apply_threads_option

if TYPE_CHECKING:
    from starlette.types import ASGIApp

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def start_in_thread(app: ASGIApp, host: str = "127.0.0.1", port: int = 0) -> "tuple[str, Callable[[], None]]":
    """Serve ``app`` from a background thread (tests, scripts): its URL and a function that stops it.

    Port 0 takes a free port; the socket is bound before this returns, so the URL works at once.
    """
    import uvicorn  # the optional extra "web"

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="stapel-serve")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

    bound = sock.getsockname()[1]
    return f"http://{f'[{host}]' if ':' in host else host}:{bound}", stop


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="stapel-serve", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--checkpoints",
        nargs="+",
        default=[],
        metavar="DIR",
        help="directories whose *.pt checkpoints (searched recursively) are offered as agents",
    )
    parser.add_argument(
        "--max-games",
        type=int,
        default=64,
        help="live games kept; a new one beyond this drops the least recently used (default 64)",
    )
    add_threads_option(parser)
    args = parser.parse_args(argv)
    try:
        apply_threads_option(args)
    except ValueError as problem:
        parser.error(str(problem))
    for directory in args.checkpoints:
        if not pathlib.Path(directory).is_dir():
            parser.error(f"--checkpoints {directory!r} is not a directory")
    if args.max_games < 1:
        parser.error("--max-games must be at least 1")
    if not 0 <= args.port <= 65535:  # uvicorn's own refusal is a traceback
        parser.error(f"--port must be 0 (any free port) to 65535, got {args.port}")
    try:
        import uvicorn

        from stapel_rl.web import create_app
    except ImportError as problem:
        print(f"stapel-serve: {problem.name} is missing: pip install -e '.[web]'", file=sys.stderr)
        return 2
    app = create_app(args.checkpoints, max_games=args.max_games)
    names = ", ".join(app.state.registry.checkpoints) or "none"
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"stapel-serve: checkpoints offered: {names}", flush=True)
    if args.host not in LOCAL_HOSTS:
        print(f"stapel-serve: listening on {args.host}: other machines can reach this server", flush=True)
    print(f"stapel-serve: open http://{host}:{args.port}/ (Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
