"""smarthole: drop a file in a folder, get an answer from a Claude agent."""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("smarthole")
"""Marker for plugin hook implementations: ``@hookimpl def startup(app): ...``."""

__all__ = ["__version__", "hookimpl"]
