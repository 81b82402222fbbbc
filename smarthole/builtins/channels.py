"""The built-in plugin that runs the channels other plugins offer (``register_channels``).

At ``startup`` it collects the channels, gives each a :class:`ChannelHost` over the home
(its records, the inbox, the event log) and starts it; ``deliver`` hands each outbox item to
the channel that brought its message in (none: it is not a channel's to deliver); at
``shutdown`` it stops them, last started first. The running channels are kept on the app's
composition root (``root.plugin_state``), never in this module. It knows no channel by name.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import hookimpl
from ..errors import PluginError

if TYPE_CHECKING:
    from ..channels import Channel
    from ..db.outbox import OutboxItem
    from ..hookspecs import PluginApp

logger = logging.getLogger(__name__)

KEY = "channels"
"""Where the running channels are kept among the root's ``plugin_state``; also the plugin
data that lists every channel a daemon ran (for ``smarthole status``)."""


def kept(app: PluginApp) -> dict[str, Any]:
    """What the built-in plugins keep on ``app``'s root (empty for an app with none)."""
    from ..daemon.runtime import Runtime

    root = getattr(app, "root", None)
    return root.plugin_state if isinstance(root, Runtime) else {}


def running(app: PluginApp) -> dict[str, Channel]:
    """The channels ``app`` runs, by name, in the order they started."""
    found = kept(app).get(KEY)
    return found if isinstance(found, dict) else {}


@hookimpl(trylast=True)
def startup(app: PluginApp) -> None:
    plugins = getattr(app, "plugins", None)
    if plugins is None or getattr(app, "config", None) is None:
        return  # a test calling the hook bare: no channels to start
    offered: list[Channel] = []
    plugins.call_strict("register_channels", register=offered.append, app=app)
    if not offered:
        return
    from ..channels import Channel, ChannelHost
    from ..daemon.runtime import Runtime
    from ..pipeline.message import CHANNEL_PATTERN

    root = Runtime.of(app)
    channels: dict[str, Channel] = kept(app).setdefault(KEY, {})
    for channel in offered:
        if not isinstance(channel, Channel) or not CHANNEL_PATTERN.fullmatch(channel.name or ""):
            raise PluginError(f"register_channels: {channel!r} is not a named Channel")
        if channel.name in channels:
            raise PluginError(f"register_channels: two channels are named {channel.name!r}")
        host = ChannelHost(
            channel.name,
            channel.records(root.store),
            app.home.inbox,
            app.config.inbox.max_message_bytes,
            attachments=app.config.attachments,
            clock=app.now,
            emit=partial(root.events.emit, channel=channel.name),
            ledger=root.ledger,
        )
        root.store.plugin_data(KEY).set(channel.name, {"started_at": root.store.now()})
        channel.start(host)
        channels[channel.name] = channel
        host.event("channel_started")  # a page showing the channels looks again
        logger.info("channel %s started", channel.name)


@hookimpl
def deliver(outbox_item: OutboxItem, app: PluginApp) -> None:
    for channel in running(app).values():
        if channel.brought_in(outbox_item.in_reply_to):
            channel.deliver(outbox_item)
            return


@hookimpl
def shutdown(app: PluginApp) -> None:
    channels = kept(app).pop(KEY, None)
    if not isinstance(channels, dict):
        return
    for name, channel in reversed(list(channels.items())):
        try:
            channel.stop()
        except Exception:  # one channel's fault must not keep the others running
            logger.exception("channel %s did not stop cleanly", name)
        host = getattr(channel, "host", None)
        if host is not None:
            host.event("channel_stopped")
