"""``--threads`` of stapel-play and stapel-serve: one torch thread unless asked, as stapel-engine and stapel-match.

A network call of a batch of one with two torch threads beside a two-core load took about 165 ms against
1.9 ms with one (docs/benchmarks.md): an agent that shares the machine searches on one core by default.
"""

import io

import pytest
import torch

from stapel_rl.cli import play, serve


@pytest.fixture(autouse=True)
def _restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_play_uses_one_thread_unless_asked(monkeypatch, capsys):
    torch.set_num_threads(2)
    monkeypatch.setattr(play.sys, "stdin", io.StringIO("quit\n"))
    assert play.main(["--agent", "random"]) == 0 and torch.get_num_threads() == 1
    monkeypatch.setattr(play.sys, "stdin", io.StringIO("quit\n"))
    assert play.main(["--agent", "random", "--threads", "2"]) == 0 and torch.get_num_threads() == 2
    with pytest.raises(SystemExit) as stop:
        play.main(["--threads", "0"])
    assert stop.value.code == 2 and "--threads must be at least 1, got 0" in capsys.readouterr().err


def test_serve_uses_one_thread_unless_asked(monkeypatch, capsys):
    import uvicorn

    seen = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: seen.append(torch.get_num_threads()))
    torch.set_num_threads(2)
    assert serve.main(["--port", "8123"]) == 0
    assert serve.main(["--port", "8123", "--threads", "2"]) == 0
    assert seen == [1, 2]
    with pytest.raises(SystemExit) as stop:
        serve.main(["--threads", "0"])
    assert stop.value.code == 2 and "--threads must be at least 1, got 0" in capsys.readouterr().err
