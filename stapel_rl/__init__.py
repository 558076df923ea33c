"""stapel-rl: self-play reinforcement learning for Stapeldammen (variants I and II).

Importing the package changes nothing in the process and imports neither
gymnasium nor torch: the engine (``stapel_rl.env``) is numpy only. The
Gymnasium environment ``stapel_rl/Stapeldammen-v0`` is registered by
importing ``stapel_rl.env.gym_env`` (or name it as
``gymnasium.make("stapel_rl.env.gym_env:stapel_rl/Stapeldammen-v0")``). The
allocator tuning of ``stapel_rl._malloc`` is left to the programs that run
big batches. ``pretrained("I")`` is the path of the trained agent shipped
with the package.
"""

from stapel_rl.bundled import pretrained

__version__ = "0.2.0"
__all__ = ["pretrained"]
