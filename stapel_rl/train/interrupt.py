"""Ctrl-C in a training run: the first asks it to stop at its next safe point, with a checkpoint; a second
stops it at once (from the last checkpoint saved, as a kill does).

A run stopped mid-step cannot save: its network may be half-updated. So the
first SIGINT only sets a flag that the loop reads between iterations (a few
seconds at most), and the loop saves, closes its workers and raises
``RunStopped``. The self-play workers ignore SIGINT (``eval.parallel.deaf_to_ctrl_c``):
Ctrl-C in a terminal reaches the whole process group, and the learner stops
them itself.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from tqdm import tqdm


class RunStopped(KeyboardInterrupt):
    """A run stopped by Ctrl-C after saving ``checkpoint``: the same command resumes it."""

    def __init__(self, checkpoint: object) -> None:
        super().__init__(f"stopped by Ctrl-C; checkpoint {checkpoint} saved: the same command resumes the run")
        self.checkpoint = checkpoint


class StopRequest:
    """While installed, a first SIGINT sets ``requested`` (and says so) instead of raising; a second raises
    ``KeyboardInterrupt`` as usual.

    Installed only where Python's own handler is in place, in the main thread: a
    process that ignores SIGINT (started in the background by a shell) keeps
    ignoring it, and code running in another thread cannot catch signals.
    """

    def __init__(self, message: str) -> None:
        self.message = message
        self.requested = False
        self._installed = False

    def install(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, self._handle)
                self._installed = True
        return self

    def _handle(self, signum: int, frame: "FrameType | None") -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        tqdm.write(self.message)

    def restore(self) -> None:
        """Python's own handler again (a second call does nothing)."""
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False
