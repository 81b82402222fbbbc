"""The scheduler: each schedule's due slots become messages in the ledger, each exactly once.

The main loop calls :meth:`Scheduler.tick` before every dispatch; most ticks compare two times.
A look (when a slot is due, the config changed, another process woke the daemon after changing
a schedule, or at least every ``LOOK_EVERY``, so a clock jump or a suspend is seen) runs in two
commits per schedule:

1. the due slots are *taken*: one ``schedule_fires`` row each, keyed by (schedule, slot), and
   the schedule moved past them (``missed`` decides what a run of late slots fires, and a
   ``schedule_missed`` event says so);
2. each taken fire's message is admitted to the ledger under the id the fire names, the fire
   marked sent and ``schedule_fired`` emitted; from there it is a message like any other.

A crash after 1 leaves the fire recorded: the next look sends it. A crash after 2 leaves the
message in the ledger, which resumes it. Neither can fire a slot twice: the fire's key and the
ledger's message id each allow one. A schedule is first seen when it enters the store; no
slot before that fires.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..config.schedules import ScheduleSettings
from ..db.ledger import Admission
from ..db.records import Message
from ..db.schedules import Fire, Schedule, ScheduleSpec
from ..db.states import ScheduleState
from ..formats import content_hash, iso
from ..schedules import MissedPolicy, plan_due

if TYPE_CHECKING:
    from ..app import App
    from ..config import Config
    from ..db.events import EventLog
    from ..db.ledger import Ledger
    from ..db.schedules import Schedules

logger = logging.getLogger(__name__)

LOOK_EVERY = timedelta(seconds=5)
# Tests stop the daemon dead (os._exit: no cleanup, as a kill -9) at a named point.
CRASH_ENV = "SMARTHOLE_TEST_CRASH_AT"
CRASH_POINTS = ("schedule_recorded", "schedule_sent")


def spec_of(settings: ScheduleSettings) -> ScheduleSpec:
    timing = settings.timing
    return ScheduleSpec(
        name=settings.name,
        kind=timing.kind,
        expression=timing.expression,
        timezone=timing.zone_name,
        text=settings.text,
        channel=settings.channel,
        conversation_mode=settings.conversation,
        agents=tuple(settings.agents) or None,
        missed=settings.missed,
        deliver=settings.deliver,
    )


def fire_message(schedule: Schedule, fire: Fire, conversation: str | None, *, new: bool) -> Message:
    """The message a fire sends: the schedule's text, with a note when it catches up."""
    spec = schedule.spec
    text = spec.text
    if fire.missed_slots:
        text += (
            f"\n\n(schedule {schedule.label}: missed_slots = {fire.missed_slots}; smarthole "
            "was stopped or asleep at those times, and this one run stands for them.)"
        )
    metadata: dict[str, object] = {
        "schedule": schedule.label,
        "schedule_id": schedule.id,
        "slot": iso(fire.slot_at),
    }
    if fire.missed_slots:
        metadata["missed_slots"] = fire.missed_slots
    if not spec.deliver:
        metadata["schedule_deliver"] = False
    return Message(
        id=fire.message_id,
        text=text,
        source_name=f"schedule {schedule.label}",
        timestamp=fire.slot_at,
        content_hash=content_hash(text.encode()),
        channel=spec.channel,
        conversation=conversation,
        new_conversation=new and conversation is None,
        metadata=metadata,
        agents=spec.agents,
    )


