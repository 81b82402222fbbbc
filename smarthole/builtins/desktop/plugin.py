"""The bridge as a channel (``smarthole.channels``): started and stopped with the daemon by
the channel host, fed the replies to the messages it brought in.

Offers nothing unless ``[desktop] enabled = true``. A reply goes back to the desktop only when
the message it answers came from the desktop (its records say so); it is kept as the channel
API's ``Delivery`` (``host.keep``) and the bridge is woken to send it. The running channel is
kept on the app's composition root (``daemon.runtime.Runtime``) by the channel host, with its
bridge; nothing is kept in this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import __version__, hookimpl
from ...channels import Channel
from .. import channels

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

NAME = "desktop"


def running(app: PluginApp) -> DesktopChannel | None:
    """The desktop channel ``app`` runs, if it runs one."""
    found = channels.running(app).get(NAME)
    return found if isinstance(found, DesktopChannel) else None


class DesktopChannel(Channel):
    """The SmartHole desktop router: routed messages in over WebSocket, notifications out."""

    name = NAME

    def __init__(self, app: PluginApp, settings: DesktopSettings) -> None:
        self.app = app
        self.settings = settings
        self.bridge: Bridge | None = None

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
        records.upgrade()
        records.prune(app.now())
        self.bridge = Bridge(
            Identity(settings.url, settings.name, settings.description, __version__),
            Intake(host, settings.channel),
            host,
            title_for=lambda conversation: _title(store, conversation, settings.name),
            emit=lambda type, **data: _emit(events, type, channel=settings.channel, **data),
        )
        self.bridge.start()

    def wake(self) -> None:
        if self.bridge is not None:
            self.bridge.wake()

    def stop(self) -> None:
        bridge, self.bridge = self.bridge, None
        if bridge is not None:
            bridge.stop()


@hookimpl
def register_channels(register: Callable[[Channel], None], app: PluginApp) -> None:
    # An app without a config (a test calling the hook bare) has no bridge to start either.
    settings = getattr(getattr(app, "config", None), "desktop", None)
    if settings is not None and settings.enabled:
        register(DesktopChannel(app, settings))


def deliver(outbox_item: OutboxItem, app: PluginApp) -> None:
    """Keep ``outbox_item`` for the desktop if the message it answers came from there."""
    channel = running(app)
    if channel is not None and channel.brought_in(outbox_item.in_reply_to):
        channel.deliver(outbox_item)


def _emit(events: EventLog, type: str, **fields: Any) -> None:
    events.emit(type, **fields)


def _title(store: Store, conversation_id: str | None, name: str) -> str:
    """The conversation's title when it has one, else the client's name."""
    conversation = store.conversation(conversation_id) if conversation_id else None
    return conversation.title if conversation and conversation.title else name
