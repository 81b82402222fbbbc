"""When slots fall: cron in zones with DST, intervals, one-time moments, and the missed policies."""

from __future__ import annotations

import contextlib
import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smarthole.schedules import MissedPolicy, Timing, TimingError, parse_every, plan_due
from smarthole.schedules.plan import LATE_AFTER, MAX_CATCH_UP

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


def local(zone: str, *args: int, fold: int = 0) -> datetime:
    return datetime(*args, tzinfo=ZoneInfo(zone), fold=fold).astimezone(UTC)


def slots(timing: Timing, after: datetime, until: datetime) -> list[datetime]:
    out = []
    for slot in timing.slots_after(after, ANCHOR):
        if slot > until:
            break
        out.append(slot)
    return out


def shown(moments: list[datetime], zone: str) -> list[str]:
    return [m.astimezone(ZoneInfo(zone)).strftime("%m-%d %H:%M %Z") for m in moments]


# -- DST, in two zones ---------------------------------------------------------------------

SPRING = [("Europe/Berlin", (2026, 3, 29)), ("America/New_York", (2026, 3, 8))]
AUTUMN = [("Europe/Berlin", (2026, 10, 25)), ("America/New_York", (2026, 11, 1))]


@pytest.mark.parametrize(("zone", "day"), SPRING)
def test_a_slot_in_the_spring_forward_gap_fires_once_after_it(zone, day):
    timing = Timing.of("cron", "30 2 * * *", zone)
    before = local(zone, *day) - timedelta(days=1)
    found = slots(timing, before, before + timedelta(days=3))
    assert shown(found, zone)[1].startswith(f"{day[1]:02}-{day[2]:02} 03:00")
    assert len(found) == 3  # one a day: the day before, the gap day (at 03:00), the day after


@pytest.mark.parametrize(("zone", "day"), AUTUMN)
def test_a_slot_in_the_fall_back_hour_fires_once_not_twice(zone, day):
    hour = 2 if zone == "Europe/Berlin" else 1  # the hour that repeats
    timing = Timing.of("cron", f"30 {hour} * * *", zone)
    start = local(zone, *day)
    found = slots(timing, start, start + timedelta(hours=24))
    assert len(found) == 1
    assert found[0] == local(zone, *day, hour, 30, fold=0)  # the first of the two


@pytest.mark.parametrize(("zone", "day"), AUTUMN)
def test_an_hourly_schedule_fires_in_both_hours_of_a_fall_back(zone, day):
    timing = Timing.of("cron", "0 * * * *", zone)
    start = local(zone, *day)
    assert len(slots(timing, start, start + timedelta(hours=24))) == 24  # a 25-hour day


def test_every_counts_real_time_across_dst():
    timing = Timing.of("every", "1h", "Europe/Berlin")
    start = local("Europe/Berlin", 2026, 10, 25)
    found = slots(timing, start, start + timedelta(hours=25))
    assert all(b - a == timedelta(hours=1) for a, b in itertools.pairwise(found))


@pytest.mark.parametrize(
    ("zone", "text", "expected"),
    [
        ("Europe/Berlin", "2026-03-29T02:30", "03-29 03:00 CEST"),  # in the gap
        ("Europe/Berlin", "2026-10-25T02:30", "10-25 02:30 CEST"),  # repeated: the first
        ("America/New_York", "2026-03-08T02:15", "03-08 03:00 EDT"),
        ("America/New_York", "2026-12-01T09:00", "12-01 09:00 EST"),
    ],
)
def test_at_is_a_local_time_in_the_zone(zone, text, expected):
    assert shown([Timing.of("at", text, zone).moment()], zone) == [expected]


def test_lowercase_day_names_and_ranges_work():
    timing = Timing.of("cron", "0 8 * * mon-fri", "UTC")
    found = slots(timing, ANCHOR, ANCHOR + timedelta(days=7))  # 2026-01-01 is a Thursday
    assert [s.weekday() for s in found] == [3, 4, 0, 1, 2]


# -- bad expressions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "expression", "zone", "says"),
    [
        ("cron", "61 * * * *", "UTC", "Bad minute"),
        ("cron", "* * *", "UTC", "fields"),
        ("cron", "0 8 * * mon-fri", "Mars/Olympus", "unknown time zone"),
        ("cron", "0 8 * * *", "../../etc/passwd", "unknown time zone"),
        ("every", "0s", "UTC", "at least 1s"),
        ("every", "5 minutes", "UTC", "a number and a unit"),
        ("every", "-1h", "UTC", "a number and a unit"),
        ("at", "next friday", "UTC", "a date and time"),
        ("at", "", "UTC", "empty"),
    ],
)
def test_bad_timings_say_what_is_wrong(kind, expression, zone, says):
    with pytest.raises(TimingError, match=says):
        Timing.of(kind, expression, zone)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_cron_text_is_a_timing_or_a_timing_error(text):
    try:
        timing = Timing.of("cron", text, "Europe/Berlin")
    except TimingError:
        return
    first = timing.next_after(ANCHOR, ANCHOR)
    assert first is None or first > ANCHOR


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_every_or_at_text_is_a_timing_or_a_timing_error(text):
    for kind in ("every", "at"):
        with contextlib.suppress(TimingError):
            Timing.of(kind, text, "UTC")


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["*/7 * * * *", "30 2 * * *", "0 */5 * * *", "15 1,2,3 * * sun"]),
    st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"]),
    st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 12, 1)),
)
def test_cron_slots_rise_strictly_and_never_repeat(expression, zone, start):
    timing = Timing.of("cron", expression, zone)
    start = start.replace(tzinfo=UTC)
    found = slots(timing, start, start + timedelta(days=3))
    assert all(a < b for a, b in itertools.pairwise(found))
    assert all(s > start for s in found)


