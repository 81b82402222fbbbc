"""Tools made from typed functions: the description from the docstring, the arguments' model
(pydantic, strict) from the signature. Building the model is most of the cost of loading the
tools, so it is made once per function's code and kept for the process."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from ..errors import PluginError

KEPT = 1024  # derived models kept; each plugin reload's new code adds its own
_derived: dict[tuple[Any, ...], tuple[str, str | None, Any]] = {}


def derive(
    function: Callable[..., Any], tool_name: str, plugin: str, context_type: type
) -> tuple[str, str | None, Any]:
    """The description, the context parameter (the one typed ``context_type``) and the
    pydantic model of the arguments of tool ``function``; raises ``PluginError`` if it has
    none. Kept by the function's code (see ``_key``)."""
    key = _key(function, tool_name, plugin)
    derived = _derived.get(key) if key is not None else None
    if derived is None:
        derived = _derive(function, tool_name, plugin, context_type)
        if key is not None:
            if len(_derived) >= KEPT:
                _derived.clear()
            _derived[key] = derived
    return derived


def _key(function: Callable[..., Any], tool_name: str, plugin: str) -> tuple[Any, ...] | None:
    """What a tool's description and argument model are made of: the function's code, doc,
    annotations and defaults. The built-in tools are closures made anew at every load (a
    reload, each in-process daemon): the same code, the same model. None: not to be kept."""
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    try:
        parts = (function.__doc__, function.__annotations__, function.__defaults__)
        return (code, tool_name, plugin, repr(parts), repr(function.__kwdefaults__))
    except AttributeError:
        return None


def _derive(
    function: Callable[..., Any], tool_name: str, plugin: str, context_type: type
) -> tuple[str, str | None, Any]:
    """The description, the context parameter and the pydantic model of a tool's arguments."""
    import docstring_parser
    import pydantic

    doc = docstring_parser.parse(inspect.getdoc(function) or "")
    between = "\n\n" if doc.blank_after_short_description else "\n"  # else a wrapped line
    description = between.join(p for p in (doc.short_description, doc.long_description) if p)
    if not description:
        raise PluginError(
            f"plugin {plugin!r}: tool {tool_name!r} needs a docstring; "
            "it is the description the model reads"
        )
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    try:
        hints = typing.get_type_hints(function)
    except Exception as exc:
        raise PluginError(
            f"plugin {plugin!r}: tool {tool_name!r} has unresolvable type hints: {exc}"
        ) from exc
    fields: dict[str, Any] = {}
    context_parameter = None
    for parameter in inspect.signature(function).parameters.values():
        annotation = hints.get(parameter.name, Any)
        if annotation is context_type:
            context_parameter = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise PluginError(
                f"plugin {plugin!r}: tool {tool_name!r} may not take *args or "
                "**kwargs; the model needs named parameters"
            )
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            annotation,
            pydantic.Field(default, description=param_docs.get(parameter.name)),
        )
    try:
        arguments = pydantic.create_model(
            f"{tool_name}_arguments",
            # strict: an integer argument takes an integer, not "7" or true (which lax mode
            # would turn into 7 and 1 behind the model's back); the model reads the error.
            __config__=pydantic.ConfigDict(
                extra="forbid", arbitrary_types_allowed=False, strict=True
            ),
            **fields,
        )
        arguments.model_json_schema()
    except Exception as exc:
        raise PluginError(
            f"plugin {plugin!r}: tool {tool_name!r} has parameters that have no JSON schema: {exc}"
        ) from exc
    return description, context_parameter, arguments
