"""The daemon's memory habits: for a process that runs for weeks, what it holds should follow
what it is doing now, not the largest thing it ever did.

glibc's malloc raises its mmap threshold each time a large block is freed (up to 32 MiB), so
after the first large request bodies every later one comes from a thread's arena, and each
worker's arena keeps the freed space. Fixing the thresholds at glibc's own starting value
(128 KiB) hands large blocks back to the system when they are freed: measured with
scripts/rssprobe.py, 5,000 messages grew the daemon 5.6 MiB less, for about one mmap and
munmap per large block.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, cast

logger = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 128 * 1024  # glibc's default for both, before it adapts the mmap threshold
OWN_SETTINGS = ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def fix_malloc_thresholds(env: Mapping[str, str]) -> bool:
    """Keep glibc from adapting its mmap and trim thresholds upward; True if set.

    Nothing happens on another C library, or when the environment tunes malloc itself.
    """
    if any(name in env for name in OWN_SETTINGS):
        return False
    mallopt = _glibc("mallopt", ctypes.c_int, ctypes.c_int)
    if mallopt is None:
        return False
    done = all(mallopt(p, LARGE_BLOCK) == 1 for p in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD))
    if not done:
        logger.debug("mallopt refused the thresholds; malloc keeps its own")
    return done


def release_free_memory() -> bool:
    """Give the free pages inside malloc's heaps back to the system; True if it could.

    The fixed thresholds return free space at the top of a heap, but not the holes in the
    middle that blocks freed there leave, and a busy daemon makes many: after a backlog of
    thousands of messages, several MiB of them. ``malloc_trim`` releases the pages of those
    holes (the blocks stay malloc's, and a page is only faulted in again when reused). The
    housekeeper calls it every pass; a pass with little to release costs a few microseconds.
    Nothing happens on another C library.
    """
    trim = _glibc("malloc_trim", ctypes.c_size_t)
    if trim is None:
        return False
    trim(0)
    return True


@functools.cache  # looked up at the first call: nothing is done at import
def _glibc(name: str, *argtypes: Any) -> Callable[..., int] | None:
    """glibc's function ``name`` (returning an int), or None on another C library."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        function = getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError, ValueError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    return cast("Callable[..., int]", function)


def settle() -> None:
    """Keep the garbage collector off what start-up made, which lives as long as we do.

    Importing anthropic alone leaves some 150,000 objects; a full collection walks them all
    (80 ms on a small machine) with the GIL held, and under load one comes every few hundred
    messages: the main loop then claims nothing for that long (the pickup tail). ``gc.freeze``
    moves them out of the collector's sight; what is made later is collected as before.
    Only for a daemon that owns its process; it unfreezes when it stops all the same.
    """
    gc.collect()
    gc.freeze()
