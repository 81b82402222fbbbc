"""``smarthole demo``: the real daemon, a temporary home, and a scripted fake model.

A newcomer with no API key and no network sees the whole loop: a message dropped into the
inbox, the agent asking a question, the answer arriving as the next message, the pending
question restored as context, a workspace file written, and every outbox file as it appears.
With ``--home DIR`` (a new or empty folder) the demo's home is kept there, to look around
afterwards with ``smarthole conversations --home DIR``, ``show``, ``events``.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from ..config import set_up_home
from ..daemon import Daemon
from ..errors import ExitCode, UsageError
from ..formats import dumps_toml
from ..home import Home
from ..pipeline.inbox import drop_message
from ..testing import FakeMessagesAPI, RecordedRequest, Reply, text, tool_use

QUESTION = "Which list should I add milk to: groceries or the party list?"
EXCHANGE = (("m-demo-1", "Add milk to my list, please."), ("m-demo-2", "Groceries."))


def scripted_model(request: RecordedRequest) -> Reply:
    """The fake model's side of the demo, decided from what the daemon sent."""
    if request.system_text == TITLE_SYSTEM:
        return text("Adding milk to the groceries list")
    if request.system_text == SUMMARY_SYSTEM:
        return text("The user asked to add milk to a list; it went on the groceries list.")
    answering = "## Pending Context" in request.system_text
    if request.tool_results:
        if answering:
            return text("Done: milk is on your groceries list (Lists/Groceries.md).")
        return text("I asked which list you mean.")
    if answering:
        return tool_use("write_file", {"path": "Lists/Groceries.md", "content": "- milk\n"})
    return tool_use("send_message", {"message": QUESTION, "is_question": True})


def run_demo(
    out: TextIO, *, keep_in: Path | None = None, timeout: float = 30.0, tour: bool = False
) -> int:
    """Run the scripted exchange (or, with ``tour``, every feature) in a temporary home,
    removed afterwards, or in ``keep_in`` (new or empty), kept."""
    if tour:
        from .tour import run_tour

        with _demo_home(keep_in) as home:
            return run_tour(out, home, keep=keep_in is not None)
    with _demo_home(keep_in) as home:
        if keep_in is None:
            home.ensure()
            home.config_file.write_text(dumps_toml({"inbox": {"rescan_seconds": 0.5}}))
        else:  # a home to keep: as `smarthole init` makes it, nothing only for the demo
            set_up_home(home)
        with FakeMessagesAPI() as fake:
            fake.default = scripted_model
            env = {"ANTHROPIC_API_KEY": "demo", "ANTHROPIC_BASE_URL": fake.url}
            daemon = Daemon(home, env=env, handle_signals=False)
            thread = threading.Thread(target=daemon.run, name="smarthole-demo", daemon=True)
            thread.start()
            daemon.ready.wait(timeout)
            kind = "temporary home (removed afterwards)" if keep_in is None else "home, kept,"
            out.write(f"smarthole demo: a {kind} in {home.root}, a fake model at {fake.url}\n")
            try:
                shown: set[Path] = set()
                for message_id, words in EXCHANGE:
                    out.write(f"\n>>> inbox/{message_id}.md: {words}\n")
                    drop_message(home.inbox, words, message_id=message_id)
                    if not _show_replies(home, message_id, shown, out, timeout):
                        out.write("The demo timed out waiting for a reply.\n")
                        return ExitCode.FAILED
                notes = home.workspace / "Lists" / "Groceries.md"
                if notes.exists():
                    out.write(f"\nworkspace/Lists/Groceries.md now says:\n{notes.read_text()}")
            finally:
                daemon.request_stop()
                thread.join(timeout)
            out.write(
                f"\nThe model was called {len(fake.requests)} times. Try it for real: "
                "`smarthole init`, set ANTHROPIC_API_KEY, `smarthole run`.\n"
            )
            if keep_in is not None:
                out.write(f"The demo's home is kept: smarthole conversations --home {keep_in}\n")
    return ExitCode.OK


@contextlib.contextmanager
def _demo_home(keep_in: Path | None) -> Iterator[Home]:
    if keep_in is None:
        with tempfile.TemporaryDirectory(prefix="smarthole-demo-") as folder:
            yield Home(Path(folder) / "home")
        return
    if keep_in.exists() and (not keep_in.is_dir() or any(keep_in.iterdir())):
        # Never into a real home: the demo's fake model and messages would mix with its own.
        raise UsageError(f"{keep_in} is not an empty folder; the demo needs a new one to keep")
    yield Home(keep_in)


def _show_replies(
    home: Home, message_id: str, shown: set[Path], out: TextIO, timeout: float
) -> bool:
    """Print each new outbox file until the final reply to ``message_id`` appears."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in sorted(home.outbox.glob("*.md")):
            if path in shown:
                continue
            shown.add(path)
            content = path.read_text()
            out.write(f"\n<<< outbox/{path.name}\n{content}")
            if _is_final_reply(content, message_id):
                return True
        time.sleep(0.02)
    return False


def _is_final_reply(content: str, message_id: str) -> bool:
    from ..formats import loads_toml

    header = content.split("+++\n")[1]
    fields: dict[str, Any] = loads_toml(header, source="outbox")
    return fields.get("in_reply_to") == message_id and fields.get("kind") in ("response", "error")
