"""Ctrl-C in a training run: the first stops it at the next iteration with a checkpoint, a second at once."""

import json
import signal
import sys

import pytest
from ctrl_c import assert_all_end, ctrl_c

from stapel_rl.models import checkpoint
from stapel_rl.train.interrupt import RunStopped, StopRequest

TINY = ["model=tiny", "train=tiny", "mcts.num_simulations=4", "train.threads=1"]


def test_a_first_sigint_asks_a_second_stops(capsys, python_sigint):
    stop = StopRequest("stopping").install()
    try:
        signal.raise_signal(signal.SIGINT)
        assert stop.requested and "stopping" in capsys.readouterr().out
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert isinstance(RunStopped("x.pt"), KeyboardInterrupt) and RunStopped("x.pt").checkpoint == "x.pt"


def test_a_process_that_ignores_sigint_keeps_ignoring_it(python_sigint):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a job in the background
    stop = StopRequest("stopping").install()
    signal.raise_signal(signal.SIGINT)
    assert not stop.requested and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    stop.restore()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_stops_the_workers_and_exits_130(tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "stapel_rl.train", f"hydra.run.dir={run}", *TINY, "train.selfplay_workers=1"]
    cmd += ["train.iterations=0", "train.eval_every_minutes=0", "train.checkpoint_every_minutes=1000"]

    def ready(out: str, err: str) -> bool:
        return "it=2" in err

    stopped = ctrl_c(cmd, tmp_path, ready)
    assert stopped.returncode == 130, stopped.err[-3000:]
    assert "Ctrl-C: the run stops after this iteration" in stopped.out and "Traceback" not in stopped.err
    (saved,) = checkpoint.list_checkpoints(run / "checkpoints")  # the stop's: none was due before
    assert f"stopped by Ctrl-C; checkpoint {saved} saved: the same command resumes the run" in stopped.out
    assert checkpoint.load(saved)["counters"]["iteration"] >= 2
    # The worker ignored the group's SIGINT and was stopped by the learner.
    assert_all_end(json.loads((run / "selfplay_pids.json").read_text()))
