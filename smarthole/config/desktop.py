"""``[desktop]``: the bridge to the SmartHole desktop router (``smarthole.builtins.desktop``).

The name and description are checked here, at start, against the desktop's own rules: the
desktop would refuse the registration anyway, but only at run time and over and over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fields import setting

# The desktop's rules (smarthole-desktop's registration validator), quoted in the errors.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
NAME_RULE = (
    "a SmartHole desktop client name must start with a letter, hold only letters, digits, "
    "- and _, and be at most 64 characters"
)
DESCRIPTION_MAX = 1024
DESCRIPTION_RULE = (
    f"a SmartHole desktop routing description must be 1 to {DESCRIPTION_MAX} characters, not blank"
)
URL_PATTERN = re.compile(r"wss?://\S+")
CHANNEL_PATTERN = re.compile(r"[\w.@+-]{1,64}")  # the inbox's rule for channel names
DEFAULT_DESCRIPTION = "My notes assistant: reads and edits my notes, keeps my lists."


@dataclass(frozen=True)
class DesktopSettings:
    enabled: bool = setting(False, "Connect to the SmartHole desktop router.")
    url: str = setting("ws://127.0.0.1:9473", "The desktop's WebSocket address.")
    name: str = setting("smarthole", "The client name the desktop routes to.")
    description: str = setting(
        DEFAULT_DESCRIPTION, "What the desktop's router reads to decide what to send here."
    )
    channel: str = setting("desktop", "The channel the desktop's messages go to.")

    def __post_init__(self) -> None:
        # build_settings turns a ValueError into "[desktop] <message>" in the ConfigError.
        if not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"name {self.name!r} is not allowed: {NAME_RULE}")
        if not self.description.strip() or len(self.description) > DESCRIPTION_MAX:
            raise ValueError(
                f"description ({len(self.description)} characters) is not allowed: "
                f"{DESCRIPTION_RULE}"
            )
        if not URL_PATTERN.fullmatch(self.url):
            raise ValueError(f"url {self.url!r} must start with ws:// or wss://")
        if not CHANNEL_PATTERN.fullmatch(self.channel):
            raise ValueError(f"channel {self.channel!r} must be 1-64 letters, digits or . _ @ + -")
