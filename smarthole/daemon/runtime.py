"""The composition root: every part that reads or changes a home's state, built once.

One :class:`Runtime` per process (the daemon's, or a CLI command's) builds the store and each
part over it on first use (``functools.cached_property``), and hands them to whoever needs
them; nothing else constructs them, and the objects below this layer never import this
module. The daemon builds from its :class:`~smarthole.app.App` (:meth:`Runtime.build`, which
makes the parts that process messages at once, so a missing key fails at start); a command
from the home it names (:meth:`Runtime.for_home`), with no plugins: the daemon's event hook
follows the events table, so a command's events reach the plugins all the same.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import InternalError
from .storeparts import StoreParts

if TYPE_CHECKING:
    from ..agent.client import ModelClient
    from ..agent.history import HistoryCache
    from ..agent.loop import Agent
    from ..agent.memory import Memory
    from ..agent.titles import Titler
    from ..app import App
    from ..attachments import BlobStore
    from ..config import Config
    from ..conversations import Conversations
    from ..db.events import EventLog
    from ..db.outbox import OutboxRecord
    from ..db.store import Store
    from ..home import Home
    from ..hookspecs import PluginApp
    from ..pipeline.answers import Answers
    from ..pipeline.busy import Arrivals
    from ..pipeline.commands import CommandRegistry
    from ..pipeline.commands.runner import CommandRunner
    from ..pipeline.forget import Forgetter
    from ..pipeline.inbox import Inbox
    from ..pipeline.lifecycle import Lifecycle
    from ..pipeline.outbox import Outbox
    from ..pipeline.processor import Processor
    from ..teams import TeamRunner
    from .eventhook import EventHook
    from .scheduler import Scheduler


class Runtime(StoreParts):
    """The parts of one home, built on first use and handed down (the composition root)."""

    def __init__(
        self,
        home: Home,
        *,
        app: App | None = None,
        env: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.home = home
        self._app = app
        self.env = env
        self.stop = stop
        self._closed = False
        # What a built-in plugin keeps for this root's life (the desktop bridge, by name):
        # on the root, never in a module, so each app has its own.
        self.plugin_state: dict[str, Any] = {}

    @classmethod
    def build(
        cls,
        app: App,
        *,
        env: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> Runtime:
        """The daemon's root (or an in-process test's) over ``app``, attached to it so the
        built-in plugins reach the same parts. The parts that process messages are made now,
        before any worker thread could race to make one: a config the model client refuses
        (no API key, a cap with a model of unknown price) fails here, before anything starts."""
        from ..agent.budget import check_prices

        check_prices(app.config)
        root = cls(app.home, app=app, env=env, stop=stop)
        app.root = root
        root.processor  # noqa: B018 -- and with it every part a turn uses
        root.event_hook  # noqa: B018 -- woken by the event log from any thread
        return root

    @classmethod
    def of(cls, app: PluginApp) -> Runtime:
        """The root ``app`` is attached to; one is made (with lazy parts) if it has none.

        Hooks and tools see ``app`` as the plugin-facing :class:`PluginApp`; the object behind
        it is the daemon's :class:`App`, which is what a root is built over."""
        from ..app import App

        if not isinstance(app, App):
            raise InternalError(f"a composition root needs the daemon's App, not {type(app)}")
        root = getattr(app, "root", None)
        if not isinstance(root, Runtime):
            root = cls(app.home, app=app)
            app.root = root
        return root

    @classmethod
    def for_home(cls, home: Home, *, env: Mapping[str, str] | None = None) -> Runtime:
        """A CLI command's root: the home's store and its readers, no plugins, no app."""
        return cls(home, env=env)

    # -- what everything stands on ----------------------------------------------------------

    @property
    def app(self) -> App:
        if self._app is None:
            raise InternalError("this part needs the daemon's app; a command's root has none")
        return self._app

    @property
    def config(self) -> Config:
        """The daemon's ``app.config``, read at each use (a reload swaps it); a command's, read
        from ``config.toml`` once, when first wanted."""
        if self._app is not None:
            return self._app.config
        return self._config_on_disk

    @cached_property
    def _config_on_disk(self) -> Config:
        from ..config import load_config

        return load_config(self.home)

    @cached_property
    def store(self) -> Store:
        if self._app is not None:
            return self._app.store  # the app owns it, and closes it
        from ..db.store import Store
        from ..formats import utc_now

        self.home.state.mkdir(parents=True, exist_ok=True)
        return Store.open(self.home.database, clock=utc_now)

    # -- the store's parts: every process has them --------------------------------------------

    @cached_property
    def events(self) -> EventLog:
        """The event log; in the daemon, each commit wakes the event hook's follower."""
        from ..db.events import EventLog

        return EventLog(self.store, self._event_committed if self._app is not None else None)

    def _event_committed(self, event: Any) -> None:
        self.event_hook.wake(event)

    @cached_property
    def outbox_record(self) -> OutboxRecord:
        """What the outbox holds, for readers (the daemon's :attr:`outbox` also writes it)."""
        if self._app is not None:
            return self.outbox
        from ..db.outbox import OutboxRecord

        return OutboxRecord(self.home, self.store)

    @cached_property
    def conversations(self) -> Conversations:
        from ..conversations import Conversations

        return Conversations(self.store, self.events, self.ledger, self.pending)

    @cached_property
    def history(self) -> HistoryCache:
        from ..agent.blocks import AttachmentBlocks
        from ..agent.history import HistoryCache
        from ..agent.prompts import turn_context

        return HistoryCache(
            self.store,
            turn_context,
            attachments=AttachmentBlocks(self.blobs),
            history_turns=self.config.attachments.history_turns,
            notes=self.store.fork_note,  # a fork's first turn says what the original did after
        )

    @cached_property
    def blobs(self) -> BlobStore:
        """The attachments' blob store: one per process, so storing a blob and housekeeping's
        removal of one never interleave (its lock)."""
        from ..attachments import BlobStore

        return BlobStore(self.home.blobs)

    # -- the model: only for what calls it ----------------------------------------------------

    @cached_property
    def client(self) -> ModelClient:
        """The model client, built on first use (``ConfigError`` without an API key)."""
        from ..agent.client import ModelClient

        return ModelClient.from_environment(self.config.model, self.env)

    @cached_property
    def titler(self) -> Titler:
        """Titles and summaries; it asks for the model client only when titles are on."""
        from ..agent.titles import Titler

        settings = self.config.titles
        client = self.client if settings.enabled else None
        from ..agent.budget import ConfigClock, title_meters

        meters = title_meters(ConfigClock(lambda: self.config, self.store.clock), self.spend)
        return Titler(self.store, self.events, client, settings, self.usage, meters)

    # -- what processes messages: the daemon's ---------------------------------------------

    @cached_property
    def event_hook(self) -> EventHook:
        from ..db.cursors import Cursors
        from .eventhook import EventHook

        return EventHook(self.events, Cursors(self.store), self.app.plugins)

    @cached_property
    def outbox(self) -> Outbox:
        from ..pipeline.outbox import Outbox

        return Outbox(self.app, self.events)

    @cached_property
    def inbox(self) -> Inbox:
        from ..pipeline.inbox import Inbox

        app = self.app
        inbox = Inbox(
            app.home,
            app.config.inbox,
            self.store,
            self.ledger,
            self.events,
            app.plugins,
            attachments=app.config.attachments,
            blob_store=self.blobs,
        )
        inbox.answers = self.answers.take  # a file that answers an approval is applied at once
        return inbox

    @cached_property
    def answers(self) -> Answers:
        from ..pipeline.answers import Answers

        commands = self.message_commands
        answers = Answers(
            self.home, self.store, self.ledger, self.events, self.outbox, self.approvals
        )
        answers.is_command = commands.is_command
        return answers

    @cached_property
    def message_commands(self) -> CommandRegistry:
        """The commands a message may carry (``register_message_commands``)."""
        from ..pipeline.commands import collect_commands

        return collect_commands(self.app)

    @cached_property
    def command_runner(self) -> CommandRunner:
        from ..pipeline.commands.runner import CommandRunner

        parts = (self.message_commands, self.ledger, self.outbox, self.events, self.inbox)
        return CommandRunner(self.app, *parts, parts=self)

    @cached_property
    def arrivals(self) -> Arrivals:
        """The running turns, and the busy policy of the messages that come meanwhile."""
        from ..pipeline.busy import Arrivals

        commands = self.message_commands
        return Arrivals(
            self.app, self.ledger, self.events, is_command=commands.is_command, tasks=self.tasks
        )

    @cached_property
    def memory(self) -> Memory:
        """The agent's memory (its files in the store), with the limits of ``[memory]``."""
        from ..agent.memory import Memory
        from ..db.memory import MemoryTables

        return Memory(MemoryTables(self.store), self.events, lambda: self.config.memory)

    @cached_property
    def forgetter(self) -> Forgetter:
        """``smarthole forget``: rows, memory and files of what is forgotten, erased."""
        from ..db.forgetting import ForgetTables
        from ..pipeline.forget import Forgetter

        return Forgetter(self.home, self.store, ForgetTables(self.store), self.memory, self.blobs)

    @cached_property
    def agent(self) -> Agent:
        from ..agent.loop import Agent
        from ..agent.memory import TOOL_NAME, memory_tool

        if self.app.config.memory.enabled:  # the memory tool, offered from the start
            self.app.tools.replace_group(TOOL_NAME, [memory_tool(self.memory)])
        return Agent(
            self.client,
            self.app.tools,
            max_tool_iterations=self.app.config.conversation.max_tool_iterations,
        )

    @cached_property
    def teams(self) -> TeamRunner:
        from ..teams import TeamRunner

        return TeamRunner(self.app, self.agent, self.events, self.tasks, self.usage, stop=self.stop)

    @cached_property
    def lifecycle(self) -> Lifecycle:
        from ..pipeline.lifecycle import Lifecycle

        parts = (self.ledger, self.outbox, self.events, self.inbox, self.conversations)
        return Lifecycle(self.app, *parts, self.pending, self.tasks, arrivals=self.arrivals)

    @cached_property
    def processor(self) -> Processor:
        from ..db.forgetting import ForgetTables
        from ..pipeline.processor import Processor
        from ..pipeline.replaying import Replays

        return Processor(
            self.app,
            self.agent,
            self.ledger,
            self.outbox,
            self.events,
            self.inbox,
            lifecycle=self.lifecycle,
            conversations=self.conversations,
            pending=self.pending,
            history=self.history,
            usage=self.usage,
            teams=self.teams,
            titler=self.titler,
            stop=self.stop,
            replays=Replays(self.store),
            memory=self.memory,
            forgets=ForgetTables(self.store).generation,
            commands=self.command_runner,
            arrivals=self.arrivals,
        )

    @cached_property
    def scheduler(self) -> Scheduler:
        """Schedules' due slots into the ledger; the main loop ticks it."""
        from .scheduler import Scheduler

        return Scheduler(self.app, self.ledger, self.events, self.schedules, self.env)

    def close(self) -> None:
        """Close what this root opened: the model client, and a command's store (the daemon's
        app owns its own store)."""
        if self._closed:
            return
        self._closed = True
        if "client" in self.__dict__:
            self.client.close()
        if self._app is None and "store" in self.__dict__:
            self.store.close()
