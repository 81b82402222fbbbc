"""The spend tables' SQL (``db.spend`` owns them), apart so ``schema`` stays short."""

# Spend (version 11): one row per model call, reserved at an upper bound of its cost before the
# call is sent (``open``), then replaced by what the response cost (``spent``) or let go when
# nothing was sent (``released``); each cap's running total of them (``spend_totals``: what a
# reservation checks, one row per cap and key, never a sum over a month of rows); and the caps
# a person raised by approving (``db.spend``).
# Money is integer micro-dollars. No foreign key: what was spent stays spent after `prune`.
SPEND_TABLES = """
CREATE TABLE IF NOT EXISTS spend (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    day TEXT NOT NULL,
    month TEXT NOT NULL,
    conversation_id TEXT,
    channel TEXT,
    turn INTEGER,
    message_id TEXT,
    task_id TEXT,
    agent TEXT,
    schedule TEXT,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    bound INTEGER NOT NULL,
    cost INTEGER,
    usage_id INTEGER,
    request_bytes INTEGER NOT NULL DEFAULT 0,
    shape TEXT,
    prompt_tokens INTEGER
);
CREATE INDEX IF NOT EXISTS spend_by_conversation ON spend (conversation_id, turn);
CREATE INDEX IF NOT EXISTS spend_by_message ON spend (message_id);
CREATE INDEX IF NOT EXISTS spend_by_usage ON spend (usage_id) WHERE usage_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS spend_totals (
    cap TEXT NOT NULL,
    key TEXT NOT NULL,
    used INTEGER NOT NULL DEFAULT 0,
    raised INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (cap, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS budget_raises (
    approval_id TEXT PRIMARY KEY,
    cap TEXT NOT NULL,
    key TEXT NOT NULL,
    amount INTEGER NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS budget_raises_by_cap ON budget_raises (cap, key);
"""
