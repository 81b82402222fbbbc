"""The baselines' own processes; smarthole is never imported here.

python children.py watchdog FOLDER CLAIMED default|off
    A bare watchdog Observer on FOLDER; every event renames whatever is in FOLDER into
    CLAIMED (as the daemon's claim does). ``off`` patches watchdog's move pairing away
    (InotifyMoveEventGrouper.delay = 0). Prints {"ready": true}, runs until stdin closes.
python children.py sdk BASE_URL
    A bare loop of anthropic's streaming call, batch by batch: each line read names a
    BODIES.json (a list of request bodies); each body is sent once, and the answer is a line
    with the CPU time and the context switches of the batch's calls alone. (The first body is
    sent once more before, as a warm-up: lazy imports and the connection, as the daemon's first
    call.) The bench runs a batch beside each batch of the daemon's, so that both see the
    machine alike.
python children.py import
    ``import anthropic`` and nothing else; prints its VmRSS.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
from collections.abc import Callable
from pathlib import Path


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def watchdog(folder: str, claimed: str, pairing: str) -> None:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    if pairing == "off":
        from watchdog.observers import inotify_move_event_grouper

        inotify_move_event_grouper.InotifyMoveEventGrouper.delay = 0

    def claim() -> None:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not entry.name.startswith("."):
                    with contextlib.suppress(FileNotFoundError):
                        os.rename(entry.path, os.path.join(claimed, entry.name))

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            claim()

    observer = Observer()
    observer.schedule(Handler(), folder, recursive=False)
    observer.start()
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.read()
    observer.stop()
    observer.join()


def sdk_caller(base_url: str) -> Callable[[dict], None]:
    """One streamed call of anthropic's SDK per request body (its ``stream`` key aside)."""
    import anthropic

    client = anthropic.Anthropic(api_key="bench", base_url=base_url, max_retries=0)

    def call(body: dict) -> None:
        params = {k: v for k, v in body.items() if k != "stream"}
        with client.messages.stream(**params) as stream:
            for _event in stream:
                pass
            stream.get_final_message()

    return call


def cost_of(call: Callable[[dict], None], bodies: list[dict]) -> dict[str, float]:
    """The CPU seconds and context switches of one call per body."""
    start, switches = os.times(), _switches()
    for body in bodies:
        call(body)
    end = os.times()
    return {
        "cpu_seconds": (end.user - start.user) + (end.system - start.system),
        "switches": _switches() - switches,
    }


def _switches() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nvcsw + usage.ru_nivcsw


def sdk(base_url: str) -> None:
    call, warm = sdk_caller(base_url), False
    for line in sys.stdin:
        bodies = json.loads(Path(line.strip()).read_text())
        if bodies and not warm:
            call(bodies[0])
            warm = True
        print(json.dumps({"calls": len(bodies), **cost_of(call, bodies)}), flush=True)


def import_only() -> None:
    import anthropic  # noqa: F401

    print(json.dumps({"rss_mib": rss_mib()}))


def main(argv: list[str]) -> None:
    kind, *args = argv
    if kind == "watchdog":
        watchdog(*args)
    elif kind == "sdk":
        sdk(*args)
    elif kind == "import":
        import_only()
    else:
        raise SystemExit(f"unknown child {kind!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
