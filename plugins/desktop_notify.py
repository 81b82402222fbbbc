"""Desktop notifications for smarthole replies, with ``notify-send``.

Questions and errors are sent with critical urgency, everything else as normal. Where
``notify-send`` is not installed the plugin says so once in the log and does nothing.

Settings (all optional)::

    [plugins.desktop_notify]
    command = "notify-send"                               # the program to run
    kinds = ["response", "message", "question", "error"]  # which outbox items notify
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from dataclasses import dataclass, field

from smarthole import hookimpl

logger = logging.getLogger(__name__)

KINDS = ("response", "message", "question", "error")
TITLES = {"question": "smarthole asks", "error": "smarthole: error", "message": "smarthole"}
URGENT = ("question", "error")
TIMEOUT_SECONDS = 5


@dataclass(frozen=True)
class DesktopNotifySettings:
    command: str = "notify-send"
    kinds: list[str] = field(default_factory=lambda: list(KINDS))

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise ValueError(f"kinds has unknown kinds {unknown}; choose from {list(KINDS)}")


class Notifier:
    def __init__(self, settings: DesktopNotifySettings) -> None:
        self.settings = settings
        self.program = shutil.which(settings.command)
        if self.program is None:
            logger.info("%s is not installed; desktop notifications are off", settings.command)

    def notify(self, kind: str, text: str) -> None:
        if self.program is None or kind not in self.settings.kinds:
            return
        urgency = "critical" if kind in URGENT else "normal"
        command = [
            self.program,
            f"--urgency={urgency}",
            "--app-name=smarthole",
            "--",  # the title and the reply are text, never options (a reply may start with -)
            TITLES.get(kind, "smarthole"),
            text[:500],
        ]
        try:
            subprocess.run(command, timeout=TIMEOUT_SECONDS, check=True, capture_output=True)
        except (OSError, subprocess.SubprocessError) as exc:
            logger.warning("desktop notification failed: %s", exc)


_notifier: Notifier | None = None


@hookimpl
def register_settings(register):
    register("desktop_notify", DesktopNotifySettings)


@hookimpl
def startup(app):
    global _notifier
    _notifier = Notifier(app.settings("desktop_notify"))


@hookimpl
def deliver(outbox_item):
    if _notifier is not None:
        _notifier.notify(outbox_item.kind, outbox_item.text)
