"""``python -m stapel_rl.train``: the same as ``stapel-train``."""

from stapel_rl.cli.train import main

main()
