"""The channels' lines of ``smarthole status``: the desktop bridge's, then each channel's."""

from __future__ import annotations

from typing import Any

from ..channels.base import ChannelState
from .output import one_line, short


def channel_lines(report: dict[str, Any]) -> list[str]:
    lines = [desktop_line(report["desktop"])] if "desktop" in report else []
    # A channel with a section of its own (the desktop bridge) has its line above.
    lines += [channel_line(c) for c in report.get("channels", ()) if c["name"] not in report]
    return lines


def desktop_line(bridge: dict[str, Any]) -> str:
    """``desktop bridge: connected to ws://... as smarthole · 2 notifications waiting``."""
    line = f"desktop bridge: {bridge['state']}"
    if bridge["state"] != ChannelState.DISABLED:
        line += f" ({one_line(bridge['url'])} as {one_line(bridge['name'])})"
    if bridge["last_error"] and bridge["state"] != ChannelState.CONNECTED:
        line += f" · last error: {short(bridge['last_error'], 80)}"
    waiting = bridge["notifications_waiting"]
    if waiting:
        line += f" · {waiting} notification{'s' if waiting != 1 else ''} waiting"
    return line


def channel_line(channel: dict[str, Any]) -> str:
    """``channel email: connected · 1 reply waiting (1 failing: ...) · 2 refused``."""
    line = f"channel {one_line(channel['name'])}: {channel['state']}"
    if channel["last_error"] and channel["state"] != ChannelState.CONNECTED:
        line += f" · last error: {short(channel['last_error'], 80)}"
    waiting = channel["waiting"]
    if waiting:
        line += f" · {waiting} deliver{'ies' if waiting != 1 else 'y'} waiting"
    if channel["failing"]:
        line += f" ({channel['failing']} failing: {short(channel['last_send_error'] or '', 60)})"
    refused = channel["details"].get("refused")
    if isinstance(refused, int) and refused:
        line += f" · {refused} refused"
    senders = channel["details"].get("senders")
    if isinstance(senders, list) and senders:  # per sender: a channel each, the latest first
        line += f" · per sender, latest {one_line(str(senders[0]))}"
    return line
