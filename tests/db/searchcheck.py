"""Whether a store's search index says exactly what its rows say (for the search tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def index_problems(path: Path) -> list[str]:
    """What the live index and one built afresh from the stored rows disagree on (empty: they
    agree, token by token and position by position), after FTS5's own integrity check."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("INSERT INTO search_index (search_index) VALUES ('integrity-check')")
        db.execute("CREATE VIRTUAL TABLE temp.fresh USING fts5 (body)")
        db.execute("INSERT INTO temp.fresh (rowid, body) SELECT doc, body FROM search_text")
        for name, schema, table in (("live", "main", "search_index"), ("fresh", "temp", "fresh")):
            vocabulary = f"fts5vocab({schema}, {table}, instance)"
            db.execute(f"CREATE VIRTUAL TABLE temp.{name}_terms USING {vocabulary}")
        columns = "SELECT term, doc, col, offset FROM temp.{}"
        live = set(db.execute(columns.format("live_terms")))
        fresh = set(db.execute(columns.format("fresh_terms")))
        (documents,) = db.execute("SELECT count(*) FROM search_index_docsize").fetchone()
        (sources,) = db.execute("SELECT count(*) FROM search_text").fetchone()
    finally:
        db.close()
    problems = [f"only in the index: {t}" for t in sorted(live - fresh)[:5]]
    problems += [f"missing from the index: {t}" for t in sorted(fresh - live)[:5]]
    if documents != sources:
        problems.append(f"{documents} documents indexed for {sources} stored")
    return problems
