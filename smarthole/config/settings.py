"""The settings: one frozen dataclass per ``config.toml`` table, defaults as documented.

``config.example.toml`` repeats every default with its comment, and a test keeps the two in
step. Each field carries its documentation and lower bound as metadata (``_setting``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..formats import parse_duration
from .attachments import AttachmentSettings
from .channels import ChannelsSettings
from .desktop import DesktopSettings
from .email import EmailSettings
from .fields import setting
from .mcp import McpSettings
from .memory import MemorySettings
from .prices import Price
from .schedules import SchedulerSettings, ScheduleSettings
from .teams import TeamAgentSettings, TeamSettings

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


@dataclass(frozen=True)
class ModelSettings:
    name: str = setting("claude-haiku-4-5", "Model used for the agent's turns.")
    max_tokens: int = setting(8192, "Largest reply the model may write per call.", minimum=1)
    base_url: str = setting(
        "", "Messages API base URL; empty means ANTHROPIC_BASE_URL, else Anthropic's API."
    )
    timeout_seconds: float = setting(300.0, "Timeout of one model call.", minimum=1)
    sdk_max_retries: int = setting(
        0,
        "Retries inside the SDK itself; the daemon owns the schedule, so keep it 0-2.",
        minimum=0,
    )


@dataclass(frozen=True)
class AgentSettings:
    persona: str = setting(DEFAULT_PERSONA, "Who the agent is; first part of the system prompt.")
    instructions: str = setting(DEFAULT_INSTRUCTIONS, "How the agent should work.")
    name: str = setting("assistant", "The entry agent's name in events, exports and teams.")


@dataclass(frozen=True)
class InboxSettings:
    max_message_bytes: int = setting(
        256 * 1024, "Inbox files larger than this are set aside in failed/.", minimum=1
    )
    rescan_seconds: float = setting(
        5.0, "Full scan of inbox/ this often; filesystem events are only hints.", minimum=0.05
    )
    settle_seconds: float = setting(
        1.0,
        "Where the system cannot tell whether a file is still being written, take it once it "
        "has not changed for this long.",
        minimum=0,
    )
    attachment_text: str = setting(
        "", "The text of a message that is attachments alone (a photo dropped by itself)."
    )


@dataclass(frozen=True)
class ConversationSettings:
    idle_timeout_minutes: float = setting(
        30.0, "A channel's conversation ends after this long without a message.", minimum=0
    )
    max_tool_iterations: int = setting(10, "Tool rounds allowed in one turn.", minimum=1)
    pending_state_timeout_minutes: float = setting(
        60.0, "An unanswered question is forgotten after this long.", minimum=0
    )
    history_budget_tokens: int = setting(
        60000, "Earlier messages sent to the model, estimated at 4 characters a token.", minimum=1
    )
    max_retained: int = setting(
        1000, "Ended conversations kept before `smarthole prune` removes the oldest.", minimum=1
    )


@dataclass(frozen=True)
class RetrySettings:
    max_attempts: int = setting(8, "Attempts before a message is dead.", minimum=1)
    base_delay_seconds: float = setting(
        2.0, "First backoff delay when the server names none; doubles per attempt.", minimum=0
    )
    max_delay_seconds: float = setting(
        3600.0, "Longest wait before the next attempt, even if the server asks more.", minimum=0
    )


@dataclass(frozen=True)
class DaemonSettings:
    workers: int = setting(4, "Channels processed at the same time.", minimum=1)
    shutdown_grace_seconds: float = setting(
        10.0,
        "On SIGTERM/SIGINT, how long in-flight turns may take to reach a safe point.",
        minimum=0,
    )
    log_level: str = setting(
        "info", "Log level of `smarthole run`: debug, info, warning or error (--log-level wins)."
    )
    idle_release_seconds: float = setting(
        60.0,
        "After this long with no message waiting or running, let go of the history kept for "
        "fast model calls and of SQLite's page cache (both are read again when needed).",
        minimum=0,
    )

    def __post_init__(self) -> None:
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}")


@dataclass(frozen=True)
class TitleSettings:
    enabled: bool = setting(True, "Generate conversation titles and summaries with a model.")
    model: str = setting("claude-haiku-4-5", "Model for titles and summaries.")


@dataclass(frozen=True)
class WorkspaceSettings:
    protected: list[str] = setting(
        [], "Extra folders of workspace/ the agent may not touch (.git etc. always are)."
    )
    max_write_bytes: int = setting(1024 * 1024, "Largest file a tool may write.", minimum=1)


@dataclass(frozen=True)
class PluginSettings:
    paths: list[str] = setting(
        [], "Folders whose *.py files are loaded as plugins (relative to the home)."
    )
    enabled: list[str] = setting([], "Load only these plugins; empty means all.")
    disabled: list[str] = setting([], "Never load these plugins.")


@dataclass(frozen=True)
class WebViewSettings:
    enabled: bool = setting(False, "Serve the live web view from `smarthole run`.")
    host: str = setting("127.0.0.1", "Address of the web view; 127.0.0.1 is this machine only.")
    port: int = setting(8470, "Port of the web view.", minimum=0)

    def __post_init__(self) -> None:
        if not self.host.strip() or any(c.isspace() or c in "/?#@" for c in self.host):
            raise ValueError(f"host {self.host!r} is not an address")
        if self.port > 65535:
            raise ValueError(f"port must be at most 65535, not {self.port}")


@dataclass(frozen=True)
class ApprovalSettings:
    tools: list[str] = setting(
        [], "Glob patterns over tool names whose calls wait for a person's approval."
    )
    timeout: str = setting("24h", "No answer within this: the call is denied (30s, 15m, 2h, 7d).")
    ask_on_unknown: bool = setting(
        False, "Ask the person, not the model, about a call a crash left in doubt."
    )

    def __post_init__(self) -> None:
        parse_duration(self.timeout)  # a ValueError names the bad value

    @property
    def timeout_seconds(self) -> float:
        return parse_duration(self.timeout)


@dataclass(frozen=True)
class BudgetSettings:
    per_conversation: float = setting(
        0.0, "Dollars one conversation may spend; 0 means no cap.", minimum=0
    )
    per_task: float = setting(0.0, "Dollars one team task may spend; 0 means no cap.", minimum=0)
    per_day: float = setting(0.0, "Dollars the home may spend in a UTC day; 0: no cap.", minimum=0)
    per_month: float = setting(
        0.0, "Dollars the home may spend in a UTC month; 0 means no cap.", minimum=0
    )
    raise_by: float = setting(
        0.0,
        "An approved cap goes up by this many dollars; 0 means the cap's own amount.",
        minimum=0,
    )


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
    "teams": TeamSettings,
    "desktop": DesktopSettings,
    "email": EmailSettings,
    "web": WebViewSettings,
    "approvals": ApprovalSettings,
    "attachments": AttachmentSettings,
    "scheduler": SchedulerSettings,
    "memory": MemorySettings,
    "budget": BudgetSettings,
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
    teams: TeamSettings = field(default_factory=TeamSettings)
    agents: dict[str, TeamAgentSettings] = field(default_factory=dict)
    desktop: DesktopSettings = field(default_factory=DesktopSettings)
    email: EmailSettings = field(default_factory=EmailSettings)
    web: WebViewSettings = field(default_factory=WebViewSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    approvals: ApprovalSettings = field(default_factory=ApprovalSettings)
    attachments: AttachmentSettings = field(default_factory=AttachmentSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    schedules: tuple[ScheduleSettings, ...] = ()
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    prices: dict[str, Price] = field(default_factory=dict)  # [prices."<model>"], over the defaults
    channels: ChannelsSettings = field(default_factory=ChannelsSettings)
    plugin_tables: dict[str, dict[str, Any]] = field(default_factory=dict)
