"""The plugin manager: built-in plugins, entry points, and plugin folders.

Plugins load in that order. ``[plugins] disabled`` removes any plugin by name; ``[plugins]
enabled`` (or ``SMARTHOLE_PLUGINS``, a comma-separated list that takes precedence) limits the
non-built-in plugins to the names listed; ``SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD=1`` skips entry
points (the plugins of installed packages), as pytest's ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` does.
A plugin that cannot be imported stops startup with a ``PluginError`` naming its file.

Hooks are called through pluggy, in pluggy's order: ``tryfirst`` implementations, then the
last registered first (folder plugins, entry points, built-ins), then ``trylast`` ones, with
``wrapper=True`` implementations around them all. An implementation that raises in a strict
hook (``hookspecs.STRICT_HOOKS``: ``register_*`` and ``startup``) stops startup with a
``PluginError`` naming it; in any other hook it is logged by name and the others still run.
``SMARTHOLE_TRACE_PLUGINS=1`` logs every hook call and its duration.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError
from .isolation import GuardedPlugin, calling, tracer

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "smarthole"
PLUGINS_ENV = "SMARTHOLE_PLUGINS"
NO_AUTOLOAD_ENV = "SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD"
TRACE_ENV = "SMARTHOLE_TRACE_PLUGINS"

BUILTIN_PLUGINS: dict[str, str] = {
    "commands": "smarthole.builtins.commands",
    "channels": "smarthole.builtins.channels",
    "conversation": "smarthole.builtins.conversation",
    "desktop": "smarthole.builtins.desktop.plugin",
    "email": "smarthole.builtins.email.plugin",
    "teams": "smarthole.builtins.teams",
    "workspace": "smarthole.builtins.workspace.plugin",
}
"""smarthole's own plugins (``smarthole/builtins/``): the name users see, and the module."""


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from: ``source`` is built-in, entry point or folder."""

    name: str
    source: str
    location: str
    plugin: object = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class PluginSelection:
    """Which plugins may load, by name."""

    enabled: frozenset[str] | None
    disabled: frozenset[str]

    @classmethod
    def from_settings(
        cls, enabled: Iterable[str], disabled: Iterable[str], env: Mapping[str, str]
    ) -> PluginSelection:
        chosen: Iterable[str] | None = list(enabled) or None
        if PLUGINS_ENV in env:
            chosen = [n.strip() for n in env[PLUGINS_ENV].split(",") if n.strip()]
        return cls(
            enabled=frozenset(chosen) if chosen is not None else None,
            disabled=frozenset(disabled),
        )

    def allows(self, name: str, *, builtin: bool = False) -> bool:
        if name in self.disabled:
            return False
        return builtin or self.enabled is None or name in self.enabled


class Plugins:
    """A pluggy manager plus what smarthole knows about each plugin.

    Every hook call goes through pluggy (:meth:`collect`, :meth:`notify`, :meth:`call_strict`),
    so implementations run in pluggy's order, ``wrapper=True`` implementations wrap the others
    and ``pm.add_hookcall_monitoring`` sees each call. Isolation comes from what is registered:
    each plugin's hook functions, guarded (see :class:`~smarthole.isolation.GuardedPlugin`).
    """

    def __init__(self, *, trace: bool = False) -> None:
        self.pm = pluggy.PluginManager("smarthole")
        self.pm.add_hookspecs(hookspecs)
        self.info: dict[str, PluginInfo] = {}
        self.trace = trace
        if trace:
            self.pm.add_hookcall_monitoring(*tracer())

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def register(self, plugin: object, name: str, *, source: str, location: str) -> None:
        if self.pm.has_plugin(name):
            raise PluginError(
                f"two plugins are named {name!r}: {location} and {self.info[name].location}"
            )
        twin = next((i for i in self.info.values() if i.plugin is plugin), None)
        if twin is not None:
            raise PluginError(f"plugin {name!r} ({location}) is already loaded as {twin.name!r}")
        try:
            self.pm.register(GuardedPlugin(self.pm, plugin, name, location), name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r} ({location}): {exc}") from exc
        self.info[name] = PluginInfo(name=name, source=source, location=location, plugin=plugin)

    def check(self) -> None:
        """Fail loudly when a plugin implements a hook that does not exist (a typo)."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = self.pm.get_name(exc.plugin)
            where = self.info[name].location if name in self.info else ""
            raise PluginError(f"plugin {name!r} ({where}): {exc}") from exc

    def listens(self, hook_name: str) -> bool:
        """Whether a call of ``hook_name`` would reach anything (an implementation, a tracer)."""
        return self.trace or bool(getattr(self.pm.hook, hook_name).get_hookimpls())

    def folder_plugins(self) -> dict[str, Path]:
        """The loaded plugins that came from plugin folders, and their files."""
        return {i.name: Path(i.location) for i in self.info.values() if i.source == "folder"}

    def add_folder_plugins(self, files: dict[str, Path]) -> None:
        """Import and register plugin files while the daemon runs (a reload); all or none."""
        modules = {name: _import_file(path) for name, path in files.items()}
        for name, module in modules.items():
            self.register(module, name, source="folder", location=str(files[name]))
        self.check()

    def call_strict_for(self, names: Iterable[str], hook_name: str, **kwargs: Any) -> list[Any]:
        """:meth:`call_strict`, reaching only the plugins ``names`` (ones loaded late)."""
        if hook_name not in hookspecs.STRICT_HOOKS:
            raise ValueError(f"{hook_name} is an isolated hook: call it with collect or notify")
        wanted = set(names)
        others = [p for name, p in self.pm.list_name_plugin() if name not in wanted]
        return list(self.pm.subset_hook_caller(hook_name, remove_plugins=others)(**kwargs))

    def hook_names(self, name: str) -> list[str]:
        """The hooks plugin ``name`` implements, sorted."""
        plugin = self.pm.get_plugin(name)
        callers = self.pm.get_hookcallers(plugin) or []
        return sorted(caller.name for caller in callers)

    def calling(self) -> str | None:
        """The name of the plugin whose implementation is running, if any (``register_*``)."""
        return calling.get()

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call a notification hook; a plugin that raises is logged and the others still run."""
        self.collect(hook_name, **kwargs)

    def collect(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call an isolated hook; returns the non-None results in call order."""
        if hook_name in hookspecs.STRICT_HOOKS:
            raise ValueError(f"{hook_name} is a strict hook: call it with call_strict")
        caller = getattr(self.pm.hook, hook_name)
        if not self.trace and not caller.get_hookimpls():
            return []  # most hooks of a message have no implementation: skip pluggy's call
        return list(caller(**kwargs))

    def first(self, hook_name: str, **kwargs: Any) -> Any:
        """Call an isolated ``firstresult`` hook; returns the first non-None answer, or None."""
        caller = getattr(self.pm.hook, hook_name)
        if not self.trace and not caller.get_hookimpls():
            return None
        return caller(**kwargs)

    def call_strict(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a startup-time hook; a failure is a ``PluginError`` naming the plugin."""
        if hook_name not in hookspecs.STRICT_HOOKS:
            raise ValueError(f"{hook_name} is an isolated hook: call it with collect or notify")
        return list(getattr(self.pm.hook, hook_name)(**kwargs))


def load_plugins(
    *,
    home_root: Path,
    folders: Iterable[str],
    enabled: Iterable[str] = (),
    disabled: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> Plugins:
    """Build the plugin manager from built-ins, entry points and plugin folders."""
    env = os.environ if env is None else env
    selection = PluginSelection.from_settings(enabled, disabled, env)
    plugins = Plugins(trace=env_flag(env, TRACE_ENV))
    for name, module_name in BUILTIN_PLUGINS.items():
        if selection.allows(name, builtin=True):
            module = importlib.import_module(module_name)
            plugins.register(module, name, source="built-in", location=module_name)
    if not env_flag(env, NO_AUTOLOAD_ENV):
        _load_entry_points(plugins, selection)
    for folder in folders:
        _load_folder(plugins, selection, _resolve_folder(home_root, folder))
    plugins.check()
    return plugins


def load_installed_plugins(env: Mapping[str, str] | None = None) -> Plugins:
    """The plugins of installed packages (entry points) alone, for ``register_commands``.

    The command line is read before the home is known, so its plugin folders and ``[plugins]``
    settings cannot apply; the environment's choices (``SMARTHOLE_PLUGINS``, no autoload) do.
    """
    env = os.environ if env is None else env
    plugins = Plugins(trace=env_flag(env, TRACE_ENV))
    if not env_flag(env, NO_AUTOLOAD_ENV):
        _load_entry_points(plugins, PluginSelection.from_settings((), (), env))
    plugins.check()
    return plugins


def folder_plugin_files(
    *,
    home_root: Path,
    folders: Iterable[str],
    enabled: Iterable[str] = (),
    disabled: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """The plugin files the folders hold now, by plugin name, as :func:`load_plugins` would
    take them (a missing folder holds none)."""
    selection = PluginSelection.from_settings(enabled, disabled, os.environ if env is None else env)
    files: dict[str, Path] = {}
    for folder in folders:
        path = _resolve_folder(home_root, folder)
        for file in sorted(path.glob("*.py")) if path.is_dir() else []:
            if not file.stem.startswith(("_", ".")) and selection.allows(file.stem):
                files.setdefault(file.stem, file)
    return files


def env_flag(env: Mapping[str, str], name: str) -> bool:
    """Whether ``name`` is set to something other than empty, 0, false or no."""
    return env.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _resolve_folder(home_root: Path, folder: str) -> Path:
    path = Path(folder).expanduser()
    return path if path.is_absolute() else home_root / path


def _load_entry_points(plugins: Plugins, selection: PluginSelection) -> None:
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if not selection.allows(ep.name):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(
                f"plugin {ep.name!r} (entry point {ep.value}) failed to import: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        plugins.register(plugin, ep.name, source="entry point", location=ep.value)


def _load_folder(plugins: Plugins, selection: PluginSelection, folder: Path) -> None:
    if not folder.is_dir():
        raise PluginError(f"plugin folder {folder} does not exist ([plugins] paths)")
    for path in sorted(folder.glob("*.py")):
        name = path.stem
        if name.startswith(("_", ".")) or not selection.allows(name):
            continue
        plugins.register(_import_file(path), name, source="folder", location=str(path))


def _import_file(path: Path) -> object:
    module_name = f"smarthole_plugins.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin file {path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise PluginError(
            f"plugin file {path} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    return module
