"""What one message costs the store: commits (each an fsync) and statements, counted."""

from __future__ import annotations

from smarthole.testing import text
from tests.helpers import db, drop, finals, run_once, write_config


def counted_runs(home, env, statements, counts, ids="m") -> list[int]:
    """Run the daemon once on one message, then once on three: the statements each run made
    that ``counts`` accepts. Message ids begin with ``ids``."""
    per_run = []
    for count in (1, 3):
        statements.clear()
        for n in range(count):
            drop(home, f"hello {n}", f"{ids}{count}-{n}")
        run_once(home, env)
        per_run.append(sum(1 for statement in statements if counts(statement)))
    return per_run


def test_a_one_turn_message_commits_three_times(home, fake, env, statements):
    """Stored the moment it exists, in as few commits as that allows: the turn begins with
    the user's message (1), the reply and its usage (2), and the turn completes with its
    outbox item, written and delivered, and the claim released (3)."""
    fake.default = text("Hello.")
    drop(home, "warm up", "m0")
    run_once(home, env)
    per_run = counted_runs(home, env, statements, lambda s: s == "COMMIT")
    assert len(finals(home)) == 5
    assert (per_run[1] - per_run[0]) / 2 == 3


def test_only_the_reply_waits_for_the_disk(home, fake, env, statements):
    """Of a one-turn message's commits, only the reply's waits for the disk (an fsync). The
    message was synced in the ledger when it was claimed, and the reply's file is synced
    before the turn completes; a power cut that undoes the turn's start or its end leaves
    the daemon to redo it from those."""
    fake.default = text("Hello.")
    drop(home, "warm up", "m0")
    run_once(home, env)

    def durable_commits(seen: list[str]) -> int:
        durable, count = True, 0
        for statement in seen:
            if statement.startswith("PRAGMA synchronous"):
                durable = statement.endswith("FULL")
            count += statement == "COMMIT" and durable
        return count

    per_run = []
    for count in (1, 3):
        statements.clear()
        for n in range(count):
            drop(home, f"hello {n}", f"d{count}-{n}")
        run_once(home, env)
        per_run.append(durable_commits(statements))
    assert (per_run[1] - per_run[0]) / 2 == 1


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
