"""Tools: typed Python functions the agent can call, and the registry that holds them.

A tool's JSON schema and argument validation come from its signature (through pydantic) and
its parameter descriptions from its docstring. A parameter annotated :class:`ToolContext` is
hidden from the model and receives the call's context instead.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PluginError, ToolError, TurnError, TurnInterrupted

if TYPE_CHECKING:
    from ..db.outbox import OutboxItem
    from ..hookspecs import PluginApp

logger = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class TurnControl(Protocol):
    """What a turn offers its tools; implemented by the processor."""

    def send_message(self, text: str, *, is_question: bool, tool_use_id: str) -> OutboxItem: ...

    def end_conversation(self, reason: str | None) -> None: ...


@dataclass(frozen=True)
class ToolContext:
    """Where a tool call happens: give a tool a parameter of this type to receive it."""

    app: PluginApp
    conversation_id: str
    channel: str
    turn: int
    message_id: str
    tool_use_id: str
    control: TurnControl

    def send_message(self, text: str, *, is_question: bool = False) -> OutboxItem:
        """Write an outbox file now (kind ``message``, or ``question``)."""
        return self.control.send_message(
            text, is_question=is_question, tool_use_id=self.tool_use_id
        )

    def end_conversation(self, reason: str | None = None) -> None:
        """End the conversation once this turn completes."""
        self.control.end_conversation(reason)


@dataclass(frozen=True)
class ToolResult:
    """What the model sees: ``text`` as the tool_result content, flagged when it is an error.

    ``blocks``, when given, are the content blocks sent instead (text and image blocks of the
    Messages API); ``text`` is then their readable summary, for events and listings.
    """

    text: str
    is_error: bool = False
    blocks: tuple[dict[str, Any], ...] = ()

    def content(self) -> str | list[dict[str, Any]]:
        """The ``content`` of the tool_result block."""
        return [dict(b) for b in self.blocks] if self.blocks else self.text

    def block(self, tool_use_id: str) -> dict[str, Any]:
        """The whole ``tool_result`` block answering ``tool_use_id``, as stored and sent: every
        agent's turn stores this, so blocks survive a crash and its replay."""
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": self.content(),
            "is_error": self.is_error,
        }


