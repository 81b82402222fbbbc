"""The bridge as a built-in plugin: started and stopped with the daemon, fed by ``deliver``.

Does nothing unless ``[desktop] enabled = true``. A reply goes back to the desktop only when
the message it answers came from the desktop (see ``records``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ... import __version__, hookimpl
from ...db.events import EventLog

if TYPE_CHECKING:
    from ...db.outbox import OutboxItem
    from ...db.store import Store
    from ...hookspecs import PluginApp

logger = logging.getLogger(__name__)

# The bridge of the app that is running in this process (the daemon runs one app at a time).
_running: dict[str, Any] = {}


@hookimpl
def startup(app: PluginApp) -> None:
    # An app without a config (a test calling the hook bare) has no bridge to start either.
    settings = getattr(getattr(app, "config", None), "desktop", None)
    if settings is None or not settings.enabled:
        return
    # Imported here: a daemon without the bridge does not keep its modules (0.35 MiB).
    from .connection import Bridge, Identity
    from .intake import Intake
    from .records import BridgeRecords

    store = app.store
    records = BridgeRecords(store)
    records.prune(app.now())
    events = EventLog(store)  # the daemon's event hook follows the table: it sees these too
    bridge = Bridge(
        Identity(settings.url, settings.name, settings.description, __version__),
        Intake(app.home.inbox, settings.channel, app.config.inbox.max_message_bytes, records),
        records,
        title_for=lambda conversation: _title(store, conversation, settings.name),
        emit=lambda type, **data: _emit(events, type, channel=settings.channel, **data),
    )
    _running["bridge"], _running["records"] = bridge, records
    bridge.start()


@hookimpl
def deliver(outbox_item: OutboxItem) -> None:
    bridge, records = _running.get("bridge"), _running.get("records")
    if bridge is None or records is None:
        return
    if records.message(outbox_item.in_reply_to) is None:
        return  # not from the desktop: it has nowhere to show this
    from .protocol import Notification

    if records.queue(Notification.for_item(outbox_item, outbox_item.in_reply_to)):
        bridge.wake()


@hookimpl
def shutdown(app: PluginApp) -> None:
    bridge = _running.pop("bridge", None)
    _running.pop("records", None)
    if bridge is not None:
        bridge.stop()


def _emit(events: EventLog, type: str, **fields: Any) -> None:
    events.emit(type, **fields)


def _title(store: Store, conversation_id: str | None, name: str) -> str:
    """The conversation's title when it has one, else the client's name."""
    conversation = store.conversation(conversation_id) if conversation_id else None
    return conversation.title if conversation and conversation.title else name
