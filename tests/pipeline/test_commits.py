"""What one message costs the store: commits (each an fsync) and statements, counted."""

from __future__ import annotations

from smarthole.testing import text
from tests.helpers import db, drop, finals, run_once, write_config


def run_statements(home, env, statements, ids="m") -> list[list[str]]:
    """Run the daemon once on one message, then once on three: the statements of each run.
    Message ids begin with ``ids``."""
    per_run = []
    for count in (1, 3):
        statements.clear()
        for n in range(count):
            drop(home, f"hello {n}", f"{ids}{count}-{n}")
        run_once(home, env)
        per_run.append(list(statements))
    return per_run


def counted_runs(home, env, statements, counts, ids="m") -> list[int]:
    """The statements each of ``run_statements``' two runs made that ``counts`` accepts."""
    runs = run_statements(home, env, statements, ids)
    return [sum(1 for statement in seen if counts(statement)) for seen in runs]


def transactions(seen: list[str]) -> list[tuple[bool, list[str]]]:
    """The committed transactions among ``seen``: whether each waited for the disk
    (``synchronous`` FULL), and its statements."""
    found: list[tuple[bool, list[str]]] = []
    durable, current = True, None
    for statement in seen:
        if statement.startswith("PRAGMA synchronous"):
            durable = statement.endswith("FULL")
        elif statement == "BEGIN IMMEDIATE":
            current = []
        elif statement == "COMMIT" and current is not None:
            found.append((durable, current))
            current = None
        elif current is not None:
            current.append(statement)
    return found


def turn_commits(home, env, statements) -> tuple[float, float]:
    """A message's turn's commits that waited for the disk, and those that did not: the
    commits of a run on three messages less those of a run on one, halved. Claims are left
    out: a batch claims many files in one commit, and a loaded machine may split a batch."""
    one, three = (
        [
            durable
            for durable, done in transactions(seen)
            if not any(statement.startswith("INSERT INTO inbox") for statement in done)
        ]
        for seen in run_statements(home, env, statements)
    )
    return (three.count(True) - one.count(True)) / 2, (three.count(False) - one.count(False)) / 2


def test_a_one_turn_message_commits_three_times_and_waits_for_the_disk_twice(
    home, fake, env, statements
):
    """Stored the moment it exists, in as few commits as that allows: the turn begins with
    the user's message (1), the reply and its usage (2), and the turn completes with its
    outbox item, written and delivered, and the claim released (3).

    The turn's start does not wait for the disk (an fsync): the message was synced in the
    ledger when it was claimed, and the reply's commit syncs the start with it. The reply
    and the completion (after which the reply counts as delivered) do."""
    fake.default = text("Hello.")
    drop(home, "warm up", "m0")
    run_once(home, env)
    durable, not_durable = turn_commits(home, env, statements)
    assert (durable, not_durable) == (2, 1)
    assert len(finals(home)) == 5


def test_a_new_turn_does_not_read_back_what_it_has_just_written(home, fake, env, statements):
    """A new turn knows that it has no earlier attempt, its own user message, that no
    question was pending (so there is none to clear) and that no earlier attempt planned its
    reply: it neither reads them back nor deletes what is not there."""
    fake.default = text("Hello.")
    drop(home, "warm up", "m0")
    run_once(home, env)

    def reads_back(statement: str) -> bool:
        return statement.startswith(
            (
                "SELECT * FROM message_rows",  # the turn's stored messages
                "SELECT * FROM outbox WHERE id",  # a reply planned by an earlier attempt
                "DELETE FROM plugin_data",  # a pending question
            )
        )

    assert counted_runs(home, env, statements, reads_back) == [0, 0]
    turn_rows = "SELECT c.id AS conversation_id, t.number"  # how the store reads a turn
    turn_reads = counted_runs(home, env, statements, lambda s: s.startswith(turn_rows), "t")
    # Neither its turn nor its conversation after starting the turn: the three messages make
    # no more reads than one (the daemon's start-up makes its own).
    assert turn_reads[0] == turn_reads[1]
    rereads = counted_runs(
        home, env, statements, lambda s: s.startswith("SELECT * FROM conversations WHERE id"), "c"
    )
    assert rereads[0] == rereads[1]


def test_a_turn_looks_for_due_titles_only_when_one_can_be_due(home, fake, env, statements):
    """Each turn sweeps for due titles and summaries, before and after; once a sweep found
    none, the next looks in the database only after a write made one due."""
    write_config(home, titles={"enabled": True})
    fake.default = text("Hello.")  # also the title
    drop(home, "warm up", "m0")
    run_once(home, env)  # the conversation's title is due after its first turn, and written
    assert db(home).execute("SELECT title FROM conversations").fetchone()[0] == "Hello"
    looks = counted_runs(home, env, statements, lambda s: "WHERE title_state" in s)
    assert looks[0] == looks[1]  # the same looks for one message as for three
