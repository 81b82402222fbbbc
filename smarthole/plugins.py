"""The plugin manager: built-in plugins, entry points, and plugin folders.

Plugins load in that order. ``[plugins] disabled`` removes any plugin by name; ``[plugins]
enabled`` (or ``SMARTHOLE_PLUGINS``, a comma-separated list that takes precedence) limits the
non-built-in plugins to the names listed; ``SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD=1`` skips entry
points (the plugins of installed packages), as pytest's ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` does.
A plugin that cannot be imported stops startup with a ``PluginError`` naming its file; one
that raises inside a notification hook is logged by name and processing goes on.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "smarthole"
PLUGINS_ENV = "SMARTHOLE_PLUGINS"
NO_AUTOLOAD_ENV = "SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD"

BUILTIN_PLUGINS: dict[str, str] = {
    "conversation": "smarthole.tools.conversation",
    "workspace": "smarthole.tools.workspace",
}


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from: ``source`` is built-in, entry point or folder."""

    name: str
    source: str
    location: str


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
    """A pluggy manager plus what smarthole knows about each plugin."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("smarthole")
        self.pm.add_hookspecs(hookspecs)
        self.info: dict[str, PluginInfo] = {}

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def register(self, plugin: object, name: str, *, source: str, location: str) -> None:
        if self.pm.has_plugin(name):
            raise PluginError(
                f"two plugins are named {name!r}: {location} and {self.info[name].location}"
            )
        try:
            self.pm.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {name!r} ({location}): {exc}") from exc
        self.info[name] = PluginInfo(name=name, source=source, location=location)

    def check(self) -> None:
        """Fail loudly when a plugin implements a hook that does not exist (a typo)."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {exc.plugin!r}: {exc}") from exc

    def hook_names(self, name: str) -> list[str]:
        """The hooks plugin ``name`` implements, sorted."""
        plugin = self.pm.get_plugin(name)
        callers = self.pm.get_hookcallers(plugin) or []
        return sorted(caller.name for caller in callers)

    def notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call a notification hook on every plugin; one plugin's exception stops nothing."""
        self.collect(hook_name, **kwargs)

    def collect(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call every implementation, log failures by plugin name, return non-None results."""
        results = []
        for impl in self._implementations(hook_name):
            try:
                result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            except Exception:
                logger.exception("plugin %r failed in hook %s", impl.plugin_name, hook_name)
                continue
            if result is not None:
                results.append(result)
        return results

    def call_strict(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a startup-time hook; an exception becomes a ``PluginError`` naming the plugin."""
        return self.call_each_strict(hook_name, lambda plugin_name: kwargs)

    def call_each_strict(
        self, hook_name: str, arguments_for: Callable[[str], dict[str, Any]]
    ) -> list[Any]:
        """Like :meth:`call_strict`, with arguments made for each plugin by name."""
        results = []
        for impl in self._implementations(hook_name):
            arguments = arguments_for(impl.plugin_name)
            try:
                result = impl.function(*[arguments[arg] for arg in impl.argnames])
            except PluginError:
                raise
            except Exception as exc:
                where = self.info.get(impl.plugin_name)
                location = f" ({where.location})" if where else ""
                raise PluginError(
                    f"plugin {impl.plugin_name!r}{location} failed in {hook_name}: {exc}"
                ) from exc
            if result is not None:
                results.append(result)
        return results

    def _implementations(self, hook_name: str) -> list[Any]:
        # pluggy calls the last registered first; smarthole calls in registration order.
        return list(reversed(getattr(self.pm.hook, hook_name).get_hookimpls()))


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
    plugins = Plugins()
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
