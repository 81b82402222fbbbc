"""The HTML side: pages, and the fragments the page's script swaps in when events arrive.

The only module that imports ``jinja2``. Templates autoescape everything; Markdown comes from
:mod:`smarthole.web.markdown` already made safe. A fragment is rendered by the same macro as
the page, so a live update shows exactly what a reload would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..agent.prompts import UNTITLED
from ..errors import LookupFailed
from ..formats import utc_now
from . import markdown
from .reads import STATES, TURNS_SHOWN, ConversationRow, Reader, RowState
from .transcript import short_time

if TYPE_CHECKING:
    from ..db.events import EventLog

TEMPLATES = Path(__file__).parent / "templates"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown.render
    env.filters["ago"] = ago
    env.filters["pretty_json"] = pretty_json
    env.filters["clock"] = short_time  # 06:53 today, with its date another day
    env.globals["STATES"] = STATES
    env.globals["UNTITLED"] = UNTITLED
    return env


def pretty_json(value: Any) -> str:
    """JSON as a person reads it (the template escapes it, as any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def ago(moment: datetime, now: datetime | None = None) -> str:
    """How long ago, as a person says it: ``just now``, ``5 min ago``, ``3 h ago``, a date."""
    seconds = ((now or utc_now()) - moment).total_seconds()
    if seconds < 45:
        return "just now"
    if seconds < 3600:
        return f"{round(seconds / 60)} min ago"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h ago"
    if seconds < 7 * 86400:
        return f"{round(seconds / 86400)} d ago"
    return moment.strftime("%Y-%m-%d")


class NotFound(Exception):
    pass


@dataclass
class Pages:
    """Renders the pages and fragments of one home's view."""

    reader: Reader
    events: EventLog
    env: Environment
    daemon_running: Callable[[], bool] = lambda: False

    def render(self, template: str, **values: Any) -> str:
        return self.env.get_template(template).render(**values)

    def part(self, macro: str, *args: Any) -> str:
        """One macro of ``parts.html``, as a fragment."""
        module = self.env.get_template("parts.html").module
        return str(getattr(module, macro)(*args))

    # -- the list of conversations ----------------------------------------------------------

    def conversations(self, page: int, query: str = "") -> str:
        """The list, or with ``query`` what a search finds (a page that does not follow)."""
        last_event = self.events.latest_id()  # before the reads: what follows is news
        if query.strip():
            found = self.reader.search(query)
            return self.render(
                "conversations.html", listing=None, found=found, last_event=last_event
            )
        listing = self.reader.conversations(page)
        return self.render("conversations.html", listing=listing, found=None, last_event=last_event)

    def conversations_fragment(self, page: int) -> dict[str, Any]:
        return {"html": self.part("conversation_list", self.reader.conversations(page))}

    # -- one conversation -------------------------------------------------------------------

    def _row(self, conversation_id: str) -> ConversationRow:
        try:
            return self.reader.conversation(conversation_id)
        except LookupFailed as exc:
            raise NotFound(str(exc)) from exc

    def conversation(self, conversation_id: str, team_turn: int | None) -> str:
        last_event = self.events.latest_id()
        row = self._row(conversation_id)
        return self.render(
            "conversation.html",
            last_event=last_event,
            row=row,
            new=False,
            channel=row.conversation.channel,
            **self._live_parts(row, team_turn),
            turns=self.reader.human_turns(row.conversation),
            fork=self.reader.store.fork_of(row.conversation.id),
        )

    def new_conversation(self, channel: str | None) -> str:
        return self.render(
            "conversation.html",
            last_event=self.events.latest_id(),
            row=None,
            new=True,
            channel=channel or "",
            bar=None,
            team=[],
            team_turn=None,
            picker=[],
            pending=None,
            waiting=[],
            turns=[],
            fork=None,
        )

    def _live_parts(self, row: ConversationRow, team_turn: int | None) -> dict[str, Any]:
        conversation = row.conversation
        shown = team_turn if team_turn is not None else conversation.turns
        # the turn that asked
        pending = conversation.turns if row.state is RowState.WAITING else None
        return {
            "bar": self.reader.bar(row),
            "team": self.reader.team(conversation, shown),
            "team_turn": team_turn,
            "shown_turn": shown,
            "picker": self.reader.turns_with_tasks(conversation),
            "pending": pending,
            "waiting": self.reader.waiting_approvals(conversation.id),
        }

    def live(self, conversation_id: str, from_turn: int, team_turn: int | None) -> dict[str, Any]:
        """What changed from human turn ``from_turn`` on, and the panes that follow it."""
        row = self._row(conversation_id)
        conversation = row.conversation
        parts = self._live_parts(row, team_turn)
        first = max(1, min(from_turn, conversation.turns))
        turns = self.reader.human_turns(conversation, first=first)
        pending = parts["pending"]
        return {
            "state": row.state,
            "turn": conversation.turns,
            "turns": [
                {"turn": t.number, "html": self.part("human_turn", t, pending)} for t in turns
            ],
            "bar": self.part("session_bar", parts["bar"]),
            "team": self.part("team_pane", parts["team"], parts["shown_turn"]),
            "picker": self.part("turn_picker", parts["picker"], team_turn, conversation.turns),
            "approvals": self.part("approvals", parts["waiting"]),
        }

    def earlier(self, conversation_id: str, before: int) -> dict[str, Any]:
        """The ``TURNS_SHOWN`` human turns before turn ``before``, to put above the others."""
        conversation = self._row(conversation_id).conversation
        last = min(before - 1, conversation.turns)
        first = max(1, last - TURNS_SHOWN + 1)
        turns = self.reader.human_turns(conversation, first=first, last=last) if last >= 1 else []
        return {
            "html": "".join(self.part("human_turn", t, None) for t in turns),
            "first": first,
            "earlier": first > 1,
        }

    # -- tasks ------------------------------------------------------------------------------

    def tasks(self) -> str:
        last_event = self.events.latest_id()
        return self.render("tasks.html", tasks=self.reader.task_listing(), last_event=last_event)

    def tasks_fragment(self) -> dict[str, Any]:
        return {"html": self.part("task_list", self.reader.task_listing())}

    # -- channels ---------------------------------------------------------------------------

    def channels(self) -> str:
        last_event = self.events.latest_id()
        return self.render("channels.html", channels=self._channels(), last_event=last_event)

    def channels_fragment(self) -> dict[str, Any]:
        return {"html": self.part("channel_list", self._channels())}

    def _channels(self) -> list[dict[str, Any]]:
        from ..channels.report import channel_reports

        return channel_reports(self.reader.store, running=self.daemon_running())

    # -- schedules --------------------------------------------------------------------------

    def schedules(self) -> str:
        from .schedules import schedule_rows

        last_event = self.events.latest_id()
        rows = schedule_rows(self.reader.schedules)
        return self.render("schedules.html", schedules=rows, last_event=last_event)

    def schedules_fragment(self) -> dict[str, Any]:
        from .schedules import schedule_rows

        return {"html": self.part("schedule_list", schedule_rows(self.reader.schedules))}
