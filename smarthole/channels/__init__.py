"""Channels: how people reach smarthole from elsewhere (the desktop router, email, a chat).

A channel is one implementation of one small interface (:class:`Channel`): it starts and stops
with the daemon; it takes messages in with an id of its own world (an *external id*), each
claimed exactly once, keyed by the channel and that id (:meth:`ChannelHost.take`); it delivers
the replies, questions, approval items and notifications of the messages it brought in, each
kept in a durable record until it is sent (:meth:`ChannelHost.due`, :meth:`ChannelHost.sent`);
and it says how it stands for ``smarthole status`` and the web view
(:meth:`ChannelHost.set_status`). A plugin offers channels with the ``register_channels`` hook;
nothing else in smarthole knows which channels exist. See ``docs/channels.md``.
"""

from __future__ import annotations

from .base import ChannelState, Delivery, Incoming, Taken
from .channel import Channel
from .host import ChannelHost
from .records import ChannelRecords

__all__ = [
    "Channel",
    "ChannelHost",
    "ChannelRecords",
    "ChannelState",
    "Delivery",
    "Incoming",
    "Taken",
]
