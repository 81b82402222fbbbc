"""The daemon: one home's lock, recovery at start, the main loop, workers and signals.

The main loop claims inbox files (woken by watchdog, and by a periodic rescan), then hands the
head message of each idle channel to a worker thread. A channel's messages run strictly in
order; different channels run at the same time. A deferred message waits in the database, not
in a worker. Signals are owned by :func:`smarthole.daemon.signals.capture_signals` from the
first step of start-up to the last of shutdown. SIGINT/SIGTERM stop the daemon: the loop stops
claiming, in-flight turns stop at their next committed boundary (within
``shutdown_grace_seconds``), and whatever was cut off resumes on the next start; a second
signal forces an immediate exit.
SIGHUP is logged and ignored (reloading is not supported yet).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..agent.client import ModelClient
from ..agent.loop import Agent
from ..agent.titles import Titler
from ..app import App
from ..db.events import EventLog
from ..db.ledger import Ledger, LedgerEntry
from ..db.pending import PendingQuestions
from ..db.store import Store
from ..db.tasks import Tasks
from ..formats import Clock, utc_now
from ..home import Home, HomeLock
from ..mcpservers import McpServers
from ..pipeline.inbox import Inbox, Watcher
from ..pipeline.outbox import Outbox
from ..pipeline.processor import Processor
from ..teams import TeamRunner
from .signals import STOP_SIGNALS, Signals, capture_signals

logger = logging.getLogger(__name__)

WORKER_BACKOFF_SECONDS = 2.0


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

    @classmethod
    def build(
        cls,
        app: App,
        *,
        env: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
    ) -> Runtime:
        store = app.store
        events = EventLog(store, lambda event: app.plugins.notify("event", event=event))
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
            app=app,
            agent=agent,
            ledger=ledger,
            outbox=outbox,
            events=events,
            inbox=inbox,
            teams=TeamRunner(app, agent, events, stop=stop),
            titler=titler,
            stop=stop,
        )
        return cls(app, ledger, events, outbox, inbox, processor, titler, client)

    def close(self) -> None:
        self.client.close()


class Daemon:
    """Runs one home until stopped (or, with ``once``, until nothing is runnable)."""

    def __init__(
        self,
        home: Home,
        *,
        once: bool = False,
        env: Mapping[str, str] | None = None,
        extra_plugins: Iterable[tuple[str, object]] = (),
        clock: Clock = utc_now,
        handle_signals: bool = True,
    ) -> None:
        self.home = home
        self.once = once
        self.env = os.environ if env is None else env
        self.extra_plugins = list(extra_plugins)
        self.clock = clock
        self.handle_signals = handle_signals
        self.stop_event = threading.Event()
        self.wake_event = threading.Event()
        self.ready = threading.Event()
        self._busy: set[str] = set()
        self._busy_lock = threading.Lock()
        self._jobs: queue.Queue[LedgerEntry | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._grace = 0.0
        self._clean = True
        self.started = False
        self.summary: dict[str, Any] = {}

    # -- control ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        self.stop_event.set()
        self.wake_event.set()

    def wake(self) -> None:
        self.wake_event.set()

    def _on_signal(self, received: Signals) -> None:
        """Called by the signal watcher thread (not in signal context): say what happens next."""
        if received not in STOP_SIGNALS:
            logger.warning("Received %s; reload is not supported yet, still running", received.name)
            return
        busy = len(self._busy_channels())
        if busy:
            logger.warning(
                "Received %s; stopping: waiting up to %.0f s for %d turn(s); "
                "press Ctrl-C again to exit now",
                received.name,
                self._grace,
                busy,
            )
        else:
            logger.warning("Received %s; stopping", received.name)
        self.request_stop()

    # -- run -------------------------------------------------------------------------------

    def run(self) -> int:
        """Run until stopped; returns the exit code (130 after Ctrl-C, else 0)."""
        try:
            with capture_signals(self._on_signal, enabled=self.handle_signals) as captured:
                self.home.ensure()
                lock = HomeLock(self.home.lock_file)
                lock.acquire()
                try:
                    self._run_locked()
                finally:
                    lock.release()
        finally:
            self.ready.set()  # whoever waits for start-up must not wait for ever
        return captured.exit_code()

    def _run_locked(self) -> None:
        Store.open(self.home.database, clock=self.clock, recover=True).close()
        app = App.load(self.home, extra_plugins=self.extra_plugins, env=self.env, clock=self.clock)
        self._grace = app.config.daemon.shutdown_grace_seconds
        try:
            runtime = Runtime.build(app, env=self.env, stop=self.stop_event)
            try:
                self._serve(app, runtime)
            finally:
                runtime.close()
        finally:
            if self._clean:  # abandoned turns still use the store; the process exit closes it
                app.close()
        if self.started:
            logger.info("smarthole stopped")

    def _serve(self, app: App, runtime: Runtime) -> None:
        """Start up, run the loop until stopped, stop the workers."""
        watcher: Watcher | None = None
        mcp = McpServers(
            app.config.mcp, app.home, app.tools, self.env, status=app.plugin_data("mcp")
        )
        try:
            app.plugins.call_strict("startup", app=app)
            self._recover(runtime)
            mcp.start()  # after recovery: their tools are there when interrupted turns resume
            watcher = runtime.inbox.watch(self.wake)
            watcher.start()
            self._start_workers(runtime)
            self.started = True
            self.ready.set()
            logger.info("smarthole is watching %s", self.home.inbox)
            self._loop(runtime)
            logger.info("smarthole is stopping")
        finally:
            if watcher is not None:
                watcher.stop()
            self._clean = self._stop_workers(self._grace)
            mcp.stop()
            app.plugins.notify("shutdown", app=app)

    def _recover(self, runtime: Runtime) -> None:
        """Make the store and the folders agree again after whatever stopped the last run."""
        store = runtime.app.store
        for turn in store.interrupt_running_turns():
            logger.warning(
                "turn %d of conversation %s was interrupted; it will resume",
                turn.number,
                turn.conversation_id,
            )
            conversation = store.conversation(turn.conversation_id)
            runtime.events.emit(
                "turn_interrupted",
                conversation=turn.conversation_id,
                channel=conversation.channel if conversation else None,
                turn=turn.number,
                message_id=turn.message_id,
                at_start=True,
            )
        Tasks(store).interrupt_active()  # each resumes with the turn that owns it
        requeued = runtime.ledger.requeue_in_progress()
        recovered = runtime.inbox.recover()
        for item in runtime.outbox.undelivered():
            runtime.outbox.finish(item.id)
        expired = PendingQuestions(store).expire(
            self.clock(), runtime.app.config.conversation.pending_state_timeout_minutes
        )
        if requeued or recovered or expired:
            logger.info(
                "recovered: %d message(s) requeued, %d claimed file(s), %d expired question(s)",
                requeued,
                recovered,
                len(expired),
            )

    # -- the loop --------------------------------------------------------------------------

    def _loop(self, runtime: Runtime) -> None:
        rescan = runtime.app.config.inbox.rescan_seconds
        next_scan = 0.0
        while not self.stop_event.is_set():
            woken = self.wake_event.is_set()
            self.wake_event.clear()
            now = time.monotonic()
            due = None
            try:
                if woken or now >= next_scan:
                    runtime.inbox.claim_all()
                    next_scan = now + rescan
                due = self._dispatch(runtime)
            except Exception:  # the loop must outlive any one bad moment; the scan retries
                if self.once:
                    raise
                logger.exception("the main loop failed; trying again in %.1fs", rescan)
                self.stop_event.wait(rescan)
                continue
            if self.once and self._finished(runtime):
                self._housekeeping(runtime)
                self._report(runtime)
                return
            timeout = min(rescan, max(0.0, next_scan - time.monotonic()))
            look = runtime.inbox.next_look()
            if look is not None:  # settling files and stranded claims, between rescans
                next_scan = min(next_scan, look)
                timeout = min(timeout, max(0.0, look - time.monotonic()))
            if due is not None:
                timeout = min(timeout, max(0.0, (due - self.clock()).total_seconds()))
            self.wake_event.wait(timeout=max(timeout, 0.01))

    def _dispatch(self, runtime: Runtime) -> datetime | None:
        """Hand each idle channel's head message to a worker; returns the next due time."""
        now = self.clock()
        next_due: datetime | None = None
        for entry in runtime.ledger.channel_heads():
            with self._busy_lock:
                if entry.channel in self._busy:
                    continue
                if (
                    entry.status == "deferred"
                    and entry.next_attempt_at
                    and entry.next_attempt_at > now
                ):
                    if next_due is None or entry.next_attempt_at < next_due:
                        next_due = entry.next_attempt_at
                    continue
                self._busy.add(entry.channel)
            self._jobs.put(entry)
        return next_due

    def _busy_channels(self) -> set[str]:
        with self._busy_lock:
            return set(self._busy)

    def _finished(self, runtime: Runtime) -> bool:
        """For ``--once``: nothing is running, runnable now, or waiting in the inbox."""
        if self._busy_channels() or runtime.inbox.has_work():
            return False
        now = self.clock()
        return all(
            e.status == "deferred" and e.next_attempt_at and e.next_attempt_at > now
            for e in runtime.ledger.channel_heads()
        )

    def _report(self, runtime: Runtime) -> None:
        deferred = runtime.ledger.by_status("deferred")
        self.summary = {"deferred": len(deferred), "next_due": runtime.ledger.next_due()}
        if deferred:
            due = self.summary["next_due"]
            logger.warning(
                "%d message(s) deferred; the next is due at %s",
                len(deferred),
                due.isoformat() if due else "?",
            )

    def _housekeeping(self, runtime: Runtime) -> None:
        """Expire old questions, end idle conversations, write due titles and summaries."""
        store = runtime.app.store
        config = runtime.app.config.conversation
        PendingQuestions(store).expire(self.clock(), config.pending_state_timeout_minutes)
        idle = timedelta(minutes=config.idle_timeout_minutes)
        waiting = {q.conversation_id for q in PendingQuestions(store).all()}
        busy = {e.channel for e in runtime.ledger.by_status("queued", "in_progress", "deferred")}
        for conversation in store.open_conversations():
            if conversation.id in waiting or conversation.channel in busy:
                continue
            if self.clock() - conversation.updated_at > idle:
                runtime.processor.conversations.end(conversation, "idle_timeout")
        runtime.titler.sweep()

    def _housekeeper(self, runtime: Runtime) -> None:
        """Background thread: housekeeping never delays claiming or dispatching."""
        interval = max(runtime.app.config.inbox.rescan_seconds, 1.0)
        while not self.stop_event.wait(timeout=interval):
            try:
                self._housekeeping(runtime)
            except Exception:
                logger.exception("housekeeping failed; trying again in %.0fs", interval)

    # -- workers ---------------------------------------------------------------------------

    def _start_workers(self, runtime: Runtime) -> None:
        if not self.once:
            housekeeper = threading.Thread(
                target=self._housekeeper, args=(runtime,), name="smarthole-housekeeper", daemon=True
            )
            housekeeper.start()
            self._threads.append(housekeeper)
        for index in range(runtime.app.config.daemon.workers):
            thread = threading.Thread(
                target=self._work, args=(runtime,), name=f"smarthole-worker-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _work(self, runtime: Runtime) -> None:
        while True:
            entry = self._jobs.get()
            if entry is None:
                return
            try:
                outcome = runtime.processor.process(entry)
                logger.debug("message %s: %s", entry.id, outcome)
            except Exception:
                logger.exception("worker failed on message %s; retrying shortly", entry.id)
                self.stop_event.wait(WORKER_BACKOFF_SECONDS)  # no hot loop on a lasting fault
            finally:
                with self._busy_lock:
                    self._busy.discard(entry.channel)
                self.wake()

    def _stop_workers(self, grace: float) -> bool:
        """Stop the workers; True if all finished within ``grace`` seconds."""
        self.stop_event.set()
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + grace
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            logger.warning(
                "%d turn(s) still running after %.0fs; abandoning them (they resume "
                "on the next start)",
                len(alive),
                grace,
            )
        return not alive
