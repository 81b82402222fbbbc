"""Every hook: documented twice (docstring and docs/plugins.md) and exercised by a test here."""

from __future__ import annotations

import inspect
import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from smarthole import Deny, hookimpl, hookspecs
from smarthole.cli import build_parser, main
from smarthole.db.events import Event
from smarthole.db.outbox import OutboxItem
from smarthole.db.records import Conversation, Message, StoredMessage
from smarthole.errors import ConfigError, ModelError
from smarthole.testing import server_error, text, tool_use
from tests.helpers import REPO, drop, finals, read_outbox, run_once, write_config

HOOKS = sorted(
    name
    for name, value in vars(hookspecs).items()
    if callable(value) and hasattr(value, "smarthole_spec")
)
DOCS = (REPO / "docs" / "plugins.md").read_text()


def test_the_hook_list_is_not_empty():
    assert {
        "register_tools",
        "startup",
        "shutdown",
        "message_received",
        "message_stored",
        "deliver",
        "turn_failed",
        "event",
    } <= set(HOOKS)


@pytest.mark.parametrize("name", HOOKS)
def test_each_hook_has_a_docstring_a_docs_section_and_a_test(name):
    spec = getattr(hookspecs, name)
    doc = inspect.getdoc(spec) or ""
    parameters = inspect.signature(spec).parameters
    assert doc.splitlines()[0].strip(), f"{name} needs a one-line summary"
    for parameter in parameters:
        assert f":param {parameter}:" in doc, f"{name} docstring must describe {parameter}"
    heading = re.search(rf"^### {name}\n\n`{name}\(([^)]*)\)`", DOCS, re.MULTILINE)
    assert heading, f"docs/plugins.md needs a '### {name}' section starting with the signature"
    assert heading.group(1).split(", ") == list(parameters)
    section = DOCS[heading.end() :].split("\n### ")[0]
    assert "```python" in section, f"the docs section of {name} needs an example"
    assert f"test_hook_{name}" in globals(), f"{name} needs a test named test_hook_{name}"


