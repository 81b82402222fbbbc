"""The Memory page: the agent's memory files, each with its text, where each line came from
and the writes it came from (linked to their conversations), and a delete button.

A delete is the person's, as ``smarthole memory rm`` does it: one transaction, its
``memory_deleted`` event. The page's ``memory.js`` posts the delete form and shows the list
again with what was done (a script posting without it is sent back there too).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..agent.memory import Memory
from ..agent.memorytext import MemoryRefused, memory_path, split
from ..db.events import EventLog


class MemoryPage:
    """Renders the Memory page of one home, and takes its deletes."""

    def __init__(self, memory: Memory, events: EventLog, env: Environment) -> None:
        self.memory, self.events, self.env = memory, events, env

    def page(self, request: Request) -> str:
        last_event = self.events.latest_id()
        tables = self.memory.tables
        files = tables.files()
        wanted = request.query_params.get("path")
        shown: dict[str, Any] | None = None
        if wanted:
            found = tables.file(wanted)
            if found is not None:
                writes = tables.writes(found.write_ids, path=found.path)
                shown = {
                    "file": found,
                    "lines": list(zip(split(found.text), found.lines, strict=False)),
                    "writes": writes,
                }
        return self.env.get_template("memory.html").render(
            files=files,
            shown=shown,
            wanted=wanted,
            notice=request.query_params.get("notice", ""),
            last_event=last_event,
        )

    async def delete(self, request: Request) -> Response:
        form = await request.form()
        wanted = str(form.get("path", ""))
        try:
            path = memory_path(wanted)
            with self.memory.tables.store.transaction() as db:
                self.memory.remove(db, path)
            notice = f"Deleted {path}."
        except MemoryRefused as exc:
            notice = f"Not deleted: {exc}"
        if "application/json" in request.headers.get("accept", ""):
            return JSONResponse({"notice": notice})
        return RedirectResponse(f"/memory?notice={quote(notice)}", status_code=303)
