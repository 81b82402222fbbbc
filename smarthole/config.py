"""Configuration: the home folder's layout and ``config.toml``.

The settings are dataclasses, one per TOML table; their defaults are the documented defaults
(``config.example.toml`` repeats them with comments, and a test keeps the two in step). Loading
reports every bad key in one ``ConfigError``, each named as ``[table] key``.

This module owns TOML: ``tomllib`` to read and ``tomli_w`` to write, for config files and for the
front matter of inbox and outbox files alike.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import ConfigError
from .formats import dumps_toml, loads_toml
from .home import Home

DEFAULT_PERSONA = (
    "You are smarthole, a personal assistant that people reach by dropping a message into a "
    "folder. Your replies are read later, often on a phone, so be warm, direct and brief."
)
DEFAULT_INSTRUCTIONS = """\
- Answer in plain text or light Markdown. Lead with the answer.
- Use the workspace tools to read, write and organise the user's notes when that helps.
- If you cannot act well without more information, ask one clear question with the
  send_message tool and is_question set to true, then end your turn; the user's next message
  is the answer. Otherwise make a sensible choice and say what you chose.
- Call end_conversation when the user's request is fully done and they are saying goodbye."""


# -- settings tables -------------------------------------------------------------------------


def _setting(default: Any, doc: str, *, minimum: float | None = None) -> Any:
    """A dataclass field carrying its documentation and lower bound as metadata."""
    metadata = {"doc": doc, "minimum": minimum}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class ModelSettings:
    name: str = _setting("claude-haiku-4-5", "Model used for the agent's turns.")
    max_tokens: int = _setting(8192, "Largest reply the model may write per call.", minimum=1)
    base_url: str = _setting(
        "", "Messages API base URL; empty means ANTHROPIC_BASE_URL, else Anthropic's API."
    )
    timeout_seconds: float = _setting(300.0, "Timeout of one model call.", minimum=1)
    sdk_max_retries: int = _setting(
        0,
        "Retries inside the SDK itself; the daemon owns the schedule, so keep it 0-2.",
        minimum=0,
    )


@dataclass(frozen=True)
class AgentSettings:
    persona: str = _setting(DEFAULT_PERSONA, "Who the agent is; first part of the system prompt.")
    instructions: str = _setting(DEFAULT_INSTRUCTIONS, "How the agent should work.")


@dataclass(frozen=True)
class InboxSettings:
    max_message_bytes: int = _setting(
        256 * 1024, "Inbox files larger than this are set aside in failed/.", minimum=1
    )
    rescan_seconds: float = _setting(
        5.0, "Full scan of inbox/ this often; filesystem events are only hints.", minimum=0.05
    )
    settle_seconds: float = _setting(
        1.0,
        "Where the system cannot tell whether a file is still being written, take it once it "
        "has not changed for this long.",
        minimum=0,
    )


@dataclass(frozen=True)
class ConversationSettings:
    idle_timeout_minutes: float = _setting(
        30.0, "A channel's conversation ends after this long without a message.", minimum=0
    )
    max_tool_iterations: int = _setting(10, "Tool rounds allowed in one turn.", minimum=1)
    pending_state_timeout_minutes: float = _setting(
        60.0, "An unanswered question is forgotten after this long.", minimum=0
    )
    history_budget_tokens: int = _setting(
        60000, "Earlier messages sent to the model, estimated at 4 characters a token.", minimum=1
    )
    max_retained: int = _setting(
        1000, "Ended conversations kept before `smarthole prune` removes the oldest.", minimum=1
    )


@dataclass(frozen=True)
class RetrySettings:
    max_attempts: int = _setting(8, "Attempts before a message is dead.", minimum=1)
    base_delay_seconds: float = _setting(
        2.0, "First backoff delay when the server names none; doubles per attempt.", minimum=0
    )
    max_delay_seconds: float = _setting(
        3600.0, "Longest wait before the next attempt, even if the server asks more.", minimum=0
    )


@dataclass(frozen=True)
class DaemonSettings:
    workers: int = _setting(4, "Channels processed at the same time.", minimum=1)
    shutdown_grace_seconds: float = _setting(
        10.0,
        "On SIGTERM/SIGINT, how long in-flight turns may take to reach a safe point.",
        minimum=0,
    )


@dataclass(frozen=True)
class TitleSettings:
    enabled: bool = _setting(True, "Generate conversation titles and summaries with a model.")
    model: str = _setting("claude-haiku-4-5", "Model for titles and summaries.")


@dataclass(frozen=True)
class WorkspaceSettings:
    protected: list[str] = _setting(
        [], "Extra folders of workspace/ the agent may not touch (.git etc. always are)."
    )
    max_write_bytes: int = _setting(1024 * 1024, "Largest file a tool may write.", minimum=1)


