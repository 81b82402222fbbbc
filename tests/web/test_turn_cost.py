"""The session bar shows what the current turn's model responses cost."""

from __future__ import annotations

from dataclasses import replace

from smarthole.config.prices import DEFAULT_PRICES, dollars
from smarthole.db.usage import COUNTS
from smarthole.testing import text, tool_use
from tests.helpers import db, drop, run_once

FIRST = dict(zip(COUNTS, (1200, 80, 2048, 0), strict=True))
SECOND = dict(zip(COUNTS, (1300, 40, 0, 2048), strict=True))


def test_the_turn_bar_shows_the_turns_cost(team_home, fake, env, client, bearer):
    fake.add(replace(tool_use("list_files", {}), usage=FIRST))
    fake.add(text("Nothing there.", usage=SECOND))
    drop(team_home, "look", "m1")
    run_once(team_home, env)
    price = DEFAULT_PRICES["claude-haiku-4-5"]
    cost = price.cost(FIRST) + price.cost(SECOND)
    cid = db(team_home).execute("SELECT id FROM conversations").fetchone()["id"]
    page = client.get(f"/c/{cid}", headers=bearer).text
    assert (
        f'data-testid="turn-cost" title="what this turn\'s model responses cost">{dollars(cost)}<'
        in page
    )
    data = client.get(f"/api/conversations/{cid}", headers=bearer).json()
    assert data["session"]["cost"] == "0.005865"
