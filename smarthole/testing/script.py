"""The bundled fake's small script language: a person types ``/fake ...`` in a message, and
the fake model acts as a real one would (docs/fake.md).

- ``/fake say WORDS``: answers WORDS.
- ``/fake tool NAME key=value ...``: calls the tool, then says what it returned.
- ``/fake team AGENT,AGENT: TASK``: starts a team task; each agent takes one turn.
- ``/fake ask QUESTION``: asks the person; their next message is the answer.

Anything else is echoed (``echo: ``), and a message with attachments says what it sees.
Titles and summaries are made from the first thing the person asked, so they read like
titles. ``python -m smarthole.testing`` and ``smarthole demo --tour`` answer with this.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from ..agent.prompts import CONTEXT_OPEN, SUMMARY_SYSTEM, TITLE_SYSTEM
from .replies import RecordedRequest, Reply, blocks_of_type, text, tool_use

PREFIX = "/fake"
TITLE_WORDS = 6


class ScriptError(ValueError):
    """A ``/fake`` line that does not say anything the fake understands."""


@dataclass(frozen=True)
class Command:
    """One ``/fake`` command: its verb and the rest of its line."""

    verb: str
    rest: str

    @property
    def tool_call(self) -> tuple[str, dict[str, Any]]:
        """``(name, input)`` of ``tool NAME key=value ...``."""
        words = shlex.split(self.rest)
        if not words:
            raise ScriptError("/fake tool needs a tool name: /fake tool NAME key=value ...")
        arguments: dict[str, Any] = {}
        for word in words[1:]:
            key, equals, value = word.partition("=")
            if not equals or not key:
                raise ScriptError(f"/fake tool: {word!r} is not key=value")
            arguments[key] = _value(value)
        return words[0], arguments

    @property
    def team(self) -> tuple[list[str], str]:
        """``(agents, task)`` of ``team AGENT,AGENT: TASK``."""
        names, colon, task = self.rest.partition(":")
        agents = [name.strip() for name in names.split(",") if name.strip()]
        if not colon or not agents or not task.strip():
            raise ScriptError("/fake team needs agents and a task: /fake team a,b: the task")
        return agents, task.strip()


def parse(words: str) -> Command | None:
    """The ``/fake`` command a message starts with, or None for an ordinary message."""
    line = words.strip().split("\n", 1)[0].strip()
    if line != PREFIX and not line.startswith(PREFIX + " "):
        return None
    verb, _, rest = line[len(PREFIX) :].strip().partition(" ")
    return Command(verb.lower(), rest.strip())


def scripted(request: RecordedRequest) -> Reply:
    """The fake model's answer to ``request``: titles, team agents, then the person's turn."""
    if request.system_text == TITLE_SYSTEM:
        return text(title_of(_transcript_opening(request)))
    if request.system_text == SUMMARY_SYSTEM:
        about = title_of(_transcript_opening(request))
        return text(f"A conversation about {about[:1].lower()}{about[1:]}.")
    if request.agent is not None:
        return _team_turn(request)
    return _entry_turn(request)


def title_of(first_words: str) -> str:
    """A title from what the person first said, without the ``/fake`` command's syntax."""
    words = first_words.strip()
    command = parse(words)
    if command is not None:
        try:
            if command.verb == "tool":
                words = f"Using {command.tool_call[0]}"
            elif command.verb == "team":
                words = command.team[1]
            else:
                words = command.rest
        except ScriptError:
            words = command.rest
    chosen = words.split()[:TITLE_WORDS]
    title = " ".join(chosen).rstrip(".,:;!?")
    return (title[:1].upper() + title[1:]) if title else "A short conversation"


def _entry_turn(request: RecordedRequest) -> Reply:
    said = _person_text(request)
    results = request.tool_results
    if results:
        return text(_after_tools(request, results))
    command = parse(said)
    if command is None:
        if "## Pending Context" in request.system_text:
            return text(f"Thanks, noted: {said.strip()}")
        return text(_echo(said, request))
    try:
        if command.verb == "say":
            return text(command.rest or "(nothing to say)")
        if command.verb == "tool":
            name, arguments = command.tool_call
            return tool_use(name, arguments)
        if command.verb == "team":
            agents, task = command.team
            call = {"task": task, "agents": agents, "max_turns": len(agents)}
            return tool_use("start_task", call)
        if command.verb == "ask":
            question = command.rest or "What would you like?"
            return tool_use("send_message", {"message": question, "is_question": True})
    except ScriptError as exc:
        return text(f"The fake did not understand: {exc}.")
    return text(f"The fake knows /fake say, tool, team and ask, not {command.verb!r}.")


def _after_tools(request: RecordedRequest, results: list[dict[str, Any]]) -> str:
    called = _last_tool_names(request)
    lines = []
    for result, name in zip(results, called, strict=False):
        said = _result_text(result.get("content")).strip()
        first = said.splitlines()[0] if said else "(nothing)"
        if name == "send_message":
            return "I asked; your next message is the answer."
        if result.get("is_error"):
            lines.append(f"{name} did not run: {said}")
        elif name == "start_task":
            lines.append(f"The team finished. {said}")
        else:
            lines.append(f"Done: {name} said {first[:200]}")
    return "\n\n".join(lines) or "Done."


def _team_turn(request: RecordedRequest) -> Reply:
    task = _first_user_text(request)
    return text(f"{request.agent}: my part of the task is done ({task[:80]}).")


def _echo(said: str, request: RecordedRequest) -> str:
    content = request.messages[-1].get("content") if request.messages else None
    images = len(blocks_of_type(content, "image"))
    documents = len(blocks_of_type(content, "document"))
    seen = []
    if images:
        seen.append(f"{images} image{'s' if images > 1 else ''}")
    if documents:
        seen.append(f"{documents} document{'s' if documents > 1 else ''}")
    echoed = f"echo: {said}".rstrip()
    return f"{echoed}\n\nI see {' and '.join(seen)}." if seen else echoed


def _person_text(request: RecordedRequest) -> str:
    """The text of the person's latest message (not a message of tool results)."""
    for message in reversed(request.messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        words = [b.get("text", "") for b in blocks_of_type(content, "text")]
        words = [w for w in words if not w.startswith(CONTEXT_OPEN)]
        if words or not blocks_of_type(content, "tool_result"):
            return "\n".join(words)
    return ""


def _first_user_text(request: RecordedRequest) -> str:
    """The task a team agent was given: its first message's text, from the line after a
    ``# Task`` heading to the next heading when it has one."""
    first = request.messages[0].get("content") if request.messages else ""
    if not isinstance(first, str):
        first = "\n".join(b.get("text", "") for b in blocks_of_type(first, "text"))
    found = re.search(r"^# Task\n(.*?)(?:\n#|\Z)", first, re.S | re.M)
    return " ".join((found.group(1) if found else first).split())


def _last_tool_names(request: RecordedRequest) -> list[str]:
    for message in reversed(request.messages):
        if message.get("role") == "assistant":
            return [str(b.get("name")) for b in blocks_of_type(message.get("content"), "tool_use")]
    return []


def _transcript_opening(request: RecordedRequest) -> str:
    """What the person said first, from a title or summary request's transcript."""
    said = (line for line in request.last_user_text.splitlines() if line.startswith("User: "))
    return next(said, "").removeprefix("User: ")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in blocks_of_type(content, "text"))


def _value(word: str) -> Any:
    """A JSON number, boolean, null, list or object as itself; anything else as the string."""
    try:
        value = json.loads(word)
    except ValueError:
        return word
    return word if isinstance(value, str) else value
