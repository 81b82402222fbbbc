"""The channel interface.

A channel subclasses :class:`Channel`; smarthole calls ``start(host)`` once the daemon is up,
``deliver(item)`` for each outbox item answering a message the channel brought in, and
``stop()`` when the daemon stops. Everything durable goes through the :class:`ChannelHost` it
is given: what it took in, what it owes, how it stands.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from .records import ChannelRecords

if TYPE_CHECKING:
    from ..db.outbox import OutboxItem
    from ..db.store import Store
    from .host import ChannelHost


class Channel(ABC):
    """One way in and out of smarthole. Subclass it and register it (``register_channels``).

    ``name`` is unique among the channels of a daemon; it names the channel's records (its
    plugin data) and its line in ``smarthole status``.
    """

    name: str = ""
    host: ChannelHost

    def start(self, host: ChannelHost) -> None:
        """Begin: connect, listen, send what the records still owe. Must not block long:
        run the channel's work in a thread of its own, stopped and joined in :meth:`stop`."""
        self.host = host

    @abstractmethod
    def stop(self) -> None:
        """Stop and join the channel's threads; what is not sent stays in the records."""

    def records(self, store: Store) -> ChannelRecords:
        """The channel's durable records (its plugin data, named after it)."""
        return ChannelRecords(store, self.name)

    def brought_in(self, message_id: str) -> bool:
        """Whether the inbox message ``message_id`` came through this channel."""
        return self.host.records.message(message_id) is not None

    def deliver(self, item: OutboxItem) -> None:
        """An outbox item answers a message this channel brought in: keep it, then send it.

        The default keeps a :class:`Delivery` in the records (once, however often the item
        comes) and calls :meth:`wake`; the channel's own thread sends what is
        :meth:`ChannelHost.due`. Called on the message's path: never send here.
        """
        if self.host.keep(item):
            self.wake()

    def wake(self) -> None:  # noqa: B027 - optional: a channel that polls needs no wake-up
        """Something waits to be sent: send it soon (called from any thread)."""
