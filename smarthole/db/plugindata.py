"""Persistent JSON values of one plugin, kept in the home's database."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .connection import Database

logger = logging.getLogger(__name__)

_MISSING = object()


class PluginData:
    """JSON values of one plugin, one row per key, each write its own transaction."""

    def __init__(self, store: Database, plugin: str) -> None:
        self.store = store
        self.plugin = plugin

    def get(self, key: str, default: Any = None) -> Any:
        row = self.store.query_one(
            "SELECT value FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key)
        )
        if row is None:
            return default
        return self._decode(key, row["value"], default)

    def set(self, key: str, value: Any) -> None:
        encoded = json.dumps(value, ensure_ascii=False)  # raises TypeError if not JSON-able
        self.store.write(
            "INSERT INTO plugin_data (plugin, key, value, updated_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (plugin, key) DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at",
            (self.plugin, key, encoded, self.store.now()),
        )

    def delete(self, key: str) -> None:
        with self.store.transaction() as db:
            db.execute("DELETE FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key))

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        """Every key and its value, in key order; only the keys starting with ``prefix`` if
        one is given (read through the primary key: the plugin's other keys are not read)."""
        if prefix:
            # Every key starting with the prefix sorts between it and the prefix with its
            # last character one higher (SQLite compares text byte by byte, as UTF-8 sorts).
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            rows = self.store.query(
                "SELECT key, value FROM plugin_data WHERE plugin = ? AND key >= ? AND key < ? "
                "ORDER BY key",
                (self.plugin, prefix, upper),
            )
        else:
            rows = self.store.query(
                "SELECT key, value FROM plugin_data WHERE plugin = ? ORDER BY key", (self.plugin,)
            )
        result = []
        for row in rows:
            value = self._decode(row["key"], row["value"], _MISSING)
            if value is not _MISSING:
                result.append((row["key"], value))
        return result

    def _decode(self, key: str, raw: str, default: Any) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            logger.warning(
                "CORRUPT plugin data %s/%s: moved the value aside to table "
                "plugin_data_corrupt and treated it as missing",
                self.plugin,
                key,
            )
            with self.store.transaction() as db:
                db.execute(
                    "INSERT INTO plugin_data_corrupt (plugin, key, value, found_at) "
                    "VALUES (?, ?, ?, ?)",
                    (self.plugin, key, raw, self.store.now()),
                )
                db.execute(
                    "DELETE FROM plugin_data WHERE plugin = ? AND key = ?", (self.plugin, key)
                )
            return default
