"""Built-in schedule tools: schedule_message and cancel_schedule (registered by the
conversation plugin: they are about the conversation they are called in).

A schedule the model makes belongs to its conversation: its messages arrive there, as if the
person had sent them, and the reply reaches the person like any other. Every mistake is a
``ToolError`` saying what to change, so the model can correct it and call again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..db.states import ScheduleState
from ..errors import ToolError
from ..schedules import TimingError
from ..tools import ToolContext

if TYPE_CHECKING:
    from ..db.schedules import Schedules

MAX_TEXT = 4000
MAX_PER_CONVERSATION = 20


def schedule_message(
    text: str,
    at: str | None = None,
    cron: str | None = None,
    every: str | None = None,
    timezone: str | None = None,
    *,
    context: ToolContext,
) -> str:
    """Schedule a message that arrives in this conversation later: once, or repeatedly.

    Give exactly one of at, cron or every. When it fires, the text arrives here as a message
    to you, and your reply reaches the user. Use it for reminders ("remind me on Friday at 9")
    and recurring work. Say in the text what to do then, e.g. "Remind the user to call the
    bank."

    :param text: The message that will arrive, written as an instruction to yourself.
    :param at: One local time in the time zone, as 2026-12-01T09:00.
    :param cron: A cron expression (minute hour day-of-month month day-of-week), as
        "0 8 * * mon-fri".
    :param every: An interval: a number and a unit s, m, h or d, as "30m".
    :param timezone: An IANA time zone, as "Europe/Berlin"; default: the system's zone.
    """
    given = {k: v for k, v in (("at", at), ("cron", cron), ("every", every)) if v}
    if len(given) != 1:
        raise ToolError("give exactly one of at, cron or every (the others empty).")
    if not text.strip():
        raise ToolError("text is required: what the message will say.")
    if len(text) > MAX_TEXT:
        raise ToolError(f"text is over {MAX_TEXT} characters; shorten it.")
    schedules = _schedules(context)
    active = [
        s
        for s in schedules.of_conversation(context.conversation_id)
        if s.state is not ScheduleState.DONE
    ]
    if len(active) >= MAX_PER_CONVERSATION:
        raise ToolError(
            f"this conversation has {len(active)} schedules, the most it may have; cancel one "
            "with cancel_schedule first."
        )
    ((kind, expression),) = given.items()
    try:
        schedule = schedules.create(
            name=None,
            kind=kind,
            expression=expression,
            timezone=timezone or "",
            text=text.strip(),
            channel=context.channel,
            source="tool",
            now=context.app.now(),
            conversation_id=context.conversation_id,
        )
    except TimingError as exc:
        raise ToolError(f"{exc}. Correct it and call schedule_message again.") from exc
    assert schedule.next_at is not None
    local = schedule.next_at.astimezone(schedule.timing.zone)
    again = "" if kind == "at" else ", and repeats"
    return (
        f"Scheduled {schedule.id}: it first arrives here at {local:%Y-%m-%d %H:%M %Z} "
        f"({schedule.spec.timezone}){again}. To stop it: cancel_schedule('{schedule.id}')."
    )


def cancel_schedule(id: str, *, context: ToolContext) -> str:
    """Cancel a schedule made in this conversation with schedule_message.

    :param id: The schedule's id, as schedule_message returned it (or a unique prefix).
    """
    key = id.strip()
    schedules = _schedules(context)
    everyone = schedules.of_conversation(context.conversation_id)
    mine = [s for s in everyone if s.id.startswith(key) and key]
    if len(mine) != 1:
        ids = ", ".join(s.id for s in everyone)
        found = "more than one" if mine else "no"
        raise ToolError(
            f"{found} schedule of this conversation has the id {key[:40]!r}; its schedules: "
            f"{ids or 'none'}."
        )
    schedules.remove(mine[0].id)
    return f"Cancelled schedule {mine[0].id}; it will not arrive again."


def _schedules(context: ToolContext) -> Schedules:
    """The schedules of the daemon's composition root."""
    from ..daemon.runtime import Runtime

    return Runtime.of(context.app).schedules
