"""The runtime: everything that processes messages, built from an ``App``."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from ..agent.client import ModelClient
from ..agent.loop import Agent
from ..agent.titles import Titler
from ..app import App
from ..db.events import EventLog
from ..db.ledger import Ledger
from ..pipeline.inbox import Inbox
from ..pipeline.outbox import Outbox
from ..pipeline.processor import Processor
from ..teams import TeamRunner
from .eventhook import EventHook


@dataclass
class Runtime:
    """Everything that processes messages, built from an :class:`App`."""

    app: App
    ledger: Ledger
    events: EventLog
    outbox: Outbox
    inbox: Inbox
    processor: Processor
    titler: Titler
    client: ModelClient
    event_hook: EventHook

    @classmethod
    def build(
        cls,
        app: App,
        *,
        env: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> Runtime:
        store = app.store
        event_hook = EventHook(store, app.plugins)
        events = EventLog(store, event_hook.wake)
        ledger = Ledger(store)
        outbox = Outbox(app.home, store, app.plugins, events)
        inbox = Inbox(app.home, app.config.inbox, store, ledger, events, app.plugins)
        client = ModelClient.from_environment(app.config.model, env)
        titler = Titler(store, events, client, app.config.titles)
        agent = Agent(
            client,
            app.tools,
            max_tool_iterations=app.config.conversation.max_tool_iterations,
        )
        processor = Processor(
            app,
            agent,
            ledger,
            outbox,
            events,
            inbox,
            teams=TeamRunner(app, agent, events, stop=stop),
            titler=titler,
            stop=stop,
        )
        return cls(app, ledger, events, outbox, inbox, processor, titler, client, event_hook)

    def close(self) -> None:
        self.client.close()
