"""The settings: one frozen dataclass per ``config.toml`` table, defaults as documented.

``config.example.toml`` repeats every default with its comment, and a test keeps the two in
step. Each field carries its documentation and lower bound as metadata (``_setting``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


LOG_LEVELS = ("debug", "info", "warning", "error")


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
    log_level: str = _setting(
        "info", "Log level of `smarthole run`: debug, info, warning or error (--log-level wins)."
    )

    def __post_init__(self) -> None:
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")


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
