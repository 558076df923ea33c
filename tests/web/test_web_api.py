"""stapel-serve's JSON API (docs/web_api.md) through FastAPI's test client."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import pathlib
import re
import shutil
import time

import numpy as np
import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from stapel_rl.cli import serve  # noqa: E402
from stapel_rl.env import apply_move, initial_fen, legal_moves  # noqa: E402
from stapel_rl.eval.pdn import read_games  # noqa: E402
from stapel_rl.web import create_app  # noqa: E402
from stapel_rl.web.agents import COMMITTED_DIR  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
START_I = initial_fen("I")
START_MOVES_I = ["31-26", "31-27", "32-27", "32-28", "33-28", "33-29", "34-29", "34-30", "35-30"]
# White to move: 32 must take two men (32x23x12 or 32x23x14); 32x21 takes only one and is not offered.
TWO_LEAPS = "W:b,b,,,,,,,,,,,,,,,,b,b,,,,,,,,b,b,,,,w,,,,,,,,,,,,,,w,w,,,"
# White's only move 32x23 takes Black's last man.
LAST_CAPTURE = "W:" + ",".join("b" if n == 28 else "w" if n == 32 else "" for n in range(1, 51))


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def new_game(client: TestClient, **body) -> dict:
    response = client.post("/api/games", json={"agent": "random", "seed": 0, **body})
    assert response.status_code == 200, response.text
    return response.json()


def error_of(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]


def test_agents_lists_baselines_and_committed_checkpoints(client):
    data = client.get("/api/agents").json()
    baselines = [
        "random",
        "greedy",
        "alphabeta:1",
        "alphabeta:2",
        "alphabeta:3",
        "alphabeta:4",
        "classical:time=0.1",
        "classical:time=0.5",
        "classical:time=1",
        "classical:time=0.1:eval=nnue",
        "classical:time=0.5:eval=nnue",
        "classical:time=1:eval=nnue",
    ]
    assert data["baselines"] == baselines
    names = ["variant_I", "variant_II", "variant_II_zero", "variant_I_zero"]  # the files, sorted
    assert data["agents"] == baselines + [f"{kind}:{name}" for name in names for kind in ("mcts", "policy")]
    assert data["checkpoints"] == [{"name": name, "variant": name.split("_")[1]} for name in names]
    assert data["analysis"] == {"I": "mcts:variant_I", "II": "mcts:variant_II"}


def test_the_documented_agents_answer_is_the_real_one(client):
    # docs/web_api.md shows GET /api/agents of a server started without --checkpoints: it must not drift.
    text = (ROOT / "docs" / "web_api.md").read_text()
    example = re.search(r"### `GET /api/agents`\n\n```json\n(.*?)```", text, re.DOTALL)
    assert example is not None, "docs/web_api.md lost its GET /api/agents example"
    assert json.loads(example.group(1)) == client.get("/api/agents").json()


def test_new_game_at_the_start(client):
    game = new_game(client, variant="I", human="white")
    assert game["fen"] == START_I and game["start_fen"] == START_I
    assert game["legal_moves"] == START_MOVES_I
    assert game["legal_paths"] == [[int(s) for s in m.split("-")] for m in START_MOVES_I]
    assert (game["moves"], game["result"], game["agent_move"], game["to_move"]) == ([], None, None, "white")
    assert game["board"][:20] == ["b"] * 20 and game["board"][20:30] == [""] * 10 and game["board"][30:] == ["w"] * 20


def test_agent_moves_first_when_it_starts(client):
    game = new_game(client, variant="II", human="white")  # Variant II: Black moves first
    assert len(game["moves"]) == 1 and game["agent_move"] == game["moves"][0]
    assert game["fen"] == apply_move(initial_fen("II"), game["moves"][0], "II")
    assert game["to_move"] == "white" and game["points"] == {"white": 0, "black": 0}


@pytest.mark.parametrize("spec", ["classical:time=0.1", "classical:time=0.1:eval=nnue"])
def test_the_classical_engine_replies_with_a_legal_move(client, spec):
    game = new_game(client, variant="II", human="white", agent=spec)
    assert game["agent"] == spec
    assert len(game["moves"]) == 1 and game["moves"][0] in legal_moves(initial_fen("II"), "II")


def test_move_then_agent_reply(client):
    game = new_game(client)
    after = client.post(f"/api/games/{game['id']}/moves", json={"move": "32-28"}).json()
    assert after["moves"][0] == "32-28" and len(after["moves"]) == 2
    assert after["agent_move"] == after["moves"][1]
    assert after["fen"] == apply_move(apply_move(START_I, "32-28"), after["moves"][1])
    assert after["last_move"] == [int(s) for s in after["moves"][1].replace("x", "-").split("-")]
    assert client.get(f"/api/games/{game['id']}").json() == after


def test_two_leap_capture_offers_only_maximum_captures(client):
    game = new_game(client, fen=TWO_LEAPS)
    assert game["legal_moves"] == ["32x23x12", "32x23x14"]
    assert game["legal_paths"] == [[32, 23, 12], [32, 23, 14]]
    after = client.post(f"/api/games/{game['id']}/moves", json={"move": "32x14"}).json()  # from x to, one match
    assert after["moves"][0] == "32x23x14"
    assert after["board"][13] == "wbb" and after["board"][27] == "" and after["board"][18] == ""


def test_game_over_result(client):
    game = new_game(client, fen=LAST_CAPTURE)
    assert game["legal_moves"] == ["32x23"]
    over = client.post(f"/api/games/{game['id']}/moves", json={"move": "32x23"}).json()
    assert (over["result"], over["legal_moves"], over["agent_move"]) == ("2-0", [], None)
    assert over["banner"] == "White wins (Black cannot move) - you win"
    message = error_of(client.post(f"/api/games/{game['id']}/moves", json={"move": "23-18"}), 400)
    assert message == "the game is over (Black cannot move: White wins): no more moves"


@pytest.mark.parametrize(
    "move, message",
    [
        ("zz", "malformed move 'zz': expected e.g. '32-28' or '28x19x10'"),
        ("32-51", "malformed move '32-51': square 51 is not between 1 and 50"),
        ("32-23", "illegal move '32-23'; legal moves: " + ", ".join(START_MOVES_I)),
    ],
)
def test_bad_moves_are_refused_and_change_nothing(client, move, message):
    game = new_game(client)
    assert error_of(client.post(f"/api/games/{game['id']}/moves", json={"move": move}), 400) == message
    assert client.get(f"/api/games/{game['id']}").json() == game


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"agent": "mcts:/etc/passwd"}, 400, "unknown agent 'mcts:/etc/passwd'"),
        ({"agent": "policy:../checkpoints/variant_I"}, 400, "unknown agent 'policy:../checkpoints/variant_I'"),
        ({"agent": "alphabeta:9"}, 400, "unknown agent 'alphabeta:9'"),
        ({"agent": "classical:eval=/etc/passwd"}, 400, "unknown agent 'classical:eval=/etc/passwd'"),
        ({"agent": "classical:eval=nnue"}, 400, "unknown agent 'classical:eval=nnue'"),  # offered with a time
        ({"agent": "classical:time=2:eval=nnue"}, 400, "unknown agent 'classical:time=2:eval=nnue'"),
        ({"agent": "mcts:variant_I:sims=0"}, 400, "simulations must be between 1 and 1024, got 0"),
        ({"agent": "mcts:variant_I:temp=1"}, 400, "agent 'mcts:variant_I:temp=1': unexpected option 'temp=1'"),
        ({"variant": "III"}, 400, "unknown variant 'III': expected one of ['I', 'II']"),
        ({"human": "red"}, 400, "human must be 'white' or 'black', got 'red'"),
        ({"seed": -1}, 400, "seed must be a whole number >= 0, got -1"),
        ({"fen": "W:w"}, 400, "malformed FEN: position text 'W:w': expected 50 comma-separated squares, got 1"),
        ({"colour": "white"}, 422, "invalid request: colour: Extra inputs are not permitted"),
    ],
)
def test_bad_new_game_requests(client, body, status, message):
    assert error_of(client.post("/api/games", json={"agent": "random", **body}), status).startswith(message)


def test_malformed_json_and_unknown_game(client):
    response = client.post("/api/games", content=b"{", headers={"content-type": "application/json"})
    assert error_of(response, 422).startswith("invalid request:")
    message = error_of(client.post("/api/games/0123/moves", json={"move": "32-28"}), 404)
    assert message == "unknown game id '0123' (never created, or dropped as the oldest idle game)"
    assert error_of(client.get("/api/games/0123/pdn"), 404).startswith("unknown game id '0123'")


def test_undo(client):
    game = new_game(client)
    assert error_of(client.post(f"/api/games/{game['id']}/undo"), 400) == "nothing to undo: you have not moved yet"
    first = client.post(f"/api/games/{game['id']}/moves", json={"move": "32-28"}).json()
    client.post(f"/api/games/{game['id']}/moves", json={"move": first["legal_moves"][0]})
    back = client.post(f"/api/games/{game['id']}/undo").json()
    assert back["moves"] == first["moves"] and back["fen"] == first["fen"]
    assert client.post(f"/api/games/{game['id']}/undo").json()["fen"] == START_I


def test_pdn_of_a_game_replays_to_its_moves(client):
    game = new_game(client, fen=TWO_LEAPS)
    after = client.post(f"/api/games/{game['id']}/moves", json={"move": "32x23x12"}).json()
    text = client.get(f"/api/games/{game['id']}/pdn").text
    [record] = read_games(text)
    assert record["moves"] == after["moves"] and record["fens"][-1] == after["fen"]
    assert record["tags"]["FEN"] == TWO_LEAPS and record["tags"]["White"] == "Human"


def test_analyse_reports_the_search(client):
    body = {"fen": START_I, "variant": "I", "agent": "mcts:variant_I:sims=8", "simulations": 16, "top": 20}
    data = client.post("/api/analyse", json=body).json()
    assert (data["agent"], data["simulations"], data["to_move"]) == ("mcts:variant_I:sims=8", 16, "white")
    assert sum(m["visits"] for m in data["moves"]) == 16
    assert sorted(m["move"] for m in data["moves"]) == START_MOVES_I
    visits = [m["visits"] for m in data["moves"]]
    assert visits == sorted(visits, reverse=True)
    assert abs(sum(m["prior"] for m in data["moves"]) - 1) < 1e-3
    assert all(m["q"] is None if m["visits"] == 0 else -1 <= m["q"] <= 1 for m in data["moves"])
    assert -1 <= data["value"] <= 1 and data["value_white"] == data["value"]


def test_analyse_a_capture_names_its_first_leap(client):
    body = {"fen": TWO_LEAPS, "variant": "I", "agent": "policy:variant_I", "simulations": 4}
    [move] = client.post("/api/analyse", json=body).json()["moves"]
    assert (move["move"], move["path"], move["continuations"], move["visits"]) == ("32x23", [32, 23], 2, 4)


@pytest.mark.parametrize(
    "body, message",
    [
        ({"agent": "greedy"}, "agent 'greedy' has no network to search with"),
        ({"agent": "mcts:/etc/passwd"}, "unknown agent 'mcts:/etc/passwd'"),
        ({"simulations": 0}, "simulations must be between 1 and 1024, got 0"),
        ({"fen": "X:"}, "malformed FEN: position text 'X:': side to move must be 'W' or 'B', got 'X'"),
        ({"fen": LAST_CAPTURE.replace(",w,", ",,")}, "the game is over in this position"),
    ],
)
def test_bad_analyse_requests(client, body, message):
    full = {"fen": START_I, "variant": "I", "agent": "mcts:variant_I", "simulations": 2, **body}
    assert error_of(client.post("/api/analyse", json=full), 400).startswith(message)


def test_replay_of_a_pdn_file(client):
    game = new_game(client)
    client.post(f"/api/games/{game['id']}/moves", json={"move": "33-29"})
    text = client.get(f"/api/games/{game['id']}/pdn").text
    data = client.post("/api/replay", json={"pdn": text}).json()
    assert data["index"] == 0 and [g["tags"]["Event"] for g in data["games"]] == ["stapel-serve"]
    replayed = data["game"]
    assert replayed["moves"][0] == "33-29" and len(replayed["positions"]) == 3
    assert replayed["positions"][0]["fen"] == START_I and replayed["positions"][0]["last_move"] is None
    assert replayed["positions"][1]["last_move"] == [33, 29] and replayed["positions"][1]["to_move"] == "black"
    assert replayed["positions"][2]["fen"] == client.get(f"/api/games/{game['id']}").json()["fen"]


def test_replay_one_game_of_many(client):
    texts = []
    for fen in (TWO_LEAPS, LAST_CAPTURE):
        game = new_game(client, fen=fen)
        client.post(f"/api/games/{game['id']}/moves", json={"move": game["legal_moves"][0]})
        texts.append(client.get(f"/api/games/{game['id']}/pdn").text)
    bad = texts[1].replace("32x23", "32x21")
    data = client.post("/api/replay", json={"pdn": texts[0] + "\n" + texts[1], "game": 1}).json()
    assert [g["tags"]["FEN"] for g in data["games"]] == [TWO_LEAPS, LAST_CAPTURE]
    assert (data["index"], data["game"]["moves"], data["game"]["result"]) == (1, ["32x23"], "2-0")
    message = error_of(client.post("/api/replay", json={"pdn": texts[0] + "\n" + bad, "game": 1}), 400)
    assert message.startswith("cannot read the PDN: game 2, move 1 ('32x21'): illegal move '32x21'; legal moves: 32x23")
    # The broken game is not replayed when another one is asked for.
    assert client.post("/api/replay", json={"pdn": texts[0] + "\n" + bad, "game": 0}).status_code == 200
    message = error_of(client.post("/api/replay", json={"pdn": texts[0], "game": 1}), 400)
    assert message == "no game 1 in the PDN text: it holds games 0 to 0"


def test_request_bodies_are_limited(client):
    big = {"move": "32-28" + " " * 20000}
    assert error_of(client.post("/api/games/x/moves", json=big), 413) == "request body too large: at most 16384 bytes"
    # The replay of a PDN file may be larger (its limit is 1 MiB), but not without bound.
    assert error_of(client.post("/api/replay", json={"pdn": " " * 20000}), 400) == "the PDN text is empty"
    assert error_of(client.post("/api/replay", json={"pdn": " " * (1 << 20)}), 413).startswith("request body too large")


def test_live_games_are_bounded():
    client = TestClient(create_app(max_games=2))
    ids = [new_game(client)["id"] for _ in range(3)]
    assert client.get(f"/api/games/{ids[1]}").status_code == 200  # now the most recently used
    new_game(client)
    assert [client.get(f"/api/games/{i}").status_code for i in ids] == [404, 200, 404]


def test_checkpoints_dirs_are_offered_by_name(tmp_path):
    (tmp_path / "run").mkdir()
    shutil.copy(COMMITTED_DIR / "variant_I.pt", tmp_path / "run" / "mine.pt")
    client = TestClient(create_app([tmp_path], include_committed=False))
    assert client.get("/api/agents").json()["agents"][-2:] == ["mcts:run/mine", "policy:run/mine"]
    game = new_game(client, agent="mcts:run/mine:sims=2", human="black")
    assert game["agent"] == "mcts:run/mine:sims=2" and len(game["moves"]) == 1
    assert error_of(client.post("/api/games", json={"agent": "mcts:variant_I"}), 400).endswith("NAME one of: run/mine")


def test_checkpoint_variants_come_from_the_run_config_or_a_small_file(tmp_path):
    run = tmp_path / "runs" / "II_default"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("variant:\n  name: II\n  ply_cap: 600\n")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "ckpt_00000001.pt").write_bytes(b"not read: the run's config says the variant")
    (tmp_path / "runs" / "stray.pt").write_bytes(b"not a checkpoint")
    shutil.copy(COMMITTED_DIR / "variant_I.pt", tmp_path / "runs" / "agent.pt")
    client = TestClient(create_app([tmp_path / "runs"], include_committed=False))
    assert client.get("/api/agents").json()["checkpoints"] == [
        {"name": "II_default/checkpoints/ckpt_00000001", "variant": "II"},
        {"name": "agent", "variant": "I"},
        {"name": "stray", "variant": None},
    ]


@dataclasses.dataclass
class SlowAgent:
    """Random moves after a pause: a stand-in for a long search."""

    seconds: float
    name: str = "slow"

    def __call__(self, state, rng):
        time.sleep(self.seconds)
        return np.flatnonzero(state.legal_action_mask[0])[:1]


def test_agent_moves_do_not_block_other_requests():
    app = create_app()
    build = app.state.registry.build
    app.state.registry.build = lambda spec: SlowAgent(1.0) if spec == "slow" else build(spec)
    client = TestClient(app)
    game = new_game(client, agent="slow", human="black")  # the slow agent opens
    finished = {}

    async def timed(name, call):
        await call
        finished[name] = time.perf_counter()

    async def after(seconds, call):
        await asyncio.sleep(seconds)
        return await call

    async def both():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            move = http.post(f"/api/games/{game['id']}/moves", json={"move": game["legal_moves"][0]})
            await asyncio.gather(timed("move", move), timed("agents", after(0.2, http.get("/api/agents"))))

    start = time.perf_counter()
    asyncio.run(both())
    assert finished["agents"] < finished["move"] and finished["move"] - start >= 1.0


def test_serve_prints_the_url_and_binds_localhost(monkeypatch, capsys):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(kwargs))
    assert serve.main(["--port", "8123"]) == 0
    assert calls == [{"host": "127.0.0.1", "port": 8123, "log_level": "warning"}]
    assert "stapel-serve: open http://127.0.0.1:8123/ (Ctrl-C stops)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        serve.main(["--checkpoints", "/nonexistent/dir"])
    assert stop.value.code == 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        serve.main(["--port", "99999"])
    assert stop.value.code == 2 and "--port must be 0 (any free port) to 65535, got 99999" in capsys.readouterr().err
    assert len(calls) == 1  # no server was started for either


def test_page_and_static_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and 'id="moves"' in page.text and 'id="status"' in page.text
    # Nothing from the network, so the page works offline: its files come from /static/ ...
    assert re.findall(r'(?:src|href)="([^"#]+)"', page.text) == [
        "/static/style.css",
        "/static/board.js",
        "/static/app.js",
    ]
    for name in ("app.js", "board.js", "style.css"):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200
        # ... and they name no other address (the SVG namespace is a name, never fetched).
        assert set(re.findall(r"https?://[^\s\"'`]+", response.text)) <= {"http://www.w3.org/2000/svg"}
