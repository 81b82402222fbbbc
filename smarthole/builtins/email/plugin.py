"""The email channel as a built-in plugin: offered to the channel host when ``[email]
enabled = true``. Nothing is imported from the channel's modules until then."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ... import hookimpl

if TYPE_CHECKING:
    from ...hookspecs import PluginApp


@hookimpl
def register_channels(register: Callable[[Any], None], app: PluginApp) -> None:
    settings = getattr(getattr(app, "config", None), "email", None)
    if settings is None or not settings.enabled:
        return
    from ...daemon.runtime import Runtime
    from .channel import EmailChannel

    env = Runtime.of(app).env
    register(EmailChannel(settings, os.environ if env is None else env, app.home.root))
