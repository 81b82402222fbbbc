"""How long to wait before trying again: the one formula behind every retry.

A wait doubles after each failure, from ``base`` up to ``cap``. ``jitter`` adds up to that
fraction more, drawn for each wait, so that many clients failing together do not retry in
step. A server that says when to come back (``retry_after``) is believed, up to the cap. Each
caller keeps its own numbers: a message's next attempt (``[retry]`` in config.toml), a title
or summary, a stranded claim, an MCP server's restart, the desktop bridge's reconnect.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

MAX_DOUBLINGS = 64  # beyond, every cap is long reached; and 2.0 ** n stays a float


@dataclass(frozen=True)
class Backoff:
    """Waits that double from ``base`` to ``cap``, with up to ``jitter`` (a fraction) more.

    The jitter is drawn after the cap, so a wait may pass the cap by that fraction when
    ``jitter_past_cap`` (the desktop bridge's "30 s plus up to a tenth"); else the cap holds.
    """

    base: float
    cap: float
    jitter: float = 0.0
    jitter_past_cap: bool = False

    def delay(
        self,
        failures: int,
        *,
        retry_after: float | None = None,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> float:
        """The wait after ``failures`` failures in a row (the first waits ``base``)."""
        if retry_after is not None:
            return min(self.cap, max(retry_after, 0.0))
        doublings = min(max(failures - 1, 0), MAX_DOUBLINGS)
        wait = min(self.cap, self.base * 2.0**doublings)
        if self.jitter:
            wait += uniform(0, wait * self.jitter)
            if not self.jitter_past_cap:
                wait = min(self.cap, wait)
        return wait
