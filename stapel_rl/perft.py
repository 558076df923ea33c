"""``python -m stapel_rl.perft``: the same as ``stapel-perft`` (``stapel_rl.cli.perft``).

This path is kept for one version.
"""

import sys

from stapel_rl.cli.perft import main

if __name__ == "__main__":
    sys.exit(main())
