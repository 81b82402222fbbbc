"""``smarthole replay``'s side: start the replays, wait for a daemon to run them, report.

The turns run in the daemon like any others (so a ``kill -9`` resumes them, and approvals and
budgets apply); with no daemon running for the home, this command runs one in-process until
its replays are done, as ``chat`` does. The report puts the original's and the replay's turns
side by side: a Markdown or HTML file (``--report``), JSON (``--json``), or a summary.
"""

from __future__ import annotations

import contextlib
import html
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from .common import daemon_pid, preflight
from .output import body, one_line, short

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..db.forking import Fork
    from ..home import Home
    from ..pipeline.replayreport import ReplayReport, Side
    from .mailbox import InProcessDaemon

POLL_SECONDS = 0.05
MAX_PROMPT_BYTES = 256 * 1024
NO_COST = "—"  # the cost column, until prices are known


def read_prompt(path: str | None) -> str | None:
    """The system prompt a file holds (UTF-8 text, bounded), or None without one."""
    if path is None:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the system prompt {path}: {exc.strerror}") from exc
    if len(data) > MAX_PROMPT_BYTES:
        raise UsageError(f"the system prompt {path} is over {MAX_PROMPT_BYTES // 1024} KiB")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise UsageError(f"the system prompt {path} is not UTF-8 text") from exc
    if not text:
        raise UsageError(f"the system prompt {path} is empty")
    return text


@contextlib.contextmanager
def replay_daemon(home: Home) -> Iterator[InProcessDaemon | None]:
    """None when a daemon runs for ``home`` (it is woken to look now); else one run in this
    process until the block ends, and a line on stderr that says so."""
    from ..pipeline.watch import wake_daemon
    from .mailbox import InProcessDaemon

    if daemon_pid(home) is not None:
        wake_daemon(home.inbox)
        yield None
        return
    config = preflight(home)
    print(
        "No daemon is running for this home, so this replay runs one itself until it is done.",
        file=sys.stderr,
        flush=True,
    )
    local = InProcessDaemon(home, grace=config.daemon.shutdown_grace_seconds)
    local.start()
    try:
        yield local
    finally:
        local.stop()


def wait_for(
    root: Runtime, forks: list[Fork], local: InProcessDaemon | None, timeout: float
) -> bool:
    """Wait until every replay is over (True), or ``timeout`` seconds pass (False)."""
    from ..pipeline.replaying import unfinished

    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while any(unfinished(root.ledger, fork) for fork in forks):
        if time.monotonic() > deadline:
            return False
        if local is not None and local.error is not None:
            raise local.error
        pause.wait(POLL_SECONDS)
    return True


# -- the report -------------------------------------------------------------------------------


def summary_lines(report: ReplayReport) -> list[str]:
    counts = report.counts()
    differ = sum(1 for p in report.turns if p.differs)
    state = "" if report.finished else " (not finished)"
    return [
        f'replay of "{one_line(report.title.removeprefix("replay of "))}" '
        f"({report.original}) as {report.replay}{state}",
        f"  turns: {len(report.turns)}, differing: {differ}; tool calls: "
        f"{counts['recorded']} recorded, {counts['refused']} refused, {counts['live']} live; "
        f"real tool runs: {report.real_runs}",
    ]


def markdown(reports: list[ReplayReport]) -> str:
    lines = ["# Replay report", ""]
    for report in reports:
        lines += [f"## {_md(report.title)}", ""]
        lines += [f"- {_md(line.strip())}" for line in summary_lines(report)]
        lines += [f"- model: {_md(report.model or 'as configured')}; system prompt: "
                  f"{'replaced' if report.system_prompt else 'as configured'}", ""]  # fmt: skip
        for pair in report.turns:
            mark = " (differs)" if pair.differs else ""
            lines += [f"### Turn {pair.turn}{mark}", "", f"> {_md(pair.said)}", ""]
            lines += ["| | original | replay |", "|---|---|---|"]
            for label, left, right in _rows(pair.original, pair.replay):
                lines.append(f"| {label} | {_md(left)} | {_md(right)} |")
            lines.append("")
    return "\n".join(lines)


def html_report(reports: list[ReplayReport]) -> str:
    def e(text: str) -> str:  # newlines kept, other control characters shown, markup escaped
        return html.escape(body(text))

    parts = [
        "<!doctype html><meta charset=utf-8><title>Replay report</title>",
        "<style>body{font-family:sans-serif;max-width:72rem;margin:auto}table{width:100%;"
        "border-collapse:collapse}td,th{border:1px solid #ccc;padding:.4rem;vertical-align:top;"
        "white-space:pre-wrap;width:45%}td:first-child,th:first-child{width:10%}"
        ".differs{background:#fff4e0}</style><h1>Replay report</h1>",
    ]
    for report in reports:
        parts.append(f"<h2>{e(report.title)}</h2>")
        parts += [f"<p>{e(line.strip())}</p>" for line in summary_lines(report)]
        for pair in report.turns:
            css = ' class="differs"' if pair.differs else ""
            mark = " (differs)" if pair.differs else ""
            parts.append(
                f"<h3{css}>Turn {pair.turn}{mark}</h3><blockquote>{e(pair.said)}</blockquote>"
                "<table><tr><th></th><th>original</th><th>replay</th></tr>"
            )
            for label, left, right in _rows(pair.original, pair.replay):
                parts.append(f"<tr><th>{e(label)}</th><td>{e(left)}</td><td>{e(right)}</td></tr>")
            parts.append("</table>")
    return "\n".join(parts) + "\n"


def _rows(original: Side, replay: Side) -> list[tuple[str, str, str]]:
    return [
        ("reply", _reply(original), _reply(replay)),
        ("tokens in / out", _tokens(original), _tokens(replay)),
        ("cost", _cost(original), _cost(replay)),
        ("tool calls", _tools(original), _tools(replay)),
    ]


def _reply(side: Side) -> str:
    return side.reply if side.reply is not None else f"({side.status})"


def _tokens(side: Side) -> str:
    u = side.usage
    prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    return f"{prompt} / {u.output_tokens}"


def _cost(side: Side) -> str:
    return NO_COST if side.cost_micros is None else f"${side.cost_micros / 1_000_000:.4f}"


def _tools(side: Side) -> str:
    return ", ".join(f"{name} ({how})" for name, how in side.tools) or "none"


def _md(text: str) -> str:
    """A table cell's text: one line, pipes and HTML escaped, control characters shown."""
    return html.escape(short(text, 2000), quote=False).replace("|", "\\|")