@given(st.integers(1, 10**6), st.sampled_from("smhd"))
def test_every_reads_a_number_and_a_unit(number, unit):
    seconds = number * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds > 3660 * 86400:
        with pytest.raises(TimingError):
            parse_every(f"{number}{unit}")
    else:
        assert parse_every(f"{number}{unit}") == timedelta(seconds=seconds)


# -- missed slots -------------------------------------------------------------------------

EVERY_10M = Timing.of("every", "10m", "UTC")


def plan(policy: MissedPolicy, down_slots: int, timing: Timing = EVERY_10M):
    after = ANCHOR
    now = ANCHOR + timedelta(minutes=10 * down_slots, seconds=5)
    return plan_due(timing, after=after, now=now, anchor=ANCHOR, missed=policy)


def test_one_slot_on_time_fires_whatever_the_policy():
    for policy in MissedPolicy:
        due = plan_due(
            EVERY_10M,
            after=ANCHOR,
            now=ANCHOR + timedelta(minutes=10, seconds=1),
            anchor=ANCHOR,
            missed=policy,
        )
        assert due.fire == [(ANCHOR + timedelta(minutes=10), 0)] and due.missed == 0


@pytest.mark.parametrize(
    ("policy", "fired", "missed_slots"),
    [(MissedPolicy.ONCE, 1, [10]), (MissedPolicy.SKIP, 0, []), (MissedPolicy.ALL, 10, [0] * 10)],
)
def test_downtime_over_ten_slots_follows_the_policy(policy, fired, missed_slots):
    due = plan(policy, 10)
    assert len(due.fire) == fired
    assert [n for _, n in due.fire] == missed_slots
    assert due.missed == 10
    assert due.last_slot == ANCHOR + timedelta(minutes=100)


def test_all_is_capped_at_the_newest_hundred():
    due = plan(MissedPolicy.ALL, 1000)
    assert len(due.fire) == MAX_CATCH_UP and due.skipped == 900
    assert due.fire[-1][0] == ANCHOR + timedelta(minutes=10_000)


def test_a_long_downtime_of_a_one_second_schedule_is_counted_not_walked():
    every_second = Timing.of("every", "1s", "UTC")
    due = plan_due(
        every_second,
        after=ANCHOR,
        now=ANCHOR + timedelta(days=365),
        anchor=ANCHOR,
        missed=MissedPolicy.ONCE,
    )
    assert due.fire == [(ANCHOR + timedelta(days=365), 365 * 86400)]


def test_a_single_late_slot_is_missed():
    due = plan_due(
        EVERY_10M,
        after=ANCHOR,
        now=ANCHOR + timedelta(minutes=10) + LATE_AFTER * 2,
        anchor=ANCHOR,
        missed=MissedPolicy.SKIP,
    )
    assert due.fire == [] and due.missed == 1


def test_nothing_due_before_the_first_slot():
    assert plan(MissedPolicy.ALL, 0).nothing


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(list(MissedPolicy)),
    st.sampled_from(["every 7m", "every 1s", "cron */5 * * * *", "cron 30 2 * * *"]),
    st.integers(0, 10**6),
    st.integers(0, 3 * 10**6),
)
def test_a_plan_fires_only_due_slots_each_once_at_most_a_hundred(policy, timing, start, span):
    kind, expression = timing.split(" ", 1)
    timing = Timing.of(kind, expression, "Europe/Berlin")
    after = ANCHOR + timedelta(seconds=start)
    now = after + timedelta(seconds=span)
    due = plan_due(timing, after=after, now=now, anchor=ANCHOR, missed=policy)
    slots = [slot for slot, _ in due.fire]
    assert all(after < slot <= now for slot in slots)
    assert slots == sorted(set(slots)) and len(slots) <= MAX_CATCH_UP
    if due.nothing:
        assert timing.next_after(after, ANCHOR) > now
    else:
        assert due.last_slot is not None and after < due.last_slot <= now
        assert timing.next_after(due.last_slot, ANCHOR) > now  # nothing due is left behind
        assert len(slots) + due.skipped == max(due.missed, 1)
