"""The web board's FastAPI app: the JSON API of docs/web_api.md and the static page.

Every handler that runs the engine, an agent or a search does so in a worker
thread (``run_in_threadpool``), holding the game's lock, so a slow agent move
or analysis never blocks the event loop and other requests go on meanwhile.
Errors are JSON ``{"error": "..."}`` with a 4xx status, and a refused request
changes nothing.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stapel_rl import __version__
from stapel_rl.eval.agents import Agent
from stapel_rl.web.agents import DEFAULT_SIMULATIONS, AgentError, AgentRegistry, parse_simulations
from stapel_rl.web.analysis import AnalysisError, analyse, replay
from stapel_rl.web.games import GameError, GameStore, WebGame

STATIC = pathlib.Path(__file__).resolve().parent / "static"
#: Largest request body in bytes; a PDN file for the replay view may be larger (REPLAY_BODY_LIMIT).
BODY_LIMIT = 16 * 1024
REPLAY_BODY_LIMIT = 1024 * 1024
DEFAULT_MAX_GAMES = 64


class ApiError(Exception):
    """An answer ``{"error": message}`` with HTTP status ``status``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class _Body(BaseModel):
    # Unknown fields are refused with their names, so a typo is reported rather than ignored.
    model_config = ConfigDict(extra="forbid")


class NewGame(_Body):
    variant: str = "I"
    agent: str = "greedy"
    human: str = "white"
    fen: str | None = None
    seed: int | None = None


class Move(_Body):
    move: str


class Analyse(_Body):
    fen: str
    variant: str = "I"
    agent: str
    simulations: int = DEFAULT_SIMULATIONS
    top: int = 5


class Replay(_Body):
    pdn: str
    game: int = 0


class BodyLimit:
    """ASGI middleware: a request whose body is larger than its path's limit gets 413 before any handler runs."""

    def __init__(self, app: ASGIApp, limit: int = BODY_LIMIT, limits: "dict[str, int] | None" = None):
        self.app = app
        self.limit = limit
        self.limits = limits or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(scope["path"], self.limit)
        too_large = JSONResponse({"error": f"request body too large: at most {limit} bytes"}, status_code=413)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await too_large(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            # A body sent without a length (chunked) is counted as it arrives.
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                # FastAPI passes an HTTPException raised while reading the body on to its handler.
                raise HTTPException(413, f"request body too large: at most {limit} bytes")
            return message

        await self.app(scope, counted, send)


def _validation_message(error: RequestValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body")
        parts.append(f"{where}: {item.get('msg')}" if where else str(item.get("msg")))
    return "invalid request: " + "; ".join(parts)


def create_app(
    checkpoint_dirs: "Sequence[str | pathlib.Path]" = (),
    max_games: int = DEFAULT_MAX_GAMES,
    include_committed: bool = True,
) -> FastAPI:
    """The app: agents from the committed checkpoints and ``checkpoint_dirs``, at most ``max_games`` live games."""
    app = FastAPI(title="stapel-serve", version=__version__, docs_url=None, redoc_url=None)
    registry = AgentRegistry(list(checkpoint_dirs), include_committed=include_committed)
    store = GameStore(max_games)
    app.state.registry, app.state.store = registry, store
    app.add_middleware(BodyLimit, limit=BODY_LIMIT, limits={"/api/replay": REPLAY_BODY_LIMIT})

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, error: ApiError) -> JSONResponse:
        return JSONResponse({"error": error.message}, status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_message(error)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(error.detail)}, status_code=error.status_code)

    def game_of(game_id: str) -> WebGame:
        try:
            return store.get(game_id)
        except KeyError as problem:
            raise ApiError(404, problem.args[0]) from None

    def build_agent(spec: str) -> Agent:
        try:
            return registry.build(spec)
        except AgentError as problem:
            raise ApiError(400, str(problem)) from None

    async def locked(game: WebGame, action: Callable[[WebGame], object]) -> dict:
        """``action(game)`` then the game's view, in a worker thread holding the game's lock."""

        def run() -> dict:
            with game.lock:
                try:
                    action(game)
                except GameError as problem:
                    raise ApiError(400, str(problem)) from None
                return game.view()

        return await run_in_threadpool(run)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/api/agents")
    async def agents() -> dict:
        return await run_in_threadpool(registry.describe)

    @app.post("/api/games")
    async def new_game(body: NewGame) -> dict:
        def start() -> WebGame:
            agent = build_agent(body.agent)
            try:
                game = WebGame(agent, body.variant, body.human, fen=body.fen, seed=body.seed)
            except GameError as problem:
                raise ApiError(400, str(problem)) from None
            with game.lock:
                game.agent_turns()
            return game

        game = await run_in_threadpool(start)
        store.add(game)
        return await locked(game, lambda g: None)

    @app.get("/api/games/{game_id}")
    async def get_game(game_id: str) -> dict:
        return await locked(game_of(game_id), lambda g: None)

    @app.post("/api/games/{game_id}/moves")
    async def move(game_id: str, body: Move) -> dict:
        return await locked(game_of(game_id), lambda g: g.play(body.move))

    @app.post("/api/games/{game_id}/undo")
    async def undo(game_id: str) -> dict:
        return await locked(game_of(game_id), lambda g: g.undo())

    @app.get("/api/games/{game_id}/pdn")
    async def pdn(game_id: str) -> PlainTextResponse:
        game = game_of(game_id)

        def text() -> str:
            with game.lock:
                return game.pdn()

        return PlainTextResponse(
            await run_in_threadpool(text), headers={"Content-Disposition": f'inline; filename="stapel-{game.id}.pdn"'}
        )

    @app.post("/api/analyse")
    async def analyse_position(body: Analyse) -> dict:
        def run() -> dict:
            try:
                simulations = parse_simulations(body.simulations)
            except AgentError as problem:
                raise ApiError(400, str(problem)) from None
            agent = build_agent(body.agent)
            try:
                return analyse(agent, body.fen, body.variant, simulations, top=body.top)
            except (AnalysisError, ValueError) as problem:
                raise ApiError(400, str(problem)) from None

        return await run_in_threadpool(run)

    @app.post("/api/replay")
    async def replay_pdn(body: Replay) -> dict:
        def run() -> dict:
            try:
                return replay(body.pdn, body.game)
            except AnalysisError as problem:
                raise ApiError(400, str(problem)) from None

        return await run_in_threadpool(run)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
