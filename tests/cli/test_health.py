"""Health you can monitor: `status --json` fields and `status --check` for cron and probes."""

from __future__ import annotations

import json
import os
import threading

from smarthole import __version__
from smarthole.cli import main
from smarthole.home import Home
from smarthole.testing import error, hold, text
from tests.helpers import drop, run_once, wait_for


def status_json(home, capsys) -> dict:
    main(["status", "--json", "--home", str(home)])
    return json.loads(capsys.readouterr().out)


def check(home, capsys, *extra: str) -> tuple[int, list[str]]:
    code = main(["status", "--check", "--home", str(home), *extra])
    return code, capsys.readouterr().out.splitlines()


def test_json_status_of_a_running_daemon_has_the_monitoring_fields(home, live_daemon, capsys):
    report = wait_for(lambda: (r := status_json(home, capsys))["ready"] and r, 10, "ready")
    assert report["pid"] == os.getpid()
    assert report["version"] == __version__
    assert report["uptime_seconds"] >= 0
    assert report["daemon_status"] == "idle"
    assert report["queue"] == {"queued": 0, "in_progress": 0, "deferred": 0}
    assert report["oldest_queued_age_seconds"] is None
    assert report["deferred_count"] == report["dead_count"] == report["stranded_count"] == 0
    assert report["last_error"] is None


def test_json_status_without_a_daemon_ignores_a_stale_state_file(home, capsys):
    state = Home(home).state / "daemon.json"
    state.write_text(json.dumps({"pid": 999999, "ready": True, "started_at": "2020-01-01"}))
    report = status_json(home, capsys)
    assert report["running"] is False and report["ready"] is False
    assert report["uptime_seconds"] is None and report["last_error"] is None


def test_check_passes_silently_when_all_is_well(home, live_daemon, capsys):
    wait_for(lambda: status_json(home, capsys)["ready"], 10, "ready")
    assert check(home, capsys, "--max-queue-age", "60") == (0, [])


def test_check_reports_a_missing_daemon_and_dead_letters_one_line_each(home, fake, env, capsys):
    fake.add(error(401, "authentication_error", "invalid x-api-key"))
    drop(home, "hello", "m1")
    run_once(home, env)
    code, lines = check(home, capsys)
    assert code == 1
    assert lines == [
        "the daemon is not running",
        "1 dead message(s) in failed/ (see `smarthole status`; `smarthole retry --all` tries "
        "them again)",
    ]


def test_check_reports_a_queue_older_than_the_limit(home, fake, live_daemon, capsys):
    release = threading.Event()
    fake.add(hold(release, text("late")))
    try:
        drop(home, "hello", "m1")
        fake.wait_for_requests(1)
        wait_for(
            lambda: (status_json(home, capsys)["oldest_queued_age_seconds"] or 0) > 0.2,
            10,
            "the message to wait a while",
        )
        code, lines = check(home, capsys, "--max-queue-age", "0.1")
        assert code == 1 and len(lines) == 1
        assert lines[0].startswith("the oldest queued message has waited")
        assert check(home, capsys, "--max-queue-age", "3600") == (0, [])
    finally:
        release.set()
