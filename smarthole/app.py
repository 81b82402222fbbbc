"""The application: one home's config, plugins, tools and store, wired together.

``App`` is what hooks receive as ``app``. It is built by :func:`App.load` and owned by whoever
built it (the daemon, or a CLI command), which must call :meth:`App.close`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import Config, build_settings, load_config
from .config.teams import TeamAgent, resolve_team
from .errors import ConfigError, PluginError
from .formats import Clock, utc_now
from .home import Home
from .plugins import Plugins, load_plugins
from .tools import ToolRegistry

if TYPE_CHECKING:
    from .db.plugindata import PluginData
    from .db.store import Store

logger = logging.getLogger(__name__)


class App:
    """A home's configuration, plugins, tools and store."""

    def __init__(
        self, home: Home, config: Config, plugins: Plugins, *, clock: Clock = utc_now
    ) -> None:
        self.home = home
        self.config = config
        self.plugins = plugins
        self.clock = clock
        self.tools = ToolRegistry()
        self.team: dict[str, TeamAgent] = {}
        self._settings: dict[str, Any] = {}
        self._declared: dict[str, type] = {}
        self._store: Store | None = None
        # The composition root that owns this app's parts (``daemon.runtime.Runtime``), set by
        # it, so a built-in plugin given only ``app`` reaches the same event log and ledger.
        self.root: object | None = None

    @classmethod
    def load(
        cls,
        home: Home,
        config: Config | None = None,
        *,
        extra_plugins: Iterable[tuple[str, object]] = (),
        env: Mapping[str, str] | None = None,
        clock: Clock = utc_now,
    ) -> App:
        """Load config (unless given) and plugins, validate plugin settings, collect tools.

        ``extra_plugins`` are ``(name, plugin)`` pairs registered after the others; tests and
        embedding programs use it to add plugin objects directly.
        """
        config = config if config is not None else load_config(home)
        plugins = load_plugins(
            home_root=home.root,
            folders=config.plugins.paths,
            enabled=config.plugins.enabled,
            disabled=config.plugins.disabled,
            env=os.environ if env is None else env,
        )
        for name, plugin in extra_plugins:
            plugins.register(plugin, name, source="embedded", location=repr(plugin))
        plugins.check()
        app = cls(home, config, plugins, clock=clock)
        try:
            app._load_settings()
            app._load_tools()
            app.team = app._resolve_team(config)
        except BaseException:
            app.close()  # a plugin may have opened the store before another one failed
            raise
        return app

    # -- plugin settings and tools ---------------------------------------------------------

    def _load_settings(self, only: list[str] | None = None) -> None:
        def register(name: str, settings_class: type) -> None:
            if not dataclasses.is_dataclass(settings_class):
                raise PluginError(f"plugin {name!r}: settings must be a dataclass")
            self._declared[name] = settings_class

        self._call_strict(only, "register_settings", register=register)
        self._settings = self._plugin_settings(self.config)

    def _call_strict(self, only: list[str] | None, hook_name: str, **kwargs: Any) -> None:
        if only is None:
            self.plugins.call_strict(hook_name, **kwargs)
        else:
            self.plugins.call_strict_for(only, hook_name, **kwargs)

    def add_plugins(self, files: dict[str, Path]) -> None:
        """Load plugin files into the running app (a reload): their settings, then their
        tools, then their ``startup``. Raises ``PluginError`` or ``ConfigError``."""
        self.plugins.add_folder_plugins(files)
        names = list(files)
        self._load_settings(only=names)
        self._load_tools(only=names)
        self.plugins.call_strict_for(names, "startup", app=self)

    def _plugin_settings(self, config: Config) -> dict[str, Any]:
        """Every plugin's settings from ``config``, checked against what the plugins declared."""
        settings: dict[str, Any] = {}
        errors: list[str] = []
        for name, table in config.plugin_tables.items():
            if name in self._declared:
                settings[name] = build_settings(
                    self._declared[name], table, f"[plugins.{name}]", errors
                )
            else:
                settings[name] = dict(table)
        for name, settings_class in self._declared.items():
            if name not in settings:
                settings[name] = build_settings(settings_class, {}, f"[plugins.{name}]", errors)
        if errors:
            raise ConfigError(f"{self.home.config_file}: " + "; ".join(errors))
        return settings

    def reconfigure(self, config: Config) -> None:
        """Use ``config`` from now on (a reload); raises ``ConfigError`` and keeps the old one.

        Readers take ``app.config`` once per use, so a turn that started before keeps the
        values it read; each attribute is swapped in one assignment.
        """
        settings = self._plugin_settings(config)
        team = self._resolve_team(config)  # instruction files are read again too
        self.config = config
        self._settings = settings
        self.team = team

    def _resolve_team(self, config: Config) -> dict[str, TeamAgent]:
        return resolve_team(
            config.agents,
            home=self.home,
            default_model=config.model.name,
            tool_names={tool.name for tool in self.tools},
            mcp_servers=set(config.mcp.servers),
        )

    def _load_tools(self, only: list[str] | None = None) -> None:
        def register(
            function: Callable[..., Any],
            idempotent: bool = False,
            name: str | None = None,
            requires_approval: bool = False,
            read_only: bool = False,
        ) -> None:
            plugin = self.plugins.calling()  # whose register_tools is running
            if plugin is None:
                raise PluginError("register() works only inside a register_tools hook")
            tool = self.tools.register(
                function,
                plugin=plugin,
                idempotent=idempotent,
                name=name,
                requires_approval=requires_approval,
            )
            tool.read_only = read_only

        self._call_strict(only, "register_tools", register=register, app=self)

    def settings(self, plugin_name: str) -> Any:
        """The validated ``[plugins.<name>]`` settings (a dataclass, or a dict if undeclared)."""
        return self._settings.get(plugin_name, {})

    # -- the store -------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            from .db.store import Store

            self.home.ensure()
            self._store = Store.open(self.home.database, clock=self.clock)
        return self._store

    def plugin_data(self, plugin_name: str) -> PluginData:
        """Persistent JSON values for one plugin, stored in the database."""
        return self.store.plugin_data(plugin_name)

    def now(self) -> datetime:
        return self.clock()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
