"""``[mcp]`` and ``[mcp.servers.<name>]``: the MCP servers whose tools the agent may use.

A server runs as a command (stdio: ``command``, ``args``, ``env``, ``cwd``) or is reached at a
``url`` (streamable HTTP, with ``headers``). ``${VAR}`` in those values is read from the
daemon's environment when the server starts (:meth:`McpServerSettings.resolve`), so a secret
stays out of ``config.toml``, and everything shown to a person (logs, status, events) is the
text as written, never the resolved value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .fields import did_you_mean

SERVER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
VARIABLE = re.compile(r"\$\{([^}]*)\}")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_START_TIMEOUT_SECONDS = 20.0
# The environment a stdio server starts with, before its own ``env``: enough to find programs
# and write text, and nothing of the daemon's secrets (ANTHROPIC_API_KEY stays behind).
BASE_ENVIRONMENT = ("PATH", "HOME", "LANG")

# key -> (expected type, what to say when it is not)
_SERVER_KEYS: dict[str, tuple[type, str]] = {
    "command": (str, "a string"),
    "args": (list, "a list of strings"),
    "env": (dict, "a table of strings"),
    "cwd": (str, "a string"),
    "url": (str, "a string"),
    "headers": (dict, "a table of strings"),
    "enabled": (bool, "true or false"),
    "tools": (list, "a list of strings"),
    "idempotent": (list, "a list of strings"),
    "timeout_seconds": (float, "a number"),
    "start_timeout_seconds": (float, "a number"),
}
_STDIO_ONLY = ("args", "env", "cwd")
_HTTP_ONLY = ("headers",)


@dataclass(frozen=True)
class ResolvedServer:
    """A server's launch or connection details with ``${VAR}`` replaced: never log these."""

    command: str | None
    args: list[str]
    env: dict[str, str]
    cwd: Path
    url: str | None
    headers: dict[str, str]
    secrets: tuple[str, ...]  # the values read from ${VAR}s, to blank out of error messages

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text


@dataclass(frozen=True)
class McpServerSettings:
    """One ``[mcp.servers.<name>]`` table, as written."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    tools: list[str] | None = None
    idempotent: list[str] = field(default_factory=list)
    timeout_seconds: float | None = None
    start_timeout_seconds: float | None = None

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """How it is reached, as written in config.toml (``${VAR}`` unexpanded)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def resolve(self, home_root: Path, environ: Mapping[str, str]) -> ResolvedServer:
        """Replace ``${VAR}`` from ``environ``; an unset one is a ``ConfigError`` naming it."""
        secrets: list[str] = []
        where = f"[mcp.servers.{self.name}]"

        def expand(value: str, key: str) -> str:
            def one(match: re.Match[str]) -> str:
                name = match.group(1)
                if name not in environ:
                    raise ConfigError(f"{where} {key}: ${{{name}}} is not set in the environment")
                secrets.append(environ[name])
                return environ[name]

            return VARIABLE.sub(one, value)

        env = {k: environ[k] for k in BASE_ENVIRONMENT if k in environ}
        env.update({k: expand(v, f"env.{k}") for k, v in self.env.items()})
        cwd = Path(expand(self.cwd, "cwd")).expanduser() if self.cwd else home_root
        return ResolvedServer(
            command=expand(self.command, "command") if self.command is not None else None,
            args=[expand(a, f"args[{i}]") for i, a in enumerate(self.args)],
            env=env,
            cwd=cwd if cwd.is_absolute() else home_root / cwd,
            url=expand(self.url, "url") if self.url is not None else None,
            headers={k: expand(v, f"headers.{k}") for k, v in self.headers.items()},
            secrets=tuple(sorted(set(secrets), key=len, reverse=True)),
        )


@dataclass(frozen=True)
class McpSettings:
    """The ``[mcp]`` table: defaults for every server, and the servers by name."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    start_timeout_seconds: float = DEFAULT_START_TIMEOUT_SECONDS
    servers: dict[str, McpServerSettings] = field(default_factory=dict)

    def call_timeout(self, server: McpServerSettings) -> float:
        return _own_or(server.timeout_seconds, self.timeout_seconds)

    def start_timeout(self, server: McpServerSettings) -> float:
        return _own_or(server.start_timeout_seconds, self.start_timeout_seconds)


def _own_or(own: float | None, default: float) -> float:
    return own if own is not None else default


def parse_mcp(table: dict[str, Any], errors: list[str]) -> McpSettings:
    """Build :class:`McpSettings` from the ``[mcp]`` table, one error per bad key."""
    values: dict[str, float] = {}
    servers: dict[str, McpServerSettings] = {}
    for key, value in table.items():
        if key in ("timeout_seconds", "start_timeout_seconds"):
            if _number(value) and value > 0:
                values[key] = float(value)
            else:
                errors.append(f"[mcp] {key} must be a number above 0 (got {value!r})")
        elif key == "servers" and isinstance(value, dict):
            for name, server in value.items():
                parsed = _parse_server(name, server, errors)
                if parsed is not None:
                    servers[name] = parsed
        elif key == "servers":
            errors.append("[mcp] servers must be a table of [mcp.servers.<name>] tables")
        else:
            known = ("timeout_seconds", "start_timeout_seconds", "servers")
            errors.append(f"[mcp] unknown key {key!r}{did_you_mean(key, known)}")
    return McpSettings(**values, servers=servers)


def _parse_server(name: str, table: Any, errors: list[str]) -> McpServerSettings | None:
    where = f"[mcp.servers.{name}]"
    if not SERVER_NAME.fullmatch(name):
        errors.append(f"{where} bad server name {name!r}: it must match {SERVER_NAME.pattern}")
        return None
    if not isinstance(table, dict):
        errors.append(f"{where} must be a table")
        return None
    before = len(errors)
    for key, value in table.items():
        if key not in _SERVER_KEYS:
            errors.append(f"{where} unknown key {key!r}{did_you_mean(key, _SERVER_KEYS)}")
            continue
        problem = _problem(key, value)
        if problem:
            errors.append(f"{where} {key} must be {problem} (got {value!r})")
    if ("command" in table) == ("url" in table):
        which = "both command and url" if "command" in table else "neither command nor url"
        errors.append(f"{where} has {which}: give exactly one")
    else:
        wrong = _HTTP_ONLY if "command" in table else _STDIO_ONLY
        errors.extend(
            f"{where} {key} does not apply to a {'stdio' if 'command' in table else 'url'} server"
            for key in wrong
            if key in table
        )
    for key, value in table.items():
        for text in _texts(value):
            for variable in VARIABLE.findall(text):
                if not VARIABLE_NAME.fullmatch(variable):
                    errors.append(f"{where} {key}: ${{{variable}}} is not a variable name")
    if len(errors) > before:
        return None
    timeouts = {
        k: float(table[k]) for k in ("timeout_seconds", "start_timeout_seconds") if k in table
    }
    return McpServerSettings(name=name, **{**table, **timeouts})


def _problem(key: str, value: Any) -> str | None:
    kind, description = _SERVER_KEYS[key]
    if kind is float:
        ok = _number(value) and value > 0
        return None if ok else "a number above 0"
    if kind is bool:
        return None if isinstance(value, bool) else description
    if kind is str:
        return None if isinstance(value, str) and value else "a non-empty string"
    if kind is list:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        return None if ok else description
    ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    return None if ok else description


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return []
