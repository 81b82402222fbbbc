"""Stranded claims: files claimed from the inbox that a fault kept out of the ledger.

A disk or database fault (EIO, a full disk, a locked database) between the claim and the
ledger leaves the file in ``.smarthole/claimed/``. It is retried with backoff without a
restart, and reported to ``smarthole status`` (another process) through a small JSON file.
That file is on the disk that may be full, so ``status`` also looks at the folder itself
(:func:`unowned_claims`).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backoff import Backoff
from ..formats import display_name, iso
from ..fsutil import atomic_write
from .watch import is_candidate

if TYPE_CHECKING:
    from ..db.ledger import Ledger
    from ..home import Home

logger = logging.getLogger(__name__)

WAIT = Backoff(base=0.5, cap=60.0)
# A claim younger than this may be one the daemon is recording right now (renamed into the
# folder, not yet committed; the commit may wait out SQLite's 30s busy timeout), so a reader
# in another process does not call it stranded yet.
CLAIM_SETTLE_SECONDS = 60.0


@dataclass
class StrandedClaim:
    """A claimed file that a fault of the disk or the database kept out of the ledger."""

    file: str
    source_name: str
    attempts: int
    last_error: str
    since: str
    next_attempt_at: str
    retry_at: float = field(default=0.0, repr=False)  # time.monotonic(); not reported
    name: str = field(default="", repr=False)  # the inbox name as the system gave it

    def shown(self) -> dict[str, Any]:
        data = asdict(self)
        del data["retry_at"], data["name"]
        return data


def read_stranded(home: Home) -> list[dict[str, Any]]:
    """The stranded claims a daemon last reported for ``home`` (for ``smarthole status``)."""
    try:
        items = json.loads(home.stranded_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in items if isinstance(item, dict) and Path(item["file"]).exists()]


def unowned_claims(home: Home, ledger: Ledger) -> list[tuple[Path, datetime]]:
    """Claimed files no unanswered message owns, with when each came into the folder.

    They are what ``Inbox.recover`` takes in or releases: a file the ledger does not name was
    kept out of it by a fault (or a stop between claim and commit), and one whose message is
    answered was left behind by a crash. The time is the file's ctime, which the claim's
    rename sets: a claim seconds old may still be on its way into the ledger.
    """
    try:
        paths = sorted(p for p in home.claimed.iterdir() if is_candidate(p.name))
    except FileNotFoundError:
        return []
    # Asked after the listing, so a claim recorded meanwhile is known. Compared by name: the
    # ledger's paths are the daemon's spelling of the home, which may not be ours.
    answered = {e.claimed_path.name for e in ledger.answered_with_claims() if e.claimed_path}
    owned = {Path(path).name for path in ledger.claimed_paths()} - answered
    found = []
    for path in paths:
        if path.name in owned:
            continue
        try:
            changed = path.stat().st_ctime
        except FileNotFoundError:
            continue  # answered and removed since the listing
        found.append((path, datetime.fromtimestamp(changed, UTC)))
    return found


class StrandedClaims:
    """The stranded claims of one daemon, with their backoff."""

    def __init__(self, report: Path) -> None:
        self.report = report
        self._claims: dict[Path, StrandedClaim] = {}

    def add(self, claimed: Path, name: str, exc: Exception) -> None:
        error = " ".join(str(exc).split()) or type(exc).__name__
        previous = self._claims.get(claimed)
        attempts = previous.attempts + 1 if previous else 1
        delay = WAIT.delay(attempts)
        now = datetime.now(UTC)
        self._claims[claimed] = StrandedClaim(
            file=str(claimed),
            source_name=display_name(name),
            attempts=attempts,
            last_error=f"{type(exc).__name__}: {error}",
            since=previous.since if previous else iso(now),
            next_attempt_at=iso(now + timedelta(seconds=delay)),
            retry_at=time.monotonic() + delay,
            name=name,
        )
        logger.error(
            "claimed %s but could not take it in (%s: %s); trying again in %.1fs",
            display_name(name),
            type(exc).__name__,
            error,
            delay,
        )
        self.save()

    def discard(self, claimed: Path) -> None:
        if self._claims.pop(claimed, None) is not None:
            logger.info("stranded claim %s is taken now", claimed.name)
            self.save()

    def due(self) -> list[StrandedClaim]:
        """The claims to try again now; a file that has gone is forgotten."""
        now = time.monotonic()
        gone = [path for path in self._claims if not path.exists()]
        for path in gone:
            del self._claims[path]
        if gone:
            self.save()
        return [claim for claim in self._claims.values() if claim.retry_at <= now]

    def next_at(self) -> float | None:
        return min((claim.retry_at for claim in self._claims.values()), default=None)

    def all(self) -> list[StrandedClaim]:
        return list(self._claims.values())

    def save(self) -> None:
        """Tell ``smarthole status`` what is stranded; best effort."""
        try:
            if not self._claims:
                self.report.unlink(missing_ok=True)
                return
            items = [claim.shown() for claim in self._claims.values()]
            atomic_write(self.report, json.dumps(items, indent=1).encode())
        except OSError as exc:  # the disk that stranded the claim may refuse this too
            logger.debug("cannot write %s: %s", self.report, exc)
