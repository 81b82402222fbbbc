"""POST every outbox item as JSON to a URL, with retries, without ever slowing replies down.

``deliver`` only queues the item; a background thread sends it, retrying failures with
backoff. On shutdown the thread gets a couple of seconds to send what is queued; anything
left is logged as dropped (the outbox files are still on disk).

Settings::

    [plugins.webhook]
    url = "https://example.com/smarthole"   # required to send anything
    max_attempts = 5
    backoff_seconds = 1.0                    # doubles after each failed attempt
    timeout_seconds = 10.0
    headers = { Authorization = "Bearer ..." }
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from smarthole import hookimpl

logger = logging.getLogger(__name__)

DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class WebhookSettings:
    url: str = ""
    max_attempts: int = 5
    backoff_seconds: float = 1.0
    timeout_seconds: float = 10.0
    headers: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.url and urlparse(self.url).scheme not in ("http", "https"):
            raise ValueError(f"url must start with http:// or https:// (got {self.url!r})")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


class Sender:
    """A queue and the thread that empties it."""

    def __init__(self, settings: WebhookSettings) -> None:
        self.settings = settings
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="smarthole-webhook", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=DRAIN_SECONDS)
        self.stopping.set()
        self.thread.join(timeout=self.settings.timeout_seconds + 1)
        dropped = self.queue.qsize()
        if dropped:
            logger.warning("webhook: %d outbox item(s) not sent before shutdown", dropped)

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None or self.stopping.is_set():
                return
            self._send(item)

    def _send(self, item: dict[str, Any]) -> None:
        body = json.dumps(item).encode()
        headers = {
            "Content-Type": "application/json",
            **{str(k): str(v) for k, v in self.settings.headers.items()},
        }
        delay = self.settings.backoff_seconds
        for attempt in range(1, self.settings.max_attempts + 1):
            request = urllib.request.Request(
                self.settings.url, data=body, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=self.settings.timeout_seconds):
                    return
            except (urllib.error.URLError, OSError) as exc:
                logger.warning("webhook: attempt %d for %s failed: %s", attempt, item["id"], exc)
            if attempt < self.settings.max_attempts and self.stopping.wait(delay):
                return
            delay *= 2
        logger.error(
            "webhook: gave up on %s after %d attempts", item["id"], self.settings.max_attempts
        )


_sender: Sender | None = None


@hookimpl
def register_settings(register):
    register("webhook", WebhookSettings)


@hookimpl
def startup(app):
    global _sender
    settings = app.settings("webhook")
    if not settings.url:
        logger.info("webhook: no [plugins.webhook] url configured; not sending anything")
        return
    _sender = Sender(settings)
    _sender.start()


@hookimpl
def deliver(outbox_item):
    if _sender is not None:
        _sender.queue.put(outbox_item.as_dict())


@hookimpl
def shutdown(app):
    global _sender
    if _sender is not None:
        _sender.stop()
        _sender = None
