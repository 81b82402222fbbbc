"""Isolation: one plugin's failing hook implementation must not stop the others, nor the daemon.

Every implementation smarthole registers with pluggy is wrapped (:class:`GuardedPlugin`): a
failure in an isolated hook is logged with the plugin's name and gives no result; one in a
strict hook (:data:`hookspecs.STRICT_HOOKS`) is a ``PluginError`` naming the plugin. Also the
tracer behind ``SMARTHOLE_TRACE_PLUGINS``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import hookspecs
from .errors import PluginError

if TYPE_CHECKING:
    import pluggy

logger = logging.getLogger("smarthole.plugins")  # where these lines always were

calling: ContextVar[str | None] = ContextVar("smarthole_calling_plugin", default=None)


class GuardedPlugin:
    """What smarthole registers with pluggy in place of a plugin: its hooks, each guarded.

    pluggy finds hook implementations among an object's functions and calls them from its own
    call loop, which stops at the first exception. So each implementation of the plugin is
    registered wrapped: a failure in an isolated hook is logged with the plugin's name and the
    implementation gives no result, so the others still run; a failure in a strict hook
    (:data:`hookspecs.STRICT_HOOKS`) becomes a ``PluginError`` naming the plugin. The wrapped
    functions keep their marker options and (through ``__wrapped__``) their signature, so
    pluggy validates, orders, wraps and monitors them exactly as it would the plugin's own.
    """

    def __init__(self, pm: pluggy.PluginManager, plugin: object, name: str, location: str):
        self._label = f"<plugin {name!r} from {location}>"
        for attribute in dir(plugin):
            options = pm.parse_hookimpl_opts(plugin, attribute)
            if options is None:
                continue
            hook = options.get("specname") or attribute
            guard = _Guard(name, hook, location)
            function = getattr(plugin, attribute)
            if options.get("wrapper") or options.get("hookwrapper"):
                guarded = guard.wrapper(function)
            else:
                guarded = guard.implementation(function)
            setattr(guarded, f"{pm.project_name}_impl", options)
            setattr(self, attribute, guarded)

    def __repr__(self) -> str:
        return self._label


@dataclass(frozen=True)
class _Guard:
    """How one plugin's implementation of one hook fails: logged, or a ``PluginError``."""

    plugin: str
    hook: str
    location: str

    @property
    def strict(self) -> bool:
        return self.hook in hookspecs.STRICT_HOOKS

    def failed(self, exc: BaseException) -> None:
        """Raise the ``PluginError`` of a strict hook, or log the failure of an isolated one."""
        if isinstance(exc, PluginError):
            raise exc
        if self.strict:
            raise PluginError(
                f"plugin {self.plugin!r} ({self.location}) failed in {self.hook}: "
                f"{exc or type(exc).__name__}"
            ) from exc
        logger.error("plugin %r failed in hook %s", self.plugin, self.hook, exc_info=exc)

    def implementation(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            token = calling.set(self.plugin)
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                self.failed(exc)
                if self.hook in hookspecs.FAIL_CLOSED_HOOKS:
                    return hookspecs.Deny(f"plugin {self.plugin!r} failed while checking it")
                return None
            finally:
                calling.reset(token)

        return guarded

    def wrapper(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Guard a (new- or old-style) wrapper: one ``yield``, then a result or an exception."""

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Generator[None, Any, Any]:
            try:
                teardown = function(*args, **kwargs)
                next(teardown)
            except Exception as exc:  # the set-up failed: step aside for the others
                self.failed(exc if not isinstance(exc, StopIteration) else _did_not_yield())
                return (yield)
            return (yield from self._finish(teardown))

        return guarded

    def _finish(self, teardown: Generator[None, Any, Any]) -> Generator[None, Any, Any]:
        inner: BaseException | None = None
        try:
            result = yield
        except BaseException as exc:  # the inner call failed (only strict hooks let it out)
            inner, result = exc, None
        try:
            if inner is not None:
                teardown.throw(inner)
            else:
                teardown.send(result)
        except StopIteration as stop:
            return stop.value
        except Exception as exc:
            if exc is inner:
                raise
            self.failed(exc)
            if inner is not None:
                raise inner from None
            return result
        teardown.close()
        raise RuntimeError(f"plugin {self.plugin!r}: the {self.hook} wrapper yielded twice")


def _did_not_yield() -> RuntimeError:
    return RuntimeError("the wrapper did not yield")


def tracer() -> tuple[Callable[..., None], Callable[..., None]]:
    """``add_hookcall_monitoring`` callbacks that log every hook call and its duration."""
    started = threading.local()

    def before(hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        started.__dict__.setdefault("stack", []).append(time.perf_counter())

    def after(
        outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        took = (time.perf_counter() - started.stack.pop()) * 1000
        names = ", ".join(impl.plugin_name for impl in reversed(impls))
        count = f"{len(impls)} implementation{'' if len(impls) == 1 else 's'}"
        failed = f" (failed: {outcome.exception!r})" if outcome.exception else ""
        logger.info("hook %s: %s (%s) in %.3f ms%s", hook_name, count, names, took, failed)

    return before, after
