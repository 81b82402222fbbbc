"""``[channels]`` and ``[channels.<name>]``: what happens to a message that arrives while a
turn of its conversation runs (``busy``), for every channel and per channel.

``queue`` (the default) answers each message in its own turn, in order; ``collect`` answers the
messages that arrived meanwhile together, in the next turn; ``steer`` gives them to the running
turn at its next tool-call boundary; ``interrupt`` stops the running turn at its next safe point
and answers the new message in the next turn. ``pipeline.busy`` does what they say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .fields import did_you_mean

CHANNEL_PATTERN = re.compile(r"[\w.@+-]{1,64}")  # the inbox's rule for channel names


class BusyPolicy(StrEnum):
    """What a message that arrives while its conversation's turn runs does."""

    QUEUE = "queue"
    COLLECT = "collect"
    STEER = "steer"
    INTERRUPT = "interrupt"


POLICIES = tuple(policy.value for policy in BusyPolicy)
_CHANNEL_KEYS = ("busy",)


@dataclass(frozen=True)
class ChannelsSettings:
    """The ``[channels]`` table: the default policy, and each named channel's own."""

    busy: BusyPolicy = BusyPolicy.QUEUE
    channels: dict[str, BusyPolicy] = field(default_factory=dict)

    def policy(self, channel: str) -> BusyPolicy:
        """The busy policy of ``channel``: its own, else the default."""
        return self.channels.get(channel, self.busy)


def parse_channels(table: dict[str, Any], errors: list[str]) -> ChannelsSettings:
    """Build :class:`ChannelsSettings` from the ``[channels]`` table, one error per bad key."""
    busy = BusyPolicy.QUEUE
    channels: dict[str, BusyPolicy] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            where = f"[channels.{key}]"
            if not CHANNEL_PATTERN.fullmatch(key):
                errors.append(f"{where} bad channel name: 1-64 letters, digits or . _ @ + -")
                continue
            for inner, setting in value.items():
                if inner not in _CHANNEL_KEYS:
                    close = did_you_mean(inner, _CHANNEL_KEYS)
                    errors.append(f"{where} unknown key {inner!r}{close}")
                    continue
                policy = _policy(setting, where, errors)
                if policy is not None:
                    channels[key] = policy
        elif key == "busy":
            busy = _policy(value, "[channels]", errors) or busy
        else:
            errors.append(f"[channels] unknown key {key!r}{did_you_mean(key, ('busy',))}")
    return ChannelsSettings(busy=busy, channels=channels)


def _policy(value: Any, where: str, errors: list[str]) -> BusyPolicy | None:
    if isinstance(value, str) and value in POLICIES:
        return BusyPolicy(value)
    errors.append(f"{where} busy must be one of {', '.join(POLICIES)} (got {value!r})")
    return None
