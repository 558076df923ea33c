"""stapel-train: train an agent by self-play (Hydra: ``stapel-train variant=II train.hours=1``).

The configs are ``configs/`` (``stapel_rl.bundled.CONFIG_DIR``); ``loop`` picks the loop:
``alphazero`` (the default) is ``stapel_rl.train.app.train``, ``minimax`` the classical engine's
learned evaluation, generation by generation (``stapel_rl.train.minimax.run``). Output goes to Hydra's run directory
(``runs/<variant>_<time>/``): checkpoints, TensorBoard events, games.
"""

from __future__ import annotations

import pathlib
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from stapel_rl._malloc import tune_malloc
from stapel_rl.train import minimax
from stapel_rl.train.app import CONFIG_DIR, CannotStart, train
from stapel_rl.train.config import check_overrides
from stapel_rl.train.interrupt import RunStopped

LOOPS = ("alphazero", "minimax")


@hydra.main(config_path=CONFIG_DIR, config_name="config", version_base=None)
def _run(cfg: DictConfig) -> None:
    tune_malloc()  # process-wide, so here and not on import
    out_dir = pathlib.Path(HydraConfig.get().runtime.output_dir)
    if cfg.loop not in LOOPS:
        sys.exit(f"stapel-train: loop must be one of {', '.join(LOOPS)}, got {cfg.loop!r}")
    try:
        OmegaConf.to_object(cfg)  # each group's dataclass checks its values
    except ValueError as problem:  # say which, without a traceback
        sys.exit(f"stapel-train: {problem}")
    if cfg.loop == "minimax":
        try:
            evaluation = minimax.run(cfg, out_dir)
        except ValueError as problem:  # a bad option or evaluation file: say which, without a traceback
            sys.exit(f"stapel-train: {problem}")
        except KeyboardInterrupt:  # every phase and chunk of games done is on disk already
            print("stopped by Ctrl-C: the same command resumes the run from the phases and games it finished")
            sys.exit(130)
        print(f"evaluation: {evaluation or 'the hand-written one'}")
        return
    try:
        final = train(cfg, out_dir)
    except CannotStart as problem:
        sys.exit(f"stapel-train: {problem}")
    except RunStopped as stopped:  # Ctrl-C, after a checkpoint: no traceback, and no && chain goes on
        print(stopped.args[0])
        sys.exit(130)
    print(f"checkpoint: {final}")


def main() -> None:
    """The ``stapel-train`` command: Hydra's, after a clear error for a key removed from the schema."""
    try:
        check_overrides(sys.argv[1:])
    except ValueError as problem:
        sys.exit(f"stapel-train: {problem}")
    _run()


if __name__ == "__main__":
    main()
