"""Row 10: a schedule fires within 1 s of its slot (p99) while the daemon is busy.

A real daemon (the fake Messages API, echoing, in a process of its own) runs a
schedule ``every = "1s"`` while files arrive on ten other channels, 25 a second, each a turn.
Each fire's lateness is read from the store: the moment its message entered the ledger
(``inbox.received_at``) minus its slot, so it counts the whole way from the slot to a message
a worker can take. Slots the daemon was not up for are not counted (they are missed, not late).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path

from .adapters import message_file
from .procs import daemon, fake_server_process, make_home, wait_ready
from .report import Row, percentile

ARRIVALS_PER_SECOND = 25
CHANNELS = 10


def _lateness(database: Path) -> list[float]:
    connection = sqlite3.connect(database)
    try:
        rows = connection.execute(
            "SELECT f.slot_at, i.received_at FROM schedule_fires AS f "
            "JOIN inbox AS i ON i.message_id = f.message_id WHERE f.reason = 'slot'"
        ).fetchall()
    finally:
        connection.close()

    def moment(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    return [(moment(received) - moment(slot)).total_seconds() for slot, received in rows]


def _answered(database: Path) -> int:
    connection = sqlite3.connect(database)
    try:
        query = "SELECT COUNT(*) FROM inbox WHERE channel LIKE 'busy%' AND status = 'done'"
        return int(connection.execute(query).fetchone()[0])
    finally:
        connection.close()


def _feed(inbox: Path, staging: Path, stop: threading.Event) -> int:
    sent = 0
    while not stop.is_set():
        name = f"busy-{sent}.md"
        channel = f"busy{sent % CHANNELS}"
        (staging / name).write_bytes(
            message_file(f"work {sent}", message_id=name[:-3], channel=channel)
        )
        os.rename(staging / name, inbox / name)
        sent += 1
        stop.wait(1 / ARRIVALS_PER_SECOND)
    return sent


def schedule_rows(root: Path, seconds: float) -> list[Row]:
    schedule = {"name": "bench", "every": "1s", "text": "Tick.", "missed": "skip"}
    home = make_home(root / "schedules", schedules=[schedule], inbox={"rescan_seconds": 5.0})
    with fake_server_process() as url, daemon(home, url) as process:
        wait_ready(home, process)
        stop = threading.Event()
        counted: list[int] = []
        feeder = threading.Thread(
            target=lambda: counted.append(_feed(home.inbox, home.root / ".staging", stop))
        )
        feeder.start()
        time.sleep(seconds)  # the bench's own clock: the daemon fires on its own meanwhile
        stop.set()
        feeder.join()
    late = _lateness(home.database)
    if not late:
        return [Row("schedules: fire lateness p99 (busy)", None, "s", goal="<= 1 s")]
    detail = {
        "fires": len(late),
        "busy_files": counted[0] if counted else 0,
        "busy_answered": _answered(home.database),
    }
    return [
        Row("schedules: fire lateness p50 (busy)", percentile(late, 0.5), "s", detail=detail),
        Row(
            "schedules: fire lateness p99 (busy)",
            percentile(late, 0.99),
            "s",
            goal="<= 1 s",
            max_value=1.0,
            detail=detail,
        ),
        Row("schedules: fire lateness max (busy)", max(late), "s", detail=detail),
    ]