@dataclass(kw_only=True)
class Tool:
    """One registered tool: what the model reads about it, and how to run it.

    ``plugin`` names where it came from (a plugin, or ``mcp:<server>``); ``idempotent``: it may
    run again after a crash cut a call short; ``requires_approval``: each call waits for yes.
    """

    name: str
    description: str
    plugin: str
    idempotent: bool = False
    requires_approval: bool = False
    read_only: bool = False  # it changes nothing: a replay may run it, a fork need not list it

    @property
    def summary(self) -> str:
        """The description's first sentence, for listings (never a line cut at a wrap)."""
        return re.split(r"(?<=[.!?])\s", " ".join(self.description.split("\n\n")[0].split()))[0]

    @property
    def input_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def spec(self) -> dict[str, Any]:
        """The tool definition sent to the Messages API."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }

    def call(self, arguments: Any, context: ToolContext | None) -> ToolResult:
        """Run the tool; never raises (a failure is an ``is_error`` result)."""
        raise NotImplementedError


@dataclass(kw_only=True)
class SchemaTool(Tool):
    """A tool described by an explicit JSON schema and run by ``handler(arguments)``.

    For tools that are not Python functions (an MCP server's): the arguments reach the handler
    as the model wrote them, and the handler itself validates and answers with a
    :class:`ToolResult`.
    """

    schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], ToolResult] = field(repr=False)

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.schema

    def call(self, arguments: Any, context: ToolContext | None) -> ToolResult:
        if not isinstance(arguments, dict):
            return ToolResult(f"Error: arguments for {self.name} must be an object", True)
        try:
            return self.handler(arguments)
        except Exception as exc:
            logger.exception("tool %s (%s) raised", self.name, self.plugin)
            return ToolResult(
                f"Error executing tool {self.name}: {type(exc).__name__}: {exc}", True
            )


@dataclass(kw_only=True)
class FunctionTool(Tool):
    """A typed Python function; its schema and validation come from its signature."""

    function: Callable[..., Any]
    context_parameter: str | None = None
    _arguments: Any = field(default=None, repr=False)

    @property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self._arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("properties", {})
        return schema

    def call(self, arguments: Any, context: ToolContext | None) -> ToolResult:
        """Validate ``arguments`` against the signature and run the tool.

        Whatever goes wrong becomes an error result the model can read, except a ``TurnError``
        or ``TurnInterrupted``: those end the turn, as they would outside a tool.
        """
        import pydantic

        if not isinstance(arguments, dict):
            return ToolResult(f"Error: arguments for {self.name} must be an object", True)
        try:
            # As JSON, which is what the model wrote: strict mode then takes an object for a
            # nested type, and still refuses "7" or true for an integer.
            validated = self._arguments.model_validate_json(json.dumps(arguments))
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            return ToolResult(f"Error: invalid arguments for {self.name}: {problems}", True)
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        if self.context_parameter:
            kwargs[self.context_parameter] = context
        try:
            value = self.function(**kwargs)
        except (TurnError, TurnInterrupted):
            raise  # the turn itself failed or must stop (a team task runs inside a tool)
        except ToolError as exc:
            return ToolResult(f"Error: {exc}", True)
        except Exception as exc:
            logger.exception("tool %s (plugin %s) raised", self.name, self.plugin)
            return ToolResult(
                f"Error executing tool {self.name}: {type(exc).__name__}: {exc}", True
            )
        if isinstance(value, ToolResult):
            return value  # blocks (an image, say) reach the model as they are
        return ToolResult(_as_text(value))


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "Done."
    return json.dumps(value, ensure_ascii=False, default=str, indent=2)


class ToolSet:
    """Some tools, by name: what one agent is offered (see ``ToolSet.only``)."""

    def __init__(self, tools: typing.Iterable[Tool] = ()) -> None:
        self._by_name: dict[str, Tool] = {tool.name: tool for tool in tools}
        self._specs: list[dict[str, Any]] | None = None

    def __iter__(self) -> typing.Iterator[Tool]:
        return iter(list(self._by_name.values()))

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return self.get(str(name)) is not None

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    def specs(self) -> list[dict[str, Any]]:
        """The tool definitions for a request; built once, the same bytes every call (the prompt
        cache stays warm). Never changed in place: the client keeps its JSON text by identity."""
        if self._specs is None:
            self._specs = [tool.spec() for tool in self._by_name.values()]
        return self._specs

    def only(self, allowed: Callable[[str], bool], *extra: Tool) -> ToolSet:
        """The tools whose names are ``allowed`` (in this set's order), then ``extra``."""
        return ToolSet([*(t for t in self if allowed(t.name)), *extra])

    def plus(self, *extra: Tool) -> ToolSet:
        return ToolSet([*self, *extra])


class ToolRegistry(ToolSet):
    """The tools of every plugin, by name, and the tools of each live MCP server.

    Plugin tools are registered once at startup. A *group* of tools (one MCP server's) comes
    and goes while the daemon runs, so reads and changes are guarded by a lock: a turn sees
    either the old or the new set, never half of one.
    """

    def __init__(self) -> None:
        super().__init__()
        self._tools: dict[str, Tool] = {}
        self._groups: dict[str, list[Tool]] = {}
        self._lock = threading.Lock()

    def __iter__(self) -> typing.Iterator[Tool]:
        with self._lock:
            return iter(list(self._by_name.values()))

    def register(
        self,
        function: Callable[..., Any],
        *,
        plugin: str,
        idempotent: bool = False,
        name: str | None = None,
        requires_approval: bool = False,
    ) -> Tool:
        tool = build_tool(function, plugin=plugin, idempotent=idempotent, name=name)
        tool.requires_approval = requires_approval
        with self._lock:
            if tool.name in self._by_name:
                other = self._by_name[tool.name].plugin
                raise PluginError(
                    f"plugin {plugin!r} registers tool {tool.name!r}, "
                    f"already registered by plugin {other!r}"
                )
            self._tools[tool.name] = tool
            self._rebuild()
        return tool

    def replace_group(self, group: str, tools: typing.Iterable[Tool]) -> list[str]:
        """Make ``tools`` the whole of ``group`` (an empty list removes it).

        A tool whose name another plugin or group already has is refused, as is a second tool
        of the same name in ``tools``: their names are returned, the rest are registered.
        """
        with self._lock:
            taken = set(self._tools) | {
                t.name for g, ts in self._groups.items() if g != group for t in ts
            }
            kept: list[Tool] = []
            refused: list[str] = []
            for tool in tools:
                if tool.name in taken:
                    refused.append(tool.name)
                else:
                    taken.add(tool.name)
                    kept.append(tool)
            if kept:
                self._groups[group] = kept
            else:
                self._groups.pop(group, None)
            self._rebuild()
        return refused

    def _rebuild(self) -> None:
        # Plugin tools first, then the groups by name: the same tools give the same order
        # however they came and went, which keeps the prompt cache warm.
        by_name = dict(self._tools)
        for group in sorted(self._groups):
            by_name.update((t.name, t) for t in self._groups[group])
        self._by_name = by_name
        self._specs = None

    def specs(self) -> list[dict[str, Any]]:
        """The tool definitions for a request; built once per set of tools (see ToolSet.specs)."""
        with self._lock:
            if self._specs is None:
                self._specs = [tool.spec() for tool in self._by_name.values()]
            return self._specs


def build_tool(
    function: Callable[..., Any], *, plugin: str, idempotent: bool = False, name: str | None = None
) -> FunctionTool:
    """Make a :class:`FunctionTool` from a typed function; raises ``PluginError`` if it cannot."""
    from .building import derive

    tool_name = str(name or getattr(function, "__name__", ""))
    if not TOOL_NAME.fullmatch(tool_name):
        raise PluginError(
            f"plugin {plugin!r}: tool name {tool_name!r} must match {TOOL_NAME.pattern}"
        )
    description, context_parameter, arguments = derive(function, tool_name, plugin, ToolContext)
    return FunctionTool(
        name=tool_name,
        description=description,
        function=function,
        plugin=plugin,
        idempotent=idempotent,
        context_parameter=context_parameter,
        _arguments=arguments,
    )
