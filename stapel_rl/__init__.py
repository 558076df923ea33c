"""stapel-rl: self-play reinforcement learning for Stapeldammen (variants I and II).

Importing the package registers the Gymnasium environment
``stapel_rl/Stapeldammen-v0`` (single game, and a vector entry point).
"""

import gymnasium as _gym

from stapel_rl._malloc import tune_malloc as _tune_malloc

__version__ = "0.1.0"
_tune_malloc()

if "stapel_rl/Stapeldammen-v0" not in _gym.registry:
    _gym.register(
        id="stapel_rl/Stapeldammen-v0",
        entry_point="stapel_rl.env.gym_env:StapelEnv",
        vector_entry_point="stapel_rl.env.vector_env:StapelVectorEnv",
    )