class Recorder:
    """A plugin that records every notification it receives."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def of(self, hook: str) -> list[dict]:
        return [kwargs for name, kwargs in self.calls if name == hook]

    @hookimpl
    def startup(self, app):
        self.calls.append(("startup", {"app": app}))

    @hookimpl
    def shutdown(self, app):
        self.calls.append(("shutdown", {"app": app}))

    @hookimpl
    def message_received(self, message):
        self.calls.append(("message_received", {"message": message}))

    @hookimpl
    def message_stored(self, conversation, message):
        self.calls.append(("message_stored", {"conversation": conversation, "message": message}))

    @hookimpl
    def deliver(self, outbox_item):
        self.calls.append(
            ("deliver", {"outbox_item": outbox_item, "exists": outbox_item.path.exists()})
        )

    @hookimpl
    def turn_failed(self, message, error):
        self.calls.append(("turn_failed", {"message": message, "error": error}))

    @hookimpl
    def event(self, event):
        self.calls.append(("event", {"event": event}))


@pytest.fixture
def recorder():
    return Recorder()


def run_with(home, env, *plugins):
    return run_once(home, env, extra_plugins=[(type(p).__name__.lower(), p) for p in plugins])


def test_hook_startup(home, fake, env, recorder):
    run_with(home, env, recorder)
    (call,) = recorder.of("startup")
    assert call["app"].home.root == home


def test_hook_shutdown(home, fake, env, recorder):
    run_with(home, env, recorder)
    assert recorder.names()[-1] == "shutdown"


def test_hook_message_received(home, fake, env, recorder):
    fake.default = text("ok")
    drop(home, "hello", "m1", channel="phone")
    run_with(home, env, recorder)
    (call,) = recorder.of("message_received")
    message = call["message"]
    assert isinstance(message, Message)
    assert (message.id, message.text, message.channel) == ("m1", "hello", "phone")


def test_hook_message_stored(home, fake, env, recorder):
    committed: list[bool] = []

    class Checker:
        @hookimpl
        def message_stored(self, conversation, message):
            row = (
                sqlite3.connect(home / ".smarthole" / "smarthole.db")
                .execute("SELECT 1 FROM messages WHERE id = ?", (message.id,))
                .fetchone()
            )
            committed.append(row is not None)

    fake.add(tool_use("get_conversation", {}))
    fake.add(text("done"))
    drop(home, "hello", "m1")
    run_with(home, env, recorder, Checker())
    calls = recorder.of("message_stored")
    assert [c["message"].kind for c in calls] == ["user", "assistant", "tool_result", "assistant"]
    assert all(isinstance(c["conversation"], Conversation) for c in calls)
    assert all(isinstance(c["message"], StoredMessage) and c["message"].turn == 1 for c in calls)
    assert committed == [True] * 4


def test_hook_deliver(home, fake, env, recorder):
    fake.add(tool_use("send_message", {"message": "Which?", "is_question": True}))
    fake.add(text("Asked."))
    drop(home, "hello", "m1")
    run_with(home, env, recorder)
    calls = recorder.of("deliver")
    assert [c["outbox_item"].kind for c in calls] == ["question", "response"]
    assert all(c["exists"] for c in calls)
    item = calls[-1]["outbox_item"]
    assert isinstance(item, OutboxItem)
    assert (item.in_reply_to, item.turn, item.waiting_for_reply, item.text) == (
        "m1",
        1,
        True,
        "Asked.",
    )
    assert item.as_dict()["text"] == "Asked."


def test_hook_turn_failed(home, fake, env, recorder):
    write_config(home, retry={"max_attempts": 1})
    fake.add(server_error())
    drop(home, "hello", "m1")
    run_with(home, env, recorder)
    (call,) = recorder.of("turn_failed")
    assert call["message"].id == "m1"
    assert isinstance(call["error"], ModelError) and call["error"].status == 500


def test_hook_event(home, fake, env, recorder):
    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_with(home, env, recorder)
    events = [c["event"] for c in recorder.of("event")]
    assert all(isinstance(e, Event) for e in events)
    assert [e.type for e in events][-1] == "turn_completed"
    assert events[-1].as_dict()["message_id"] == "m1"


def test_hook_extend_system_prompt(home, fake, env):
    class Rules:
        @hookimpl
        def extend_system_prompt(self, conversation, message):
            return f"## House rules\nAnswer {message.id} in French."

    fake.default = text("D'accord")
    drop(home, "hello", "m1")
    run_with(home, env, Rules())
    assert "## House rules\nAnswer m1 in French." in fake.requests[0].system_text


def test_hook_register_tools(home, fake, env):
    def shout(words: str) -> str:
        """Say it louder.

        :param words: What to shout.
        """
        return words.upper()

    class Loud:
        @hookimpl
        def register_tools(self, register, app):
            assert app.home.root == home
            register(shout, idempotent=True)

    fake.add(tool_use("shout", {"words": "hello"}))
    fake.add(text("HELLO it is."))
    drop(home, "shout hello", "m1")
    run_with(home, env, Loud())
    spec = next(t for t in fake.requests[0].body["tools"] if t["name"] == "shout")
    assert spec["description"] == "Say it louder."
    assert spec["input_schema"]["properties"]["words"]["description"] == "What to shout."
    assert fake.requests[1].tool_results[0]["content"] == "HELLO"


def test_hook_register_message_commands(home, fake, env):
    """The docs' example answers /roll without the model; a command that raises answers
    with an error reply and changes nothing it changed."""
    example = DOCS.split("### register_message_commands")[1].split("```python\n")[1]
    namespace: dict = {}
    exec(example.split("```")[0], namespace)

    class Breaks:
        @hookimpl
        def register_message_commands(self, register, app):
            assert app.home.root == home

            def broken(context):
                context.parts.conversations.start(context.channel, context.message_id)
                raise RuntimeError("it broke")

            register("broken", broken, "always fails")

    class Dice:
        register_message_commands = staticmethod(namespace["register_message_commands"])

    drop(home, "/roll 20", "r1")
    drop(home, "/broken", "b1", timestamp="2030-01-01T00:00:01Z")
    run_with(home, env, Dice(), Breaks())
    replies = {f["in_reply_to"]: f for f in read_outbox(home)}
    assert replies["r1"]["kind"] == "command" and replies["r1"].text.startswith("You rolled a 20")
    assert replies["b1"]["ok"] is False and "it broke" in replies["b1"].text
    assert fake.requests == []
    with sqlite3.connect(home / ".smarthole" / "smarthole.db") as connection:
        assert connection.execute("SELECT COUNT(*) FROM conversations").fetchone() == (0,)


def test_hook_register_channels(home, fake, env):
    from smarthole.channels import Channel, Incoming

    sent: list[tuple[str, str]] = []

    class Echo(Channel):
        name = "echo"

        def start(self, host):
            super().start(host)
            host.take(Incoming(external_id="e1", text="hello from echo"))
            host.take(Incoming(external_id="e1", text="hello from echo"))  # taken once

        def wake(self):
            for delivery in self.host.due():
                sent.append((delivery.kind, delivery.text))
                self.host.sent(delivery)

        def stop(self):
            pass

    class EchoPlugin:
        @hookimpl
        def register_channels(self, register, app):
            assert app.home.root == home
            register(Echo())

    fake.add(text("Hi, echo."))
    run_with(home, env, EchoPlugin())
    assert sent == [("response", "Hi, echo.")]
    assert len(fake.requests) == 1


@dataclass(frozen=True)
class GreeterSettings:
    greeting: str = "hello"
    times: int = 1

    def __post_init__(self) -> None:
        if self.times > 3:
            raise ValueError("times must be at most 3")


class Greeter:
    def __init__(self) -> None:
        self.seen = None

    @hookimpl
    def register_settings(self, register):
        register("greeter", GreeterSettings)

    @hookimpl
    def startup(self, app):
        self.seen = app.settings("greeter")


def test_hook_register_settings(home, fake, env):
    greeter = Greeter()
    write_config(home, plugins={"greeter": {"greeting": "bonjour"}})
    run_once(home, env, extra_plugins=[("greeter", greeter)])
    assert greeter.seen == GreeterSettings(greeting="bonjour", times=1)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"greting": "x"}, "[plugins.greeter] unknown key 'greting'"),
        ({"times": "two"}, "[plugins.greeter] times must be an integer"),
        ({"times": 5}, "[plugins.greeter] times must be at most 3"),
    ],
)
def test_bad_plugin_settings_stop_startup(home, fake, env, table, message):
    write_config(home, plugins={"greeter": table})
    with pytest.raises(ConfigError) as caught:
        run_once(home, env, extra_plugins=[("greeter", Greeter())])
    assert message in str(caught.value)


def install_plugin(site: Path, name: str, source: str) -> None:
    """Install plugin ``name`` into ``site`` as a distribution with a ``smarthole`` entry point:
    only installed plugins can add commands."""
    module = f"smarthole_{name}"
    (site / module).mkdir()
    (site / module / "__init__.py").write_text(source)
    dist = site / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[smarthole]\n{name} = {module}\n")


def test_hook_register_commands(plugin_site, capsys):
    """The docs' example, installed as a package, adds `smarthole greet NAME`."""
    example = DOCS.split("### register_commands")[1].split("```python\n")[1].split("```")[0]
    install_plugin(plugin_site, "greeter", "from smarthole import hookimpl\n" + example)
    assert "say hello to someone" in build_parser().format_help()
    assert main(["greet", "Ada"]) == 0
    assert capsys.readouterr() == ("Hello, Ada!\n", "")


