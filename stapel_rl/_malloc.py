"""Keep large numpy temporaries on the heap (glibc only).

By default glibc serves allocations above a (dynamic) threshold with fresh
``mmap`` pages and returns them on free, so every batched engine or encoder
call over thousands of games page-faults its multi-MB temporaries anew; in a
virtual machine that costs several times the arithmetic. Raising the mmap and
trim thresholds lets freed blocks be reused.

The setting is process-wide, so importing stapel_rl never applies it: the
programs that run big batches call ``tune_malloc`` first thing (the
command-line tools, the benchmarks, self-play worker processes). Set
``STAPEL_RL_KEEP_MALLOC=1`` to leave the allocator alone there too.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> bool:
    """Raise glibc's mmap/trim thresholds; True if applied."""
    if os.environ.get("STAPEL_RL_KEEP_MALLOC") or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl)
        return False
    ok = mallopt(_M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1
    ok &= mallopt(_M_TRIM_THRESHOLD, 1024 * 1024 * 1024) == 1
    return bool(ok)
