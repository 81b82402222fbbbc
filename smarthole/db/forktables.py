"""The ``forks`` table's SQL (version 11), apart from ``db.forking``, which ``schema`` may not
import."""

# Forks and replays (version 11): a conversation copied from turns 1..N of another. No foreign
# key to the original: a fork is a conversation of its own and outlives it. ``note`` is what
# the original's side-effecting tools did after the fork point, said once in the fork's next
# turn; a replay (``replay_plan``: its model, prompt and tools as JSON) is found again by its
# ``replay_key`` when the same replay is asked for while it is unfinished.
FORK_TABLES = """
CREATE TABLE IF NOT EXISTS forks (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    forked_from TEXT NOT NULL,
    turn INTEGER NOT NULL,
    note TEXT,
    replay_key TEXT,
    replay_plan TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS forks_by_original ON forks (forked_from);
CREATE INDEX IF NOT EXISTS forks_by_replay_key ON forks (replay_key) WHERE replay_key IS NOT NULL;
"""