PLUGIN_COMMANDS = """
from smarthole import SmartholeError, hookimpl

def exit_with(args):
    return int(args.code)

def refuse(args):
    raise SmartholeError(f"cannot with home {args.home}")

@hookimpl
def register_commands(register):
    register("exit-with", exit_with, "exit with CODE").add_argument("code", help="the status")
    register("refuse", refuse, "always fails", aliases=["no"])
"""


@pytest.mark.parametrize(
    ("argv", "code", "err"),
    [
        (["exit-with", "3"], 3, ""),
        (["--home", "/x", "no"], 1, "smarthole: cannot with home /x\n"),
        (["refuse", "--home", "/y"], 1, "smarthole: cannot with home /y\n"),
    ],
)
def test_a_plugin_command_exits_and_fails_as_smartholes_own_do(
    plugin_site, capsys, argv, code, err
):
    install_plugin(plugin_site, "extras", PLUGIN_COMMANDS)
    assert main(argv) == code
    assert capsys.readouterr().err == err


@pytest.mark.parametrize(
    ("source", "warning"),
    [
        (
            "from smarthole import hookimpl\n\n@hookimpl\ndef register_commands(register):\n"
            "    register('ls', print, 'mine now')\n",
            "plugin 'broken' adds the command 'ls', which is taken",
        ),
        ("raise RuntimeError('no network')\n", "plugin 'broken' (entry point smarthole_broken)"),
        (
            "from smarthole import hookimpl\n\n@hookimpl\ndef register_commands(register):\n"
            "    register('x', print, 'x').add_argument('--home')\n",
            "plugin 'broken' (smarthole_broken) failed in register_commands",
        ),
    ],
    ids=["a name taken", "an import that fails", "an option that clashes"],
)
def test_a_plugin_that_cannot_add_its_commands_leaves_smartholes_own_working(
    plugin_site, capsys, source, warning
):
    install_plugin(plugin_site, "broken", source)
    parser = build_parser()  # what `smarthole --help` lists
    err = capsys.readouterr().err
    assert warning in err and err.endswith("; the commands of plugins are left out\n")
    assert len(err.splitlines()) == 1
    assert parser.parse_args(["ls", "--json"]).command == "ls"
    with pytest.raises(SystemExit):
        parser.parse_args(["x"])  # nothing a plugin added before it failed is left


