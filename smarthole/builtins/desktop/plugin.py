"""The bridge as a channel (``smarthole.channels``): started and stopped with the daemon by
the channel host, fed the replies to the messages it brought in.

Offers nothing unless ``[desktop] enabled = true``. A reply goes back to the desktop only when
the message it answers came from the desktop (see ``records``). The running bridge is kept on
the app's composition root (``daemon.runtime.Runtime``), whose event log and ledger it uses;
nothing is kept in this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import __version__, hookimpl
from ...channels import Channel
from ..channels import kept

if TYPE_CHECKING:
    from ...channels import ChannelHost
    from ...config import DesktopSettings
    from ...db.events import EventLog
    from ...db.outbox import OutboxItem
    from ...db.store import Store
    from ...hookspecs import PluginApp
    from .connection import Bridge
    from .records import BridgeRecords

logger = logging.getLogger(__name__)

KEY = "desktop"
"""Where the running bridge is kept among the root's ``plugin_state``."""


@dataclass(frozen=True)
class Running:
    """The bridge an app runs, and its records."""

    bridge: Bridge
    records: BridgeRecords


def running(app: PluginApp) -> Running | None:
    """The bridge ``app`` runs, if it runs one."""
    found = kept(app).get(KEY)
    return found if isinstance(found, Running) else None


class DesktopChannel(Channel):
    """The SmartHole desktop router: routed messages in over WebSocket, notifications out."""

    name = "desktop"

    def __init__(self, app: PluginApp, settings: DesktopSettings) -> None:
        self.app = app
        self.settings = settings

    def records(self, store: Store) -> BridgeRecords:
        from .records import BridgeRecords

        return BridgeRecords(store)

    def start(self, host: ChannelHost) -> None:
        super().start(host)
        # Imported here: a daemon without the bridge does not keep its modules (0.35 MiB).
        from ...daemon.runtime import Runtime
        from .connection import Bridge, Identity
        from .intake import Intake
        from .records import BridgeRecords

        app, settings = self.app, self.settings
        root = Runtime.of(app)
        store, events = root.store, root.events  # the event hook follows the table: it sees these
        records = host.records
        assert isinstance(records, BridgeRecords)
        records.prune(app.now())
        limit = app.config.inbox.max_message_bytes
        bridge = Bridge(
            Identity(settings.url, settings.name, settings.description, __version__),
            Intake(app.home.inbox, settings.channel, limit, records, root.ledger),
            records,
            title_for=lambda conversation: _title(store, conversation, settings.name),
            emit=lambda type, **data: _emit(events, type, channel=settings.channel, **data),
        )
        kept(app)[KEY] = Running(bridge, records)
        bridge.start()

    def deliver(self, item: OutboxItem) -> None:
        deliver(item, self.app)

    def stop(self) -> None:
        found = kept(self.app).pop(KEY, None)
        if isinstance(found, Running):
            found.bridge.stop()


@hookimpl
def register_channels(register: Callable[[Channel], None], app: PluginApp) -> None:
    # An app without a config (a test calling the hook bare) has no bridge to start either.
    settings = getattr(getattr(app, "config", None), "desktop", None)
    if settings is not None and settings.enabled:
        register(DesktopChannel(app, settings))


def deliver(outbox_item: OutboxItem, app: PluginApp) -> None:
    """Queue ``outbox_item`` for the desktop if the message it answers came from there."""
    found = running(app)
    if found is None:
        return
    if found.records.message(outbox_item.in_reply_to) is None:
        return  # not from the desktop: it has nowhere to show this
    from .protocol import Notification

    if found.records.queue(Notification.for_item(outbox_item, outbox_item.in_reply_to)):
        found.bridge.wake()


def _emit(events: EventLog, type: str, **fields: Any) -> None:
    events.emit(type, **fields)


def _title(store: Store, conversation_id: str | None, name: str) -> str:
    """The conversation's title when it has one, else the client's name."""
    conversation = store.conversation(conversation_id) if conversation_id else None
    return conversation.title if conversation and conversation.title else name
