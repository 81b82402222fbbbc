"""The daemon: one home's lock, recovery at start, the main loop, workers and signals.

The main loop claims inbox files (woken by watchdog, and by a periodic rescan), then hands the
head message of each idle channel to a worker thread; the worker takes that channel's next
message itself. A channel's messages run strictly in order; different channels run at the same
time, and take turns for the workers; a deferred one waits in the database, not in a worker.
Signals are owned by :func:`smarthole.daemon.signals.capture_signals` from the first step of
start-up to the last of shutdown. SIGINT/SIGTERM stop the daemon: the loop stops claiming,
in-flight turns stop at their next committed boundary (within ``shutdown_grace_seconds``), and
whatever was cut off resumes on the next start; a second signal forces an immediate exit.
SIGHUP reloads (see ``reload``) from the main loop, between two dispatches: no turn drops.

Under a service manager the loop also reports readiness, a status line and the watchdog
(``notify``), and keeps ``.smarthole/daemon.json`` (``state``) for ``smarthole status``.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from ..app import App
from ..db.ledger import LedgerEntry
from ..db.store import Store
from ..formats import Clock, utc_now
from ..home import Home, HomeLock
from ..mcpservers import McpServers
from ..pipeline.inbox import Watcher
from .lane import FastLane
from .logs import log_context, set_level
from .memory import fix_malloc_thresholds, settle
from .notify import Notifier
from .reload import reload_daemon
from .runtime import Runtime
from .signals import STOP_SIGNALS, Signals, capture_signals
from .state import DaemonState, ErrorRecorder
from .upkeep import deferred_summary, housekeeper, housekeeping, recover, status_line

logger = logging.getLogger(__name__)

WORKER_BACKOFF_SECONDS = 2.0
STATUS_EVERY_SECONDS = 1.0  # the status line and daemon.json are refreshed at most this often


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
        follow_log_level: bool = False,
        beside: Callable[[Runtime], AbstractContextManager[object]] | None = None,
    ) -> None:
        self.home = home
        self.beside = beside  # what runs over this daemon's root while it runs (`run`'s web view)
        self.runtime: Runtime | None = None
        self.once = once
        self.env = os.environ if env is None else env
        self.extra_plugins = list(extra_plugins)
        self.clock = clock
        self.handle_signals = handle_signals
        self._settled = threading.Event()  # start-up's and the first message's objects frozen
        self.follow_log_level = follow_log_level  # [daemon] log_level, unless --log-level
        self.notifier = Notifier(self.env)
        self.state: DaemonState | None = None
        self._reload = threading.Event()
        self._next_status = 0.0
        self.stop_event = threading.Event()
        self.wake_event = threading.Event()  # the loop has something to do
        self._look = threading.Event()  # ... and it is a look at the inbox
        self._nudged = threading.Event()  # ... and at the schedules: another process wrote
        self.ready = threading.Event()
        self._busy: set[str] = set()
        self._busy_lock = threading.Lock()
        self._jobs: queue.Queue[LedgerEntry | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._grace = 0.0
        self._clean = True
        self._mcp: McpServers | None = None
        self._lane: FastLane | None = None
        self._loaded_at = 0.0
        self.started = False
        self.summary: dict[str, Any] = {}

    # -- control ---------------------------------------------------------------------------

    def request_stop(self) -> None:
        self.stop_event.set()
        self.wake_event.set()

    def wake(self) -> None:
        """Something may have come into the inbox: claim, then dispatch."""
        self._look.set()
        self.wake_event.set()

    def nudge(self) -> None:
        """Another process changed a schedule (``schedule run``, a web button): look now."""
        self._nudged.set()
        self.wake()

    def _on_signal(self, received: Signals) -> None:
        """Called by the signal watcher thread (not in signal context): say what happens next."""
        if received not in STOP_SIGNALS:
            logger.info("Received %s; reloading the configuration", received.name)
            self._reload.set()  # the main loop reloads, between two dispatches
            self.wake()
            return
        if busy := len(self._busy_channels()):
            waiting = "waiting up to %.0f s for %d turn(s); press Ctrl-C again to exit now"
            logger.warning("Received %s; stopping: " + waiting, received.name, self._grace, busy)
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
            self.notifier.close()
        return captured.exit_code()

    def _run_locked(self) -> None:
        Store.open(self.home.database, clock=self.clock, recover=True).close()
        self._loaded_at = time.time()  # a plugin file changed after this needs a restart
        app = App.load(self.home, extra_plugins=self.extra_plugins, env=self.env, clock=self.clock)
        self.state = DaemonState(self.home, self.clock)
        self._apply_settings(app, self.state)
        recorder = ErrorRecorder(self.state)
        logging.getLogger().addHandler(recorder)
        try:
            runtime = self.runtime = Runtime.build(app, env=self.env, stop=self.stop_event)
            try:
                with self.beside(runtime) if self.beside else contextlib.nullcontext():
                    self._serve(app, runtime)
            finally:
                runtime.close()
        finally:
            logging.getLogger().removeHandler(recorder)
            self.state.update(ready=False, status="stopped")
            self.state.flush()
            if self._clean:  # abandoned turns still use the store; the process exit closes it
                app.close()
        if self.started:
            logger.info("smarthole stopped")

    def _serve(self, app: App, runtime: Runtime) -> None:
        """Start up, run the loop until stopped, stop the workers."""
        watcher: Watcher | None = None
        mcp = self._mcp = McpServers(
            app.config.mcp, app.home, app.tools, self.env, status=app.plugin_data("mcp")
        )
        try:
            app.plugins.call_strict("startup", app=app)
            runtime.event_hook.start()  # from here on every event reaches the hook, in order
            self.notifier.pet()  # recovery may take a while; the loop pets from then on
            recover(runtime, self.clock)
            mcp.start()  # after recovery: their tools are there when interrupted turns resume
            watcher = runtime.inbox.watch(self.wake, self.nudge)
            watcher.start()
            if self.handle_signals:  # it owns the process, not embedded in a test or a chat
                fix_malloc_thresholds(self.env)
                settle()
            self._start_workers(runtime)
            self.started = True
            self.ready.set()
            self._report_status(runtime, ready=True)
            logger.info("smarthole is watching %s", self.home.inbox)
            self._loop(runtime)
            logger.info("smarthole is stopping")
        finally:
            self.notifier.stopping()
            if self.state is not None:
                self.state.update(ready=False, status="stopping")
                self.state.flush()
            if watcher is not None:
                watcher.stop()
            if self.handle_signals:
                gc.unfreeze()
            self._clean = self._stop_workers(self._grace)
            mcp.stop()
            runtime.event_hook.stop()  # after the last event of this run is written
            app.plugins.notify("shutdown", app=app)

    def _apply_settings(self, app: App, state: DaemonState) -> None:
        """At start and after a reload: take the settings the daemon reads outside turns, and
        record the plugins and agents it has loaded."""
        self._grace = app.config.daemon.shutdown_grace_seconds
        if self.follow_log_level:
            set_level(app.config.daemon.log_level)
        state.record_loaded(app)

    def _reload_now(self, runtime: Runtime) -> None:
        """SIGHUP: tell the service manager, re-read config.toml, then be ready again."""
        self._reload.clear()
        self.notifier.reloading()
        assert self.state is not None
        if reload_daemon(runtime.app, self._mcp, self.state, self._loaded_at, self.clock):
            self._apply_settings(runtime.app, self.state)
        self._report_status(runtime, ready=True)

    def _report_status(self, runtime: Runtime, *, ready: bool = False) -> None:
        """The status line for the service manager and daemon.json (``ready`` sends READY=1)."""
        self._next_status = time.monotonic() + STATUS_EVERY_SECONDS
        line = status_line(len(self._busy_channels()), runtime.ledger.counts())
        (self.notifier.ready if ready else self.notifier.status)(line)
        if self.state is not None:
            self.state.update(ready=True, status=line)
            self.state.flush()

    # -- the loop --------------------------------------------------------------------------

    def _loop(self, runtime: Runtime) -> None:
        rescan = runtime.app.config.inbox.rescan_seconds
        next_scan = 0.0
        backlog = False  # files wait to be claimed: claim the next batch without waiting
        while not self.stop_event.is_set():
            self.wake_event.clear()
            woken = self._look.is_set()  # after the clear: a later wake sets both again
            self._look.clear()
            if self._nudged.is_set():
                self._nudged.clear()
                runtime.scheduler.poke()
            now = time.monotonic()
            due = None
            pet = self.notifier.pet(now)  # from this loop: a stuck loop stops petting
            try:
                if self._reload.is_set():
                    self._reload_now(runtime)
                if now >= self._next_status:
                    self._report_status(runtime)
                if woken or backlog or now >= next_scan:
                    backlog = runtime.inbox.claim_batch()
                    next_scan = now + rescan
                    if self._lane is not None:  # a /stop behind a running turn, an interrupt
                        self._lane.look(self._busy_channels(), self.clock())
                soon = runtime.scheduler.tick()  # a schedule's due slots join the ledger
                due = min(soon, self._dispatch(runtime) or soon)
            except Exception:  # the loop must outlive any one bad moment; the scan retries
                if self.once:
                    raise
                pause = min(rescan, self.notifier.interval or rescan)  # a failing loop still pets
                logger.exception("the main loop failed; trying again in %.1fs", pause)
                self.stop_event.wait(pause)
                continue
            if backlog:
                continue
            if self.once and self._finished(runtime):
                housekeeping(runtime, self.clock)
                self.summary = deferred_summary(runtime)
                return
            timeout = min(rescan, max(0.0, next_scan - time.monotonic()))
            look = runtime.inbox.next_look()
            if look is not None:  # settling files and stranded claims, between rescans
                next_scan = min(next_scan, look)
                timeout = min(timeout, max(0.0, look - time.monotonic()))
            if due is not None:
                timeout = min(timeout, max(0.0, (due - self.clock()).total_seconds()))
            for moment in (pet, self._next_status):
                if moment is not None:
                    timeout = min(timeout, max(0.0, moment - time.monotonic()))
            self.wake_event.wait(timeout=max(timeout, 0.01))

    def _dispatch(self, runtime: Runtime) -> datetime | None:
        """Hand each idle channel's head message to a worker; returns the next due time."""
        now = self.clock()
        next_due: datetime | None = None
        for entry in runtime.ledger.channel_heads():
            with self._busy_lock:
                if entry.channel in self._busy:
                    continue
                if entry.waits(now):
                    assert entry.next_attempt_at is not None
                    if next_due is None or entry.next_attempt_at < next_due:
                        next_due = entry.next_attempt_at
                    continue
                self._busy.add(entry.channel)
            self._jobs.put(entry)
        return next_due

    def _next_in_channel(self, runtime: Runtime, channel: str) -> LedgerEntry | None:
        """A busy channel's next message, if it may run now (see ``_work``)."""
        if self.stop_event.is_set():
            return None
        entry = runtime.ledger.channel_head(channel)
        return None if entry is None or entry.waits(self.clock()) else entry

    def _busy_channels(self) -> set[str]:
        with self._busy_lock:
            return set(self._busy)

    def _finished(self, runtime: Runtime) -> bool:
        """For ``--once``: nothing is running, runnable now, or waiting in the inbox."""
        if self._busy_channels() or runtime.inbox.has_work():
            return False
        now = self.clock()
        return all(e.waits(now) for e in runtime.ledger.channel_heads())

    # -- workers ---------------------------------------------------------------------------

    def _start_workers(self, runtime: Runtime) -> None:
        self._lane = FastLane(runtime)
        self._lane.start()
        count = runtime.app.config.daemon.workers
        keeper = (housekeeper, "smarthole-housekeeper", (runtime, self.clock, self.stop_event))
        workers = [(self._work, f"smarthole-worker-{n}", (runtime,)) for n in range(count)]
        for target, name, args in ([] if self.once else [keeper]) + workers:
            self._threads.append(threading.Thread(target=target, args=args, name=name, daemon=True))
            self._threads[-1].start()

    def _work(self, runtime: Runtime) -> None:
        """Run the messages the queue hands over, until its ``None``.

        A channel stays busy from its dispatch until it has nothing runnable left: its worker
        takes its next message itself, behind the other channels' (so they take turns). Only
        then is the channel free, and the loop woken to dispatch what came for it meanwhile.
        """
        entry = self._jobs.get()
        while entry is not None:
            following = self._run_one(runtime, entry)
            if following is not None:
                entry = self._take_turns(following)
                continue
            with self._busy_lock:
                self._busy.discard(entry.channel)
            self.wake_event.set()  # dispatch: no need to look at the inbox for this
            entry = self._jobs.get()

    def _run_one(self, runtime: Runtime, entry: LedgerEntry) -> LedgerEntry | None:
        """Run ``entry``; returns its channel's next message if that may run now."""
        try:
            with log_context(
                message_id=entry.id, conversation=entry.conversation_id, turn=entry.turn
            ):
                outcome = runtime.processor.process(entry)
                logger.debug("message %s: %s", entry.id, outcome)
            if self.handle_signals and not self._settled.is_set():
                self._settled.set()  # the first model call imported the rest of the SDK
                gc.freeze()
            return self._next_in_channel(runtime, entry.channel)
        except Exception:
            logger.exception("worker failed on message %s; retrying shortly", entry.id)
            self.stop_event.wait(WORKER_BACKOFF_SECONDS)  # no hot loop on a lasting fault
            return None

    def _take_turns(self, following: LedgerEntry) -> LedgerEntry | None:
        """Another channel's waiting message (``following`` queued behind it), else
        ``following``: no idle worker is woken to take the channel over. None: stop."""
        try:
            waiting = self._jobs.get_nowait()
        except queue.Empty:
            return following
        if waiting is not None:
            self._jobs.put(following)
        return waiting

    def _stop_workers(self, grace: float) -> bool:
        """Stop the workers; True if all finished within ``grace`` seconds."""
        self.stop_event.set()
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + grace
        if self._lane is not None:
            self._lane.stop(grace)
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            message = "%d turn(s) still running after %.0fs; abandoning them (they resume later)"
            logger.warning(message, len(alive), grace)
        return not alive