def test_smartholes_own_commands_load_no_plugin(plugin_site, home, capsys):
    """No plugin may take their names, so they need none (and start faster without)."""
    install_plugin(plugin_site, "broken", "raise RuntimeError('no network')\n")
    assert main(["--home", str(home), "conversations"]) == 0
    assert capsys.readouterr() == ("No conversations yet.\n", "")
    assert "smarthole_broken" not in sys.modules


def test_a_failing_notification_hook_is_logged_and_processing_goes_on(home, fake, env, caplog):
    class Broken:
        @hookimpl
        def deliver(self, outbox_item):
            raise RuntimeError("smtp is down")

        @hookimpl
        def event(self, event):
            raise RuntimeError("metrics are down")

    fake.default = text("ok")
    drop(home, "hello", "m1")
    run_once(home, env, extra_plugins=[("broken", Broken())])
    assert finals(home)[0].text == "ok"
    assert "plugin 'broken' failed in hook deliver" in caplog.text
    assert "plugin 'broken' failed in hook event" in caplog.text


def test_docs_guide_plugin_is_under_twenty_lines():
    guide = DOCS.split("## Writing a plugin")[1].split("```python\n")[1].split("```")[0]
    assert len(guide.strip().splitlines()) < 20


def test_docs_testing_example_runs(tmp_path, monkeypatch):
    """The 'Testing a plugin' example of docs/plugins.md, run as written."""
    example = DOCS.split("### Testing a plugin")[1].split("```python\n")[1].split("```")[0]
    guide = DOCS.split("## Writing a plugin")[1].split("```python\n")[1].split("```")[0]
    (tmp_path / "dice.py").write_text(guide)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {}
    exec(compile(example, "docs-example", "exec"), namespace)
    namespace["test_the_agent_can_roll"](tmp_path / "home")
    assert Path(tmp_path / "home" / "outbox").exists()


class Guard:
    """A ``before_tool_call`` plugin that answers as it is told, and remembers what it saw."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.calls: list = []

    @hookimpl
    def before_tool_call(self, call, app):
        self.calls.append(call)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _shout(words: str) -> str:
    """Say it louder.

    :param words: What to shout.
    """
    _shout.runs.append(words)  # type: ignore[attr-defined]
    return words.upper()


@pytest.mark.parametrize(
    ("answer", "runs", "result", "asked"),
    [
        ("allow", ["hi"], "HI", False),
        (None, ["hi"], "HI", False),  # left to [approvals]: nothing configured
        ("ask", [], None, True),
        (Deny("not on Sundays"), [], "Error: denied: not on Sundays", False),
        (RuntimeError("the guard broke"), [], "Error: denied: plugin 'guard' failed", False),
    ],
)
def test_hook_before_tool_call(home, fake, env, caplog, answer, runs, result, asked):
    _shout.runs = []  # type: ignore[attr-defined]

    class Loud:
        @hookimpl
        def register_tools(self, register, app):
            register(_shout, name="shout")

    guard = Guard(answer)
    fake.add(tool_use("shout", {"words": "hi"}))
    fake.add(text("Done."))
    drop(home, "shout hi", "m1")
    run_once(home, env, extra_plugins=[("loud", Loud()), ("guard", guard)])
    (call,) = guard.calls
    assert (call.tool, call.input, call.agent) == ("shout", {"words": "hi"}, "assistant")
    assert call.tool_use_id.startswith("toolu_") and call.conversation and call.task is None
    assert _shout.runs == runs  # type: ignore[attr-defined]
    items = [f for f in read_outbox(home) if f["kind"] == "approval"]
    assert bool(items) is asked
    if result is None:
        assert len(fake.requests) == 1  # the turn waits for the person
    else:
        assert fake.requests[1].tool_results[0]["content"].startswith(result)
    if isinstance(answer, Exception):
        assert "plugin 'guard' failed in hook before_tool_call" in caplog.text
