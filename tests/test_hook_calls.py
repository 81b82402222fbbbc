"""Hook calls go through pluggy: its call order, wrappers and monitoring, one plugin isolated."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from smarthole import hookimpl
from smarthole.errors import PluginError
from smarthole.plugins import Plugins, load_plugins

Calls = list[str]


def plugin(name: str, calls: Calls, **options: Any) -> object:
    """A plugin whose ``turn_failed`` and ``startup`` record its name in ``calls``."""

    class Recording:
        @hookimpl(**options)
        def turn_failed(self, message, error):
            calls.append(name)
            return name

        @hookimpl(**options)
        def startup(self, app):
            calls.append(name)

    return Recording()


def failing(exception: Exception) -> object:
    """A plugin whose ``turn_failed`` and ``startup`` raise ``exception``."""

    class Failing:
        @hookimpl
        def turn_failed(self, message, error):
            raise exception

        @hookimpl
        def startup(self, app):
            raise exception

    return Failing()


def wrapper(name: str, calls: Calls) -> object:
    """A ``wrapper=True`` plugin that records before and after the other implementations."""

    class Wrapping:
        @hookimpl(wrapper=True)
        def turn_failed(self, message, error):
            calls.append(f"{name}:before")
            results = yield
            calls.append(f"{name}:after {results}")
            return [*results, name]

    return Wrapping()


def manager(*plugins: tuple[str, object], trace: bool = False) -> Plugins:
    """A plugin manager with ``plugins`` registered in the order given."""
    manager = Plugins(trace=trace)
    for name, implementation in plugins:
        manager.register(implementation, name, source="test", location=f"test:{name}")
    manager.check()
    return manager


def notify(plugins: Plugins) -> list[Any]:
    return plugins.collect("turn_failed", message=None, error=RuntimeError("x"))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ["c", "b", "a"]),  # pluggy's order: the last registered first
        ({"a": {"tryfirst": True}}, ["a", "c", "b"]),
        ({"c": {"trylast": True}}, ["b", "a", "c"]),
        ({"a": {"tryfirst": True}, "b": {"tryfirst": True}}, ["b", "a", "c"]),
    ],
)
def test_hooks_are_called_in_pluggys_documented_order(options, expected):
    calls: Calls = []
    plugins = manager(*((n, plugin(n, calls, **options.get(n, {}))) for n in "abc"))
    assert notify(plugins) == expected, "results come in call order"
    assert calls == expected
    calls.clear()
    plugins.call_strict("startup", app=None)
    assert calls == expected


def test_a_wrapper_runs_around_the_other_implementations():
    calls: Calls = []
    plugins = manager(("outer", wrapper("outer", calls)), ("a", plugin("a", calls)))
    assert notify(plugins) == ["a", "outer"]
    assert calls == ["outer:before", "a", "outer:after ['a']"]


def test_an_old_style_hookwrapper_runs_around_them_too():
    calls: Calls = []

    class OldStyle:
        @hookimpl(hookwrapper=True)
        def turn_failed(self, message, error):
            calls.append("before")
            outcome = yield
            calls.append(f"after {outcome.get_result()}")

    plugins = manager(("old", OldStyle()), ("a", plugin("a", calls)))
    assert notify(plugins) == ["a"]
    assert calls == ["before", "a", "after ['a']"]


def test_hookcall_monitoring_sees_every_call():
    seen: list[tuple[str, list[str]]] = []
    plugins = manager(("a", plugin("a", [])), ("b", plugin("b", [])))
    plugins.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append((name, [i.plugin_name for i in impls])),
        lambda outcome, name, impls, kwargs: None,
    )
    notify(plugins)
    plugins.notify("turn_failed", message=None, error=RuntimeError("x"))
    plugins.call_strict("startup", app=None)
    assert seen == [("turn_failed", ["a", "b"])] * 2 + [("startup", ["a", "b"])]


@pytest.mark.parametrize("error", [RuntimeError("smtp is down"), KeyError("x"), ValueError()])
def test_a_failing_plugin_is_logged_by_name_and_the_others_still_run(caplog, error):
    calls: Calls = []
    plugins = manager(
        ("a", plugin("a", calls)), ("broken", failing(error)), ("c", plugin("c", calls))
    )
    assert notify(plugins) == ["c", "a"]
    assert calls == ["c", "a"]
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == "plugin 'broken' failed in hook turn_failed"
    assert record.exc_info is not None and record.exc_info[1] is error


@pytest.mark.parametrize("where", ["set-up", "teardown"])
def test_a_failing_wrapper_is_logged_by_name_and_steps_aside(caplog, where):
    class BrokenWrapper:
        @hookimpl(wrapper=True)
        def turn_failed(self, message, error):
            if where == "set-up":
                raise RuntimeError(f"{where} broke")
            yield
            raise RuntimeError(f"{where} broke")

    calls: Calls = []
    plugins = manager(
        ("a", plugin("a", calls)), ("broken", BrokenWrapper()), ("c", plugin("c", calls))
    )
    assert notify(plugins) == ["c", "a"], "the results are those of the others"
    assert calls == ["c", "a"]
    assert "plugin 'broken' failed in hook turn_failed" in caplog.text
    assert f"{where} broke" in caplog.text


def test_a_failing_startup_hook_stops_with_the_plugins_name():
    calls: Calls = []
    plugins = manager(("a", plugin("a", calls)), ("broken", failing(OSError("no disk"))))
    with pytest.raises(PluginError, match=r"plugin 'broken' \(test:broken\) failed in startup"):
        plugins.call_strict("startup", app=None)
    assert calls == [], "a startup failure stops the call"


def test_an_implementation_knows_which_plugin_is_calling():
    """What ``register_tools`` uses to name the plugin of each tool it registers."""
    plugins = Plugins()
    seen: list[str | None] = []

    class Registering:
        @hookimpl
        def register_settings(self, register):
            register()

    for name in ("a", "b"):
        plugins.register(Registering(), name, source="test", location=name)
    plugins.call_strict("register_settings", register=lambda: seen.append(plugins.calling()))
    assert seen == ["b", "a"]
    assert plugins.calling() is None, "outside a hook call no plugin is calling"


def test_trace_plugins_logs_every_hook_call_and_its_duration(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="smarthole.plugins")
    plugins = load_plugins(home_root=tmp_path, folders=[], env={"SMARTHOLE_TRACE_PLUGINS": "1"})
    plugins.register(plugin("a", []), "a", source="test", location="test:a")
    notify(plugins)
    plugins.call_strict("startup", app=None)
    traced = [r.getMessage() for r in caplog.records if r.getMessage().startswith("hook ")]
    assert len(traced) == 2
    assert traced[0].startswith("hook turn_failed: 1 implementation (a) in ")
    assert traced[0].endswith(" ms") and traced[1].startswith("hook startup: ")


def test_no_tracing_unless_asked(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="smarthole.plugins")
    plugins = load_plugins(home_root=tmp_path, folders=[], env={})
    plugins.register(plugin("a", []), "a", source="test", location="test:a")
    notify(plugins)
    assert not [r for r in caplog.records if r.getMessage().startswith("hook ")]
