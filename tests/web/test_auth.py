"""Nobody but the token's holder, on this machine's address, from its own pages, gets in."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from smarthole.home import Home
from smarthole.web.auth import CSP, host_checker
from smarthole.web.settings import ensure_token, is_loopback, read_token

from .conftest import BASE, TOKEN
from .support import WebProcess, free_port

PROTECTED = ["/", "/tasks", "/new", "/c/abc", "/api/conversations", "/api/events",
             "/api/tasks", "/static/app.js", "/fragments/conversations", "/nowhere"]  # fmt: skip


@pytest.mark.parametrize("path", PROTECTED)
def test_without_a_token_every_path_is_refused_with_no_data(client, path):
    response = client.get(path, follow_redirects=False)
    assert response.status_code == 401
    assert "conversation" not in response.text.lower().replace("smarthole web", "")


@pytest.mark.parametrize(
    "credentials",
    [
        {"headers": {"authorization": "Bearer wrong-token-0123456789abcdef"}},
        {"headers": {"authorization": f"Basic {TOKEN}"}},
        {"headers": {"cookie": "smarthole_token_8470=wrong-token-0123456789abcdef"}},
        {"headers": {"cookie": f"smarthole_token_9999={TOKEN}"}},  # another port's cookie
        {"params": {"token": "wrong-token-0123456789abcdef"}},
    ],
    ids=["wrong bearer", "not bearer", "wrong cookie", "other cookie", "wrong link"],
)
def test_a_wrong_token_is_refused(client, credentials):
    response = client.get("/api/conversations", follow_redirects=False, **credentials)
    assert response.status_code == 401
    assert response.json() == {"error": "a valid token is needed"}


def test_the_link_sets_a_strict_http_only_cookie_and_drops_the_token_from_the_url(client):
    response = client.get(f"/c/abc?turn=2&token={TOKEN}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/c/abc?turn=2"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"smarthole_token_8470={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert client.get("/").status_code == 200  # the client keeps the cookie


def test_a_bearer_token_opens_the_api(client, bearer):
    assert client.get("/api/conversations", headers=bearer).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8470", "127.0.0.1.nip.io:8470"])
def test_a_foreign_host_header_is_refused_even_with_the_token(client, bearer, host):
    response = client.get("/api/conversations", headers={**bearer, "host": host})
    assert response.status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1:8470", "localhost:8470", "LOCALHOST"])
def test_the_bound_address_and_localhost_are_our_hosts(client, bearer, host):
    assert client.get("/api/conversations", headers={**bearer, "host": host}).status_code == 200


@pytest.mark.parametrize(
    ("bound", "header", "allowed"),
    [
        ("127.0.0.1", "127.0.0.1:1", True),
        ("127.0.0.1", "localhost", True),
        ("127.0.0.1", "127.0.0.2", False),
        ("127.0.0.1", "attacker.test", False),
        ("::1", "[::1]:8470", True),
        ("0.0.0.0", "192.168.1.20:8470", True),  # every address: any address, no name
        ("0.0.0.0", "rebind.attacker.test:8470", False),
        ("192.168.1.20", "192.168.1.20:8470", True),
        ("192.168.1.20", "", False),
    ],
)
def test_host_rules(bound, header, allowed):
    assert host_checker(bound)(header) is allowed


def test_a_foreign_origin_cannot_send_a_message(client, bearer, team_home):
    response = client.post(
        "/api/messages",
        json={"text": "delete everything"},
        headers={**bearer, "origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert not list((team_home / "inbox").iterdir())


def test_our_own_origin_and_a_script_without_one_may_send(client, bearer, team_home):
    ours = client.post("/api/messages", json={"text": "one"}, headers={**bearer, "origin": BASE})
    script = client.post("/api/messages", json={"text": "two"}, headers=bearer)
    assert (ours.status_code, script.status_code) == (202, 202)
    assert len(list((team_home / "inbox").iterdir())) == 2


def test_a_foreign_origin_cannot_open_the_event_socket(client):
    from starlette.websockets import WebSocketDisconnect

    client.get(f"/?token={TOKEN}")
    with (
        pytest.raises(WebSocketDisconnect),
        client.websocket_connect(
            "/api/events/socket", headers={"origin": "http://evil.example"}
        ) as socket,
    ):
        socket.receive_text()


def test_every_response_has_a_policy_without_inline_script(client, bearer):
    for path in ("/", "/api/conversations", "/static/app.js", "/nowhere"):
        response = client.get(path, headers=bearer)
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert "unsafe-inline" not in CSP and "script-src 'self'" in CSP


@pytest.mark.parametrize(
    "path",
    ["/static/../settings.py", "/static/%2e%2e/settings.py", "/static/../../home.py",
     "/settings.py", "/static/", "/static/templates/base.html"],
)  # fmt: skip
def test_nothing_outside_the_static_files_is_served(client, bearer, path):
    response = client.get(path, headers=bearer)
    assert response.status_code == 404
    assert "TOKEN_BYTES" not in response.text


def test_the_token_is_private_stable_and_replaced_on_demand(tmp_path):
    home = Home(tmp_path / "home")
    first = ensure_token(home)
    assert len(first) >= 43  # 256 bits, URL-safe
    path = home.state / "web.token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_token(home) == first == read_token(home)
    second = ensure_token(home, new=True)
    assert second != first and read_token(home) == second


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False),
     ("192.168.1.2", False), ("example.com", False)],
)  # fmt: skip
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def test_the_command_prints_the_link_first_and_keeps_the_token(team_home, env):
    port = free_port()
    first = WebProcess(team_home, port, env)
    try:
        assert first.first_line.startswith(f"Open http://127.0.0.1:{port}/?token=")
        token = first.link.split("token=")[1]
        assert token == read_token(Home(team_home))
    finally:
        errors = first.close()
    assert "warning" not in errors
    again = WebProcess(team_home, port, env)
    renewed = WebProcess(team_home, free_port(), env, "--new-token")
    try:
        assert again.link.split("token=")[1] == token
        assert renewed.link.split("token=")[1] not in (token, "")
    finally:
        again.close()
        renewed.close()


def test_listening_beyond_this_machine_prints_a_warning(team_home, env):
    process = WebProcess(team_home, 0, env, "--host", "0.0.0.0")
    errors = process.close()
    assert process.first_line.startswith("Open http://0.0.0.0:")
    assert "warning: listening on 0.0.0.0, not only on this machine" in errors


def test_a_missing_home_is_an_error_before_anything_is_served(tmp_path: Path, env):
    process = WebProcess(tmp_path / "nowhere", free_port(), env)
    errors = process.close()
    assert process.first_line == ""
    assert "no smarthole home at" in errors


def test_the_command_line_does_not_load_the_web_stack():
    """``smarthole --help`` stays fast: the parser's part of ``web`` imports none of it."""
    import subprocess
    import sys

    code = (
        "import sys, argparse; from smarthole.web.command import add_arguments; "
        "from smarthole.web.settings import WebSettings; WebSettings().url; "
        "add_arguments(argparse.ArgumentParser()); "
        "print(*[m for m in ('starlette', 'uvicorn', 'jinja2', 'markdown_it') "
        "if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []
