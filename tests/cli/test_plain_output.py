"""Terminal output is plain, aligned text: cut at a word with …, Markdown markers dropped, and
a time that is not today carries its day."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from smarthole.cli.approving import arguments, table
from smarthole.cli.output import clock, plain, short

NOW = datetime(2026, 11, 28, 9, 30).astimezone()


@pytest.mark.parametrize(
    ("text", "limit", "shown"),
    [
        ("short enough", 60, "short enough"),
        (
            "Read a file of the workspace and return its lines numbered",
            30,
            "Read a file of the workspace…",
        ),
        ("one, two, three, four", 17, "one, two, three…"),
        ("a" * 40, 10, "a" * 9 + "…"),  # no word to cut at: inside the word
        ("two\nlines", 60, "two lines"),
    ],
)
def test_short_cuts_at_a_word(text, limit, shown):
    assert short(text, limit) == shown
    assert len(short(text, limit)) <= limit


@pytest.mark.parametrize(
    ("moment", "shown"),
    [
        (NOW.replace(hour=6, minute=52), "06:52"),
        (NOW.replace(hour=6, minute=52) + timedelta(days=1), "tomorrow 06:52"),
        (NOW.replace(hour=6, minute=52) - timedelta(days=1), "yesterday 06:52"),
        (NOW.replace(hour=6, minute=52) + timedelta(days=3), "2026-12-01 06:52"),
    ],
)
def test_a_time_not_today_carries_its_day(moment, shown):
    assert clock(moment, NOW) == shown


def test_plain_drops_fences_and_bold():
    item = 'Runs **write_file**:\n\n```json\n{"path": "a.md"}\n```\nOk'
    assert plain(item) == 'Runs write_file:\n\n{"path": "a.md"}\nOk'


def test_a_table_aligns_its_columns_and_arguments_read_as_words():
    rows = [("ID", "TOOL", "INPUT"), ("a1", "write_file", arguments({"path": "a b", "n": 2}))]
    assert table(rows).splitlines() == [
        "ID  TOOL        INPUT",
        'a1  write_file  path="a b" n=2',
    ]
