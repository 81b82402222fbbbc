"""Configuration: ``config.toml`` read into frozen settings.

The settings are dataclasses, one per TOML table (``settings``); their defaults are the
documented defaults. Loading (``loading``) reports every bad key in one ``ConfigError``, each
named as ``[table] key``. TOML itself is read and written by ``smarthole.formats``.
"""

from .attachments import AttachmentSettings
from .desktop import DesktopSettings
from .fields import build_settings
from .loading import (
    default_config_data,
    load_config,
    parse_config,
    set_up_home,
    write_default_config,
)
from .settings import (
    DEFAULT_INSTRUCTIONS,
    DEFAULT_PERSONA,
    SECTIONS,
    AgentSettings,
    Config,
    ConversationSettings,
    DaemonSettings,
    InboxSettings,
    ModelSettings,
    PluginSettings,
    RetrySettings,
    TitleSettings,
    WebViewSettings,
    WorkspaceSettings,
)

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_PERSONA",
    "SECTIONS",
    "AgentSettings",
    "AttachmentSettings",
    "Config",
    "ConversationSettings",
    "DaemonSettings",
    "DesktopSettings",
    "InboxSettings",
    "ModelSettings",
    "PluginSettings",
    "RetrySettings",
    "TitleSettings",
    "WebViewSettings",
    "WorkspaceSettings",
    "build_settings",
    "default_config_data",
    "load_config",
    "parse_config",
    "set_up_home",
    "write_default_config",
]