class Scheduler:
    """Fires one home's schedules into its ledger (see the module's docstring)."""

    def __init__(
        self,
        app: App,
        ledger: Ledger,
        events: EventLog,
        schedules: Schedules,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.ledger = ledger
        self.events = events
        self.schedules = schedules
        self.crash_at = (os.environ if env is None else env).get(CRASH_ENV, "")
        self._config: Config | None = None  # the config last synced to the store
        self._seen: Config | None = None  # the config of the last look
        self._look_at: datetime | None = None  # None: look at the next tick

    def poke(self) -> None:
        """Look at the next tick (a schedule was added or changed in this process)."""
        self._look_at = None

    def tick(self) -> datetime:
        """Take and send what is due; returns when the next tick should come at the latest.

        Nothing here stops the loop from dispatching: a failure is logged, and looked at again
        at the next look (a schedule that cannot fire does not keep the others from firing).
        """
        now = self.app.now()
        config = self.app.config
        if config is self._seen and self._look_at is not None and now < self._look_at:
            return self._look_at
        self._seen = config
        self._look_at = now + LOOK_EVERY
        try:
            if config is not self._config:
                self.sync(config, now)
            if config.scheduler.enabled:
                for schedule in self.schedules.all():
                    if schedule.state is ScheduleState.ACTIVE:
                        self._take_logged(schedule, now)
            self.send_recorded()
            next_fire = self.schedules.next_fire() if config.scheduler.enabled else None
        except Exception:  # the store failed: the next look tries again
            logger.exception("the scheduler failed; looking again in %.0f s", LOOK_EVERY.seconds)
            return self._look_at
        if next_fire is not None:
            self._look_at = min(next_fire, self._look_at)
        return self._look_at

    def _take_logged(self, schedule: Schedule, now: datetime) -> None:
        try:
            self._take(schedule, now)
        except Exception:
            logger.exception(
                "schedule %s cannot fire; trying again at the next look", schedule.label
            )

    def sync(self, config: Config, now: datetime) -> None:
        """The store's ``config`` schedules made those of ``config`` (at start, on reload)."""
        specs = []
        for settings in config.schedules:
            spec = spec_of(settings)
            timing = settings.timing
            specs.append((spec, timing.next_after(now, now)))
        self.schedules.sync_config(specs, now)
        self._config = config

    # -- taking slots -----------------------------------------------------------------------

    def _take(self, schedule: Schedule, now: datetime) -> None:
        timing = schedule.timing
        anchor = schedule.first_seen_at
        after = schedule.last_slot_at or anchor
        due = plan_due(
            timing, after=after, now=now, anchor=anchor, missed=MissedPolicy(schedule.spec.missed)
        )
        next_at = timing.next_after(max(now, due.last_slot or now), anchor)
        if due.nothing:
            if next_at != schedule.next_at:
                self.schedules.set_next(schedule.id, next_at)
            return
        late = "catch_up" if due.missed else "slot"
        fires = [(slot, missed, late) for slot, missed in due.fire]
        with self.app.store.transaction() as db:
            taken = self.schedules.take_slots(
                schedule, fires, last_slot=due.last_slot, next_at=next_at, now=now, db=db
            )
            if due.missed:
                self.events.emit(
                    "schedule_missed",
                    channel=schedule.spec.channel,
                    db=db,
                    schedule=schedule.label,
                    schedule_id=schedule.id,
                    policy=schedule.spec.missed,
                    missed=due.missed,
                    fired=len(taken),
                    skipped=due.skipped,
                    last_slot=iso(due.last_slot) if due.last_slot else None,
                )
        if due.missed:
            logger.warning(
                "schedule %s missed %d slot(s) (missed = %s): firing %d",
                schedule.label,
                due.missed,
                schedule.spec.missed,
                len(taken),
            )
        self._crash("schedule_recorded")

    # -- sending ----------------------------------------------------------------------------

    def send_recorded(self) -> int:
        """Admit the message of every fire taken but not yet sent; returns how many."""
        sent = 0
        for fire in self.schedules.unsent():
            try:
                sent += self._send(fire)
            except Exception:
                logger.exception(
                    "cannot send fire %s; trying again at the next look", fire.message_id
                )
            self._crash("schedule_sent")
        return sent

    def _send(self, fire: Fire) -> int:
        schedule = self.schedules.get(fire.schedule_id)
        if schedule is None:  # removed after its slot was taken: nothing to say
            with self.app.store.transaction() as db:
                self.schedules.mark_sent(fire.message_id, db=db)
            return 0
        conversation, new = self._conversation(schedule)
        message = fire_message(schedule, fire, conversation, new=new)
        channel = self._channel(schedule, message)
        with self.app.store.transaction() as db:
            admission = self.ledger.admit(message, channel=channel, claimed_path=None)
            self.schedules.mark_sent(fire.message_id, db=db)
            if admission is Admission.NEW:
                self.events.emit(
                    "schedule_fired",
                    conversation=message.conversation,
                    channel=channel,
                    message_id=message.id,
                    db=db,
                    schedule=schedule.label,
                    schedule_id=schedule.id,
                    slot=iso(fire.slot_at),
                    reason=fire.reason,
                    missed_slots=fire.missed_slots,
                )
        if admission is not Admission.NEW:
            return 0
        logger.info("schedule %s fired: message %s", schedule.label, message.id)
        self.app.plugins.notify("message_received", message=message.with_channel(channel))
        return 1

    def _conversation(self, schedule: Schedule) -> tuple[str | None, bool]:
        """The conversation a fire continues (the tool's own, or a "same" schedule's), and
        whether it starts a new one instead."""
        spec = schedule.spec
        if schedule.source == "tool":
            return spec.conversation_id, False
        if spec.conversation_mode != "same":
            return None, True
        store = self.app.store
        if spec.conversation_id and store.conversation(spec.conversation_id) is not None:
            return spec.conversation_id, False
        earlier = [f for f in self.schedules.fires(schedule.id, latest=20) if f.outcome is not None]
        for fire in reversed(earlier):
            entry = self.ledger.get(fire.message_id)
            if entry is not None and entry.conversation_id is not None:
                if store.conversation(entry.conversation_id) is None:
                    break  # pruned: start a new one
                self.schedules.set_conversation(schedule.id, entry.conversation_id)
                return entry.conversation_id, False
        # The first run starts the conversation; while it waits, the next ones follow it in
        # the channel's open conversation.
        return None, not earlier

    def _channel(self, schedule: Schedule, message: Message) -> str:
        if message.conversation:
            conversation = self.app.store.conversation(message.conversation)
            if conversation is not None:
                return conversation.channel
        return schedule.spec.channel

    def _crash(self, point: str) -> None:
        if self.crash_at == point:
            logger.critical("crashing at %s, as %s asks", point, CRASH_ENV)
            os._exit(9)