@dataclass(frozen=True)
class PluginSettings:
    paths: list[str] = _setting(
        [], "Folders whose *.py files are loaded as plugins (relative to the home)."
    )
    enabled: list[str] = _setting([], "Load only these plugins; empty means all.")
    disabled: list[str] = _setting([], "Never load these plugins.")


SECTIONS: dict[str, type] = {
    "model": ModelSettings,
    "agent": AgentSettings,
    "inbox": InboxSettings,
    "conversation": ConversationSettings,
    "retry": RetrySettings,
    "daemon": DaemonSettings,
    "titles": TitleSettings,
    "workspace": WorkspaceSettings,
    "plugins": PluginSettings,
}


@dataclass(frozen=True)
class Config:
    """Everything in ``config.toml``; ``plugin_tables`` holds the ``[plugins.<name>]`` tables."""

    model: ModelSettings = field(default_factory=ModelSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    inbox: InboxSettings = field(default_factory=InboxSettings)
    conversation: ConversationSettings = field(default_factory=ConversationSettings)
    retry: RetrySettings = field(default_factory=RetrySettings)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    titles: TitleSettings = field(default_factory=TitleSettings)
    workspace: WorkspaceSettings = field(default_factory=WorkspaceSettings)
    plugins: PluginSettings = field(default_factory=PluginSettings)
    plugin_tables: dict[str, dict[str, Any]] = field(default_factory=dict)


# -- the home folder -------------------------------------------------------------------------


# -- TOML ------------------------------------------------------------------------------------


# -- loading and validating ------------------------------------------------------------------

T = TypeVar("T")


def load_config(home: Home) -> Config:
    """Read ``config.toml`` from ``home``; a missing file means all defaults."""
    path = home.config_file
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    return parse_config(loads_toml(text, source=str(path)), source=str(path))


def parse_config(data: dict[str, Any], *, source: str = "config.toml") -> Config:
    errors: list[str] = []
    sections: dict[str, Any] = {}
    plugin_tables: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if name not in SECTIONS:
            errors.append(f"unknown table [{name}]")
            continue
        if not isinstance(value, dict):
            errors.append(f"[{name}] must be a table")
            continue
        if name == "plugins":
            value = dict(value)
            plugin_tables = {k: value.pop(k) for k in list(value) if isinstance(value[k], dict)}
        sections[name] = build_settings(SECTIONS[name], value, f"[{name}]", errors)
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(errors))
    return Config(**sections, plugin_tables=plugin_tables)


def build_settings(cls: type[T], table: dict[str, Any], where: str, errors: list[str]) -> T:
    """Build dataclass ``cls`` from a TOML table, appending one message per bad key."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            errors.append(f"{where} unknown key {key!r}")
            continue
        problem = _check_value(value, hints[key], known[key].metadata.get("minimum"))
        if problem:
            errors.append(f"{where} {key} {problem}")
        else:
            values[key] = float(value) if hints[key] is float else value
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a plugin's own __post_init__ validation
        errors.append(f"{where} {exc}")
        return cls()


def _check_value(value: Any, hint: Any, minimum: float | None) -> str | None:
    """Why ``value`` does not fit the type ``hint``, or None when it does."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [h for h in typing.get_args(hint) if h is not type(None)]
        return (
            None
            if any(_check_value(value, h, minimum) is None for h in options)
            else (f"has the wrong type (got {value!r})")
        )
    if hint is bool:
        return None if isinstance(value, bool) else f"must be true or false (got {value!r})"
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer (got {value!r})"
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number (got {value!r})"
    elif hint is str:
        return None if isinstance(value, str) else f"must be a string (got {value!r})"
    elif origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        if not isinstance(value, list) or (
            item is str and not all(isinstance(v, str) for v in value)
        ):
            return f"must be a list of strings (got {value!r})"
        return None
    elif origin is dict or hint is dict:
        return None if isinstance(value, dict) else f"must be a table (got {value!r})"
    else:
        return None
    if minimum is not None and value < minimum:
        return f"must be at least {minimum:g} (got {value!r})"
    return None


# -- writing ---------------------------------------------------------------------------------


def default_config_data(plugin_paths: list[str] | None = None) -> dict[str, Any]:
    """Every setting with its default, as a TOML-ready dict."""
    data: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        data[name] = dataclasses.asdict(cls())
    if plugin_paths is not None:
        data["plugins"]["paths"] = plugin_paths
    return data


def write_default_config(home: Home, *, plugin_paths: list[str] | None = None) -> bool:
    """Write ``config.toml`` with every default; never overwrite. Returns True if written."""
    from .fsutil import atomic_write

    if home.config_file.exists():
        return False
    try:
        atomic_write(
            home.config_file,
            dumps_toml(default_config_data(plugin_paths)).encode(),
            exclusive=True,
        )
    except FileExistsError:
        return False
    return True
