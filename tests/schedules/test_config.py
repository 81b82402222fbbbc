"""``[[schedules]]`` in config.toml: each bad entry is a ConfigError naming the schedule."""

from __future__ import annotations

import pytest

from smarthole.config import parse_config
from smarthole.errors import ConfigError

GOOD = {"name": "morning-brief", "cron": "0 8 * * mon-fri", "text": "Summarise my notes."}


def test_the_issue_s_example_reads():
    entry = {
        **GOOD,
        "timezone": "Europe/Berlin",
        "channel": "default",
        "conversation": "new",
        "agents": [],
        "missed": "once",
        "deliver": True,
    }
    config = parse_config({"schedules": [entry], "scheduler": {"enabled": False}})
    (schedule,) = config.schedules
    assert schedule.name == "morning-brief" and schedule.timing.zone_name == "Europe/Berlin"
    assert config.scheduler.enabled is False


def test_no_schedules_by_default():
    config = parse_config({})
    assert config.schedules == () and config.scheduler.enabled is True


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"cron": "0 25 * * *"}, "'morning-brief' cron '0 25 * * *': Bad hour"),
        ({"timezone": "Nowhere/City"}, "'morning-brief' unknown time zone 'Nowhere/City'"),
        ({"every": "30m"}, "'morning-brief' give exactly one of cron, every or at"),
        ({"cron": "", "every": "0s"}, "'morning-brief' every must be at least 1s"),
        ({"cron": "", "at": "friday"}, "'morning-brief' at 'friday' is not a date and time"),
        ({"name": "9lives"}, "'9lives' name must be a letter"),
        ({"name": "a b"}, "'a b' name must be"),
        ({"text": " "}, "'morning-brief' text is required"),
        ({"missed": "twice"}, "'morning-brief' missed must be"),
        ({"conversation": "old"}, "'morning-brief' conversation must be"),
        ({"channel": "a/b"}, "'morning-brief' channel must be"),
        ({"kron": "x"}, "'morning-brief' unknown key"),
        ({"croon": "x"}, "did you mean 'cron'?"),
        ({"agents": ["ghost"]}, "'morning-brief' agents: no agent named ghost"),
        ({"deliver": "no"}, "'morning-brief' deliver must be true or false"),
    ],
)
def test_a_bad_schedule_is_a_config_error_naming_it(change, says):
    with pytest.raises(ConfigError) as raised:
        parse_config({"schedules": [{**GOOD, **change}]})
    assert says in str(raised.value)


def test_names_are_unique():
    with pytest.raises(ConfigError, match="'morning-brief' name is used by another schedule"):
        parse_config({"schedules": [GOOD, {**GOOD, "every": "1h", "cron": ""}]})


def test_a_schedules_table_is_not_the_array():
    with pytest.raises(ConfigError, match=r"array of tables \(\[\[schedules\]\]\).*\[scheduler\]"):
        parse_config({"schedules": {"enabled": False}})
