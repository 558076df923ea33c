"""The cluster recipe of docs/distributed.md, run the way users run it: `ray start --head`, a second
raylet joined by `ray start --address`, then `stapel-train distributed.address=...`, all on this
machine. Ray with token authentication (2.60) rejects a process without `RAY_AUTH_MODE=token` and the
head node's token, which is what the recipe hands every process."""

import io
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from stapel_rl.cluster import init_ray
from stapel_rl.models import checkpoint

ray = pytest.importorskip("ray", reason="Ray is part of the dev extra: pip install -e '.[dev]'")

RAY = shutil.which("ray", path=str(pathlib.Path(sys.executable).parent)) or "ray"
# One CPU and a small object store per raylet: two of them fit the 2-core CI machine.
NODE = ["--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]


def free_ports(count: int) -> "list[int]":
    """``count`` different ports free on every interface (Ray listens on all of them)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def start_node(args: "list[str]", env: "dict[str, str]", log: pathlib.Path) -> subprocess.Popen:
    """`ray start ARGS`, held in the foreground (--block) so that the test stops exactly the processes it started.

    (`ray stop` would stop every Ray on the machine, a developer's own cluster included.)
    """
    with log.open("w") as out:
        proc = subprocess.Popen([RAY, "start", "--block", *args], env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while "Ray runtime started." not in log.read_text():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            pytest.fail(f"ray start {' '.join(args)} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    return proc


def machine_env(home: pathlib.Path, **extra: str) -> "dict[str, str]":
    """The environment of one 'machine' of the cluster: its own home (where Ray keeps ~/.ray/auth_token)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "HOME": str(home), **extra}


@pytest.fixture
def cluster(tmp_path):
    """A head node and a second raylet, both on loopback, started as docs/distributed.md says.

    Yields the head's address and the head machine's environment (for the learner). The second
    raylet plays a machine without the token file: it gets the token in RAY_AUTH_TOKEN.
    """
    head_env = machine_env(tmp_path / "head", RAY_AUTH_MODE="token")
    token = subprocess.run(
        [RAY, "get-auth-token", "--generate"], env=head_env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert (tmp_path / "head" / ".ray" / "auth_token").read_text() == token
    worker_env = machine_env(tmp_path / "worker", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    port, client, dashboard, head_agent, worker_agent = free_ports(5)
    nodes = []
    # Short: Ray's unix sockets live under --temp-dir and a socket path has at most 107 characters.
    temp = pathlib.Path(tempfile.mkdtemp(prefix="stapel-ray-"))
    try:
        # Every port Ray would otherwise take at a fixed number: free ones, beside any other Ray here.
        head = ["--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={temp}"]
        head += [f"--ray-client-server-port={client}", "--include-dashboard=false", f"--dashboard-port={dashboard}"]
        head += [f"--dashboard-agent-listen-port={head_agent}"]
        nodes.append(start_node([*head, *NODE], head_env, tmp_path / "head.log"))
        join = [f"--address=127.0.0.1:{port}", f"--dashboard-agent-listen-port={worker_agent}"]
        nodes.append(start_node([*join, *NODE], worker_env, tmp_path / "worker.log"))
        yield f"127.0.0.1:{port}", head_env
    finally:
        for node in reversed(nodes):
            node.terminate()
            try:
                node.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_the_documented_cluster_recipe_trains_with_an_actor_on_each_raylet(tmp_path, cluster):
    address, env = cluster
    run = tmp_path / "run"
    command = [sys.executable, "-m", "stapel_rl.train", f"hydra.run.dir={run}", "model=tiny", "train=tiny"]
    command += [
        "mcts.num_simulations=4",
        "train.threads=1",
        "train.eval_every_minutes=0",
        "train.image_every_minutes=0",
    ]
    command += ["train.iterations=2", "distributed=ray", "distributed.actors=2", f"distributed.address={address}"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    state = checkpoint.load(checkpoint.list_checkpoints(run / "checkpoints")[-1])
    assert state["counters"]["iteration"] == 2
    with np.load(io.BytesIO(state["replay"])) as replay:
        # Two actors of one CPU each on raylets of one CPU each: one actor per raylet (with the head
        # alone the run stops at once: "needs 2 CPUs; the Ray cluster has 1").
        assert set(np.unique(replay["actor"])) == {0, 1}


@pytest.mark.parametrize(
    "mode, says",
    [
        (None, "The cluster uses token authentication: set RAY_AUTH_MODE=token, with the head node's token"),
        ("token", "The cluster rejected this machine's Ray token: use the head node's ~/.ray/auth_token"),
    ],
)
def test_a_rejected_token_says_what_to_do(monkeypatch, mode, says):
    # What Ray 2.60 raises when the head turns the token down: a ConnectionError whose cause, a
    # RuntimeError, holds the gRPC status (the real thing takes 20 s of retries).
    def init(**kwargs: object) -> None:
        refused = RuntimeError("Failed to connect to GCS. ... RPC error: InvalidAuthToken: Authentication token ...")
        raise ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379") from refused

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr("stapel_rl.cluster._check_reachable", lambda address, timeout: None)
    if mode:
        monkeypatch.setenv("RAY_AUTH_MODE", mode)
    else:
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    with pytest.raises(ConnectionError) as error:
        init_ray("127.0.0.1:6379")
    assert str(error.value).startswith("cannot connect to a Ray cluster at '127.0.0.1:6379': Failed to connect")
    assert says in str(error.value) and "see docs/distributed.md" in str(error.value)


def test_no_hint_when_the_connection_fails_otherwise(monkeypatch):
    def init(**kwargs: object) -> None:
        raise ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6379") from RuntimeError("timed out")

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr("stapel_rl.cluster._check_reachable", lambda address, timeout: None)
    with pytest.raises(ConnectionError) as error:
        init_ray("127.0.0.1:6379")
    assert str(error.value) == (
        "cannot connect to a Ray cluster at '127.0.0.1:6379': Failed to connect to Ray cluster at 192.0.2.2:6379"
    )
