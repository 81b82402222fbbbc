"""Kill the daemon at random moments, many times, and check that nothing is lost or doubled.

    python scripts/torture.py --messages 200 --channels 5 --kills 40

N messages across several channels are dropped into a fresh home. A real `smarthole run`
subprocess is started, killed with SIGKILL at a random moment, and restarted, again and again;
then a last daemon runs until every message is answered. The fake model answers every message
with a non-idempotent tool call first, so a tool that ran twice would show in the tool log.

With ``--team-every N``, every Nth message asks the entry agent to hand the work to a team of
two agents (``start_task``, three agent turns, the first agent calling the same non-idempotent
tool in each of its turns).

With ``--approve-every N``, every Nth message's tool call needs the person's approval (a
``before_tool_call`` plugin in the home answers "ask"), on a channel of its own; approvals are
answered by files dropped at random moments, while a daemon runs or while none does. Also
checked: no such call ran without a stored approval. With ``--approval-timeout SECONDS`` as
well, approvals expire that soon, a third of them are never answered, and now and then no
daemon runs across an expiry (answers still come then, late): checked, no approval was
approved after its expiry.

Every third message (``--desktop-every N``; 0: none) comes over the desktop bridge instead of
the inbox: a fake SmartHole desktop sends them in three bursts, one at each of the first
registrations, and after every registration first sends again whatever was never answered
(the kill may have come before the ack, or before the file). Before the last daemon, one is
left running until the desktop has an ack for each. Also checked: no message rejected, none
notified twice (a notification is sent at most once).

Checks (and prints): every message has exactly one final reply, no claimed file is left, no
completed tool call ran twice, every stored conversation is valid Messages API history, after
every kill the ledger, the turns and the events agree and every stored model reply has exactly
one usage row, and every team task's stored agent turns are exactly 1..N in order, each by the
right agent. Exit status 0 when all hold.
`tests/daemon/test_torture.py` runs a small version of this in the suite.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchlib.desktopburst import BurstDesktop, Bursts

from smarthole.formats import dumps_toml
from smarthole.home import Home
from smarthole.pipeline.inbox import drop_message
from smarthole.testing import FakeMessagesAPI, RecordedRequest, Reply, text, tool_use

TEST_PLUGINS = Path(__file__).resolve().parent.parent / "tests" / "plugins"


@dataclass
class Result:
    messages: int
    kills: int
    seconds: float
    lost: int
    duplicates: int
    tools_run_twice: int
    left_claimed: int
    invalid_histories: int
    disagreements: int
    turns_resumed: int
    tools_in_doubt: int
    team_tasks: int = 0
    bad_team_tasks: int = 0
    from_desktop: int = 0
    desktop_rejected: int = 0
    notified_twice: int = 0
    approvals: int = 0
    unapproved_runs: int = 0
    expired: int = 0
    approved_late: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicates
            or self.tools_run_twice
            or self.left_claimed
            or self.invalid_histories
            or self.disagreements
            or self.bad_team_tasks
            or self.desktop_rejected
            or self.notified_twice
            or self.unapproved_runs
            or self.approved_late
        )


TEAM = {
    "alpha": {"description": "Records things", "tools": ["record"]},
    "beta": {"description": "Checks things"},
}
TEAM_TURNS = 3
DESKTOP_BURSTS = 3
SETTLE_SECONDS = 120.0  # for the last bridge to have every desktop message acked
ASKING = "ask-"  # a record value that makes the guard plugin ask the person
GUARD = f'''
from smarthole import hookimpl


@hookimpl
def before_tool_call(call, app):
    value = call.input.get("value", "") if isinstance(call.input, dict) else ""
    return "ask" if str(value).startswith("{ASKING}") else None
'''


def model(request: RecordedRequest) -> Reply:
    """Every message: one `record` tool call (not idempotent), then a text reply.

    A message asking for a team: a `start_task` call; then each agent turn of alpha records
    `<message>-<turn>` (so a repeated agent turn would run the tool twice), beta just answers.
    """
    if not request.tools:
        return text("Title")
    if request.agent is not None:
        opening = json.dumps(request.messages[0])
        message_id = re.search(r"team (t\d+)", opening)
        turn = re.search(r"This is turn (\d+) of", opening)
        where = f"{message_id.group(1) if message_id else '?'}-{turn.group(1) if turn else '?'}"
        if request.agent == "alpha" and not request.tool_results:
            return tool_use("record", {"value": where})
        return text(f"{request.agent} did {where}")
    words = request.last_user_text.split()
    if words[:2] == ["please", "team"] and not request.tool_results:
        task = {"task": f"team {words[-1]}", "agents": list(TEAM), "max_turns": TEAM_TURNS}
        return tool_use("start_task", task)
    if request.tool_results:
        return text(f"done: {request.tool_results[0]['content']}")
    return tool_use("record", {"value": request.last_user_text.split()[-1]})


def torture(
    messages: int,
    channels: int,
    kills: int,
    seed: int,
    root: Path,
    max_gap: float = 0.3,
    quiet: bool = False,
    team_every: int = 0,
    desktop_every: int = 3,
    approve_every: int = 0,
    approval_timeout: int = 0,
) -> Result:
    rng = random.Random(seed)
    ids = [f"t{n:04d}" for n in range(messages)]
    asking = {i for n, i in enumerate(ids) if approve_every and n % approve_every == 1}
    texts = {
        message_id: f"please {'team' if team_every and n % team_every == 0 else 'record'} "
        f"{ASKING if message_id in asking else ''}{message_id}"
        for n, message_id in enumerate(ids)
    }
    by_desktop = [
        i for n, i in enumerate(ids) if desktop_every and n % desktop_every == 2 and i not in asking
    ]
    bursts = Bursts([(i, texts[i]) for i in by_desktop], DESKTOP_BURSTS)
    with BurstDesktop(resend=True, on_register=bursts) as desktop:
        home = make_home(
            root,
            desktop.url if by_desktop else None,
            team=bool(team_every),
            timeout=approval_timeout,
        )
        for n, message_id in enumerate(ids):
            if message_id not in by_desktop:
                # A call that waits holds its channel, and a plain message in it would be taken
                # as the answer: each asking message has a channel of its own.
                channel = f"a-{message_id}" if message_id in asking else f"c{n % channels}"
                drop_message(home.inbox, texts[message_id], message_id=message_id, channel=channel)
        answers = Answerer(home, unanswered_every=3 if approval_timeout else 0)
        started = time.monotonic()
        disagreements = 0
        with FakeMessagesAPI() as fake:
            fake.default = model
            run = Runner(home, root / "daemon.log", fake.url)
            for kill in range(kills):
                process = run.start()
                time.sleep(rng.uniform(0.0, max_gap))
                if rng.random() < 0.5:
                    answers.answer()  # while it runs
                run.kill(process)
                if approval_timeout and rng.random() < 0.25:
                    time.sleep(approval_timeout * 1.5)  # no daemon runs across an expiry
                if rng.random() < 0.5:
                    answers.answer()  # while none runs (after the expiry, perhaps)
                for problem in disagreement(home):  # the store as the kill left it
                    disagreements += 1
                    print(f"kill {kill + 1}: {problem}", flush=True)
                if not quiet:
                    print(
                        f"kill {kill + 1}/{kills}: {answered(home)}/{messages} answered", flush=True
                    )
            if by_desktop:
                bursts.settle()
                settle(run, desktop, len(by_desktop))
            run.last()
            # A --once daemon stops when every call left waits: answer, or let them expire.
            for _ in range(20):
                if not answers.answer() and not (approval_timeout and answered(home) < messages):
                    break
                time.sleep(approval_timeout)
                run.last()
    result = check(home, ids, kills, time.monotonic() - started)
    tasks, bad = team_problems(home)
    for problem in bad:
        print(problem, flush=True)
    for message_id, reason in desktop.seen.rejected.items():
        print(f"desktop message {message_id} rejected: {reason}", flush=True)
    return dataclasses.replace(
        result,
        disagreements=disagreements + len(disagreement(home)),
        team_tasks=tasks,
        bad_team_tasks=len(bad),
        from_desktop=len(by_desktop),
        desktop_rejected=len(desktop.seen.rejected),
        notified_twice=sum(1 for n in desktop.seen.notified.values() if n > 1),
        approvals=count(home, "SELECT COUNT(*) FROM approvals"),
        unapproved_runs=unapproved_runs(home),
        expired=count(home, "SELECT COUNT(*) FROM approvals WHERE status = 'expired'"),
        approved_late=count(
            home,
            "SELECT COUNT(*) FROM approvals WHERE status = 'approved' AND decided_at > expires_at",
        ),
    )


@dataclass
class Answerer:
    """Approves every approval item in the outbox once, by an answer file in the inbox."""

    home: Home
    unanswered_every: int = 0  # every Nth approval is never answered, so it expires
    done: set[str] = dataclasses.field(default_factory=set)

    def answer(self) -> int:
        """Answer what is new; returns how many."""
        found = 0
        for path in sorted(self.home.outbox.glob("*.md")):
            fields = tomllib.loads(path.read_text().split("+++\n")[1])
            approval = fields.get("approval")
            if fields["kind"] != "approval" or approval in self.done:
                continue
            self.done.add(approval)
            if self.unanswered_every and len(self.done) % self.unanswered_every == 0:
                continue
            drop_message(self.home.inbox, "", message_id=f"ok-{approval}", approve=approval)
            found += 1
        return found


def unapproved_runs(home: Home) -> int:
    """Runs of a call that asked for approval, without an approved approval stored."""
    log = home.root / "tool-runs.log"
    ran = [line.split()[-1] for line in log.read_text().splitlines()] if log.exists() else []
    with sqlite3.connect(home.database) as db:
        rows = db.execute("SELECT input, status FROM approvals").fetchall()
    approved = {json.loads(i).get("value") for i, status in rows if status == "approved"}
    return sum(1 for value in ran if value.startswith(ASKING) and value not in approved)


def make_home(root: Path, desktop_url: str | None, *, team: bool, timeout: int = 0) -> Home:
    home = Home(root / "home")
    home.ensure()
    config = {
        "inbox": {"rescan_seconds": 0.2},
        "retry": {"base_delay_seconds": 0.05, "max_delay_seconds": 1.0, "max_attempts": 50},
        "daemon": {"shutdown_grace_seconds": 1.0},
        "titles": {"enabled": False},
        "plugins": {"paths": [str(TEST_PLUGINS), "plugins"], "enabled": ["testtools", "guard"]},
        "agents": TEAM if team else {},
    }
    if desktop_url is not None:
        config["desktop"] = {"enabled": True, "url": desktop_url}
    if timeout:
        config["approvals"] = {"timeout": f"{timeout}s"}
    home.config_file.write_text(dumps_toml(config))
    (home.root / "plugins").mkdir(exist_ok=True)
    (home.root / "plugins" / "guard.py").write_text(GUARD)
    return home


@dataclass
class Runner:
    """Starts ``smarthole run`` on the home, kills it, and runs the last one ``--once``."""

    home: Home
    log: Path
    api: str

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "smarthole", "run", "--home", str(self.home.root)]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": self.api}

    def start(self) -> subprocess.Popen[bytes]:
        with self.log.open("w") as sink:  # a file, not a pipe nobody drains
            process = subprocess.Popen(
                self.command, env=self.env, stdout=subprocess.DEVNULL, stderr=sink
            )
        wait_until_watching(process, self.log)
        return process

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait()

    def last(self) -> None:
        final = subprocess.run(
            [*self.command, "--once"], env=self.env, capture_output=True, text=True, timeout=600
        )
        if final.returncode != 0:
            raise SystemExit(f"the last daemon failed:\n{final.stderr}")


def settle(run: Runner, desktop: BurstDesktop, count: int) -> None:
    """A daemon left running until the desktop has an answer to each of its messages (an ack,
    or a reject the checks report), then killed like the others."""
    process = run.start()
    deadline = time.monotonic() + SETTLE_SECONDS
    try:
        while len(desktop.texts) < count or desktop.unanswered():
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"the desktop's messages were not all acked: {run.log.read_text()}"
                )
            time.sleep(0.05)
    finally:
        run.kill(process)


def team_problems(home: Home) -> tuple[int, list[str]]:
    """Tasks whose stored agent turns are not exactly 1..N in order by the right agents, or
    that did not complete after all N."""
    with sqlite3.connect(home.database) as db:
        tasks = db.execute("SELECT id, agents, status, max_turns FROM tasks").fetchall()
        problems = []
        for task_id, agents, status, max_turns in tasks:
            order = json.loads(agents)
            turns = db.execute(
                "SELECT idx, agent FROM task_turns WHERE task_id = ? ORDER BY idx", (task_id,)
            ).fetchall()
            expected = [(k, order[k % len(order)]) for k in range(max_turns)]
            if turns != expected or status != "completed":
                problems.append(f"task {task_id}: {status}, turns {turns}")
    return len(tasks), problems


def disagreement(home: Home) -> list[str]:
    """Where the ledger, the turns and the events tell different stories.

    A message's completion (its turn's status, its ledger status and its ``turn_completed``
    event) is one transaction, so whatever a kill interrupts, they agree.
    """
    with sqlite3.connect(home.database) as db:
        rows = db.execute(
            "SELECT i.message_id, i.status, t.status, "
            "(SELECT COUNT(*) FROM events e WHERE e.type = 'turn_completed' "
            "AND e.message_id = i.message_id) "
            "FROM inbox i LEFT JOIN turns t ON t.message_id = i.message_id"
        ).fetchall()
    problems = [f"task {t}: agent turns out of order" for t in _gapped_tasks(home)]
    problems += _unbilled(home)
    for message_id, ledger, turn, completed_events in rows:
        done, completed = ledger == "done", turn == "completed"
        if done != completed or completed != bool(completed_events):
            problems.append(
                f"message {message_id}: ledger {ledger}, turn {turn}, "
                f"{completed_events} turn_completed event(s)"
            )
    return problems


def _unbilled(home: Home) -> list[str]:
    """Turns and tasks whose stored model replies and usage rows differ in number.

    A reply and its usage row commit in one transaction, so whatever a kill interrupts, every
    stored reply has exactly one row (a human turn's replies are its ``message_stored`` events
    that carry a usage; a team task's result stored as a reply has none and no row).
    """
    queries = (
        "SELECT conversation_id || ' turn ' || turn, COUNT(*) FROM events WHERE type = "
        "'message_stored' AND json_extract(data, '$.usage') IS NOT NULL GROUP BY 1",
        "SELECT conversation_id || ' turn ' || turn, COUNT(*) FROM usage "
        "WHERE purpose = 'turn' GROUP BY 1",
        "SELECT 'task ' || task_id, COUNT(*) FROM task_messages WHERE kind = 'assistant' "
        "GROUP BY 1",
        "SELECT 'task ' || task_id, COUNT(*) FROM usage WHERE purpose = 'agent_turn' GROUP BY 1",
    )
    with sqlite3.connect(home.database) as db:
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'usage'").fetchone():
            return []
        replies, rows, task_replies, task_rows = (dict(db.execute(q).fetchall()) for q in queries)
    return [
        f"{where}: {stored.get(where, 0)} stored replies, {billed.get(where, 0)} usage rows"
        for stored, billed in ((replies, rows), (task_replies, task_rows))
        for where in sorted(stored.keys() | billed.keys())
        if stored.get(where, 0) != billed.get(where, 0)
    ]


def _gapped_tasks(home: Home) -> list[str]:
    """Tasks whose stored agent turns, as a kill left them, are not 0..n-1 by the right agents."""
    with sqlite3.connect(home.database) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "tasks" not in tables:
            return []
        gapped = []
        for task_id, agents in db.execute("SELECT id, agents FROM tasks").fetchall():
            order = json.loads(agents)
            turns = db.execute(
                "SELECT idx, agent FROM task_turns WHERE task_id = ? ORDER BY idx", (task_id,)
            ).fetchall()
            if turns != [(k, order[k % len(order)]) for k in range(len(turns))]:
                gapped.append(task_id)
    return gapped


def wait_until_watching(process: subprocess.Popen[bytes], log: Path) -> None:
    """Kill only a daemon that got going: before that, a kill tests nothing."""
    while "is watching" not in log.read_text():
        if process.poll() is not None:
            raise SystemExit(f"the daemon exited before it started:\n{log.read_text()}")
        time.sleep(0.01)


def answered(home: Home) -> int:
    return len(list(home.outbox.glob("*.md")))


def check(home: Home, ids: list[str], kills: int, seconds: float) -> Result:
    replies = Counter()
    for path in home.outbox.glob("*.md"):
        fields = tomllib.loads(path.read_text().split("+++\n")[1])
        if fields["kind"] in ("response", "error"):
            replies[fields["in_reply_to"]] += 1
    runs = (
        Counter((home.root / "tool-runs.log").read_text().splitlines())
        if (home.root / "tool-runs.log").exists()
        else Counter()
    )
    return Result(
        messages=len(ids),
        kills=kills,
        seconds=round(seconds, 1),
        lost=sum(1 for i in ids if replies[i] == 0),
        duplicates=sum(1 for i in ids if replies[i] > 1),
        tools_run_twice=sum(1 for count in runs.values() if count > 1),
        left_claimed=len(list(home.claimed.iterdir())),
        invalid_histories=invalid_histories(home),
        disagreements=0,
        turns_resumed=count(home, "SELECT COUNT(*) FROM events WHERE type = 'turn_interrupted'"),
        tools_in_doubt=count(
            home,
            "SELECT COUNT(*) FROM messages WHERE kind = 'tool_result' "
            "AND content LIKE '%outcome is unknown%'",
        ),
    )


def count(home: Home, sql: str) -> int:
    with sqlite3.connect(home.database) as db:
        return int(db.execute(sql).fetchone()[0])


def invalid_histories(home: Home) -> int:
    """Conversations whose stored messages break the Messages API's history rules."""
    db = sqlite3.connect(home.database)
    rows = db.execute(
        "SELECT conversation_id, kind, content FROM messages WHERE kind IN "
        "('user', 'assistant', 'tool_result') ORDER BY conversation_id, turn, id"
    )
    conversations: dict[str, list[tuple[str, list]]] = {}
    for conversation, kind, content in rows:
        blocks = json.loads(content)
        messages = conversations.setdefault(conversation, [])
        role = "assistant" if kind == "assistant" else "user"
        if messages and kind == "tool_result" and messages[-1][0] == "user":
            messages[-1][1].extend(blocks)
        else:
            messages.append((role, blocks))
    bad = 0
    for messages in conversations.values():
        ok = messages[0][0] == "user"
        for (role_a, a), (role_b, b) in itertools.pairwise(messages):
            uses = [x["id"] for x in a if x["type"] == "tool_use"]
            results = [x["tool_use_id"] for x in b if x["type"] == "tool_result"]
            ok = ok and role_a != role_b and (not uses or uses == results)
        bad += not ok
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--channels", type=int, default=5)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--team-every", type=int, default=0, metavar="N")
    parser.add_argument("--desktop-every", type=int, default=3, metavar="N")
    parser.add_argument("--approve-every", type=int, default=4, metavar="N")
    parser.add_argument("--approval-timeout", type=int, default=0, metavar="SECONDS")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smarthole-torture-") as folder:
        result = torture(
            args.messages,
            args.channels,
            args.kills,
            args.seed,
            Path(folder),
            team_every=args.team_every,
            desktop_every=args.desktop_every,
            approve_every=args.approve_every,
            approval_timeout=args.approval_timeout,
        )
    print(json.dumps(result.__dict__, indent=2))
    print("OK" if result.ok else "FAILED")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
