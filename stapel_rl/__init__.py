"""stapel-rl: self-play reinforcement learning for Stapeldammen (variants I and II).

Importing the package registers the Gymnasium environment
``stapel_rl/Stapeldammen-v0`` (single game, and a vector entry point) and
changes nothing else in the process: the allocator tuning of
``stapel_rl._malloc`` is left to the programs that run big batches (the
command-line tools, benchmarks and self-play workers call it).
``pretrained("I")`` is the path of the trained agent shipped with the package.
"""

import gymnasium as _gym

from stapel_rl.bundled import pretrained

__version__ = "0.1.0"
__all__ = ["pretrained"]

if "stapel_rl/Stapeldammen-v0" not in _gym.registry:
    _gym.register(
        id="stapel_rl/Stapeldammen-v0",
        entry_point="stapel_rl.env.gym_env:StapelEnv",
        vector_entry_point="stapel_rl.env.vector_env:StapelVectorEnv",
    )
