"""The approvals' table (schema version 9), as SQL text (``db.schema`` builds the store)."""

# Approvals (version 9): a tool call that waits for a person's yes, bound to the exact call by
# its args hash; its row is the call's intent while it waits (``db.approvals``).
APPROVAL_TABLES = """
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    channel TEXT NOT NULL,
    turn INTEGER NOT NULL,
    message_id TEXT NOT NULL,
    task_id TEXT,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    input TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    question TEXT,
    status TEXT NOT NULL,
    always INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    decided_by TEXT,
    answer_id TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    UNIQUE (scope, tool_use_id)
);
CREATE INDEX IF NOT EXISTS approvals_waiting ON approvals (status) WHERE status = 'waiting';
CREATE INDEX IF NOT EXISTS approvals_of_conversation ON approvals (conversation_id, tool);
CREATE INDEX IF NOT EXISTS approvals_by_answer ON approvals (answer_id)
    WHERE answer_id IS NOT NULL;
"""
