"""``smarthole web`` as a person runs it: the first line is the link, the link lets one in."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

from tests.helpers import wait_for


def test_smarthole_web_prints_the_link_first_and_serves_it(home, env, tmp_path):
    log = (tmp_path / "web.out").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "smarthole", "web", "--port", "0", "--home", str(home)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = wait_for(lambda: (log.seek(0), log.readline())[1].strip(), timeout=30)
        found = re.fullmatch(r"Open (http://127\.0\.0\.1:\d+/)\?token=([\w-]{43,})", first)
        assert found, first
        url, token = found.groups()
        assert (home / ".smarthole" / "web.token").read_text().strip() == token
        assert (home / ".smarthole" / "web.token").stat().st_mode & 0o077 == 0
        try:
            urllib.request.urlopen(url + "api/conversations", timeout=10)
            raise AssertionError("no token, yet served")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401
        request = urllib.request.Request(
            url + "api/conversations", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        log.close()


def test_run_with_the_web_table_serves_the_view_beside_the_daemon(home, env, daemons):
    from tests.helpers import write_config

    write_config(home, web={"enabled": True, "port": 0})
    daemon = daemons(home, env)
    found = wait_for(
        lambda: re.search(r"Open (http://127\.0\.0\.1:\d+/)\?token=([\w-]+)", daemon.output()),
        timeout=30,
    )
    url, token = found.groups()
    request = urllib.request.Request(
        url + "api/conversations", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
    assert daemon.terminate() == 0
    try:
        urllib.request.urlopen(request, timeout=5)
        raise AssertionError("the view outlived the daemon")
    except urllib.error.URLError:
        pass  # stopped with it


def test_status_shows_the_web_views_url_without_its_token(home, capsys):
    import json

    from smarthole.cli import main
    from tests.helpers import write_config

    write_config(home, web={"enabled": True, "port": 8471})
    assert main(["status", "--json", "--home", str(home)]) == 3  # no daemon
    report = json.loads(capsys.readouterr().out)
    assert report["web"] == {"enabled": True, "url": "http://127.0.0.1:8471"}
    main(["status", "--home", str(home)])
    out = capsys.readouterr().out
    assert "web view: http://127.0.0.1:8471 " in out and "?token=" not in out
