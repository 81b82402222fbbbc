"""Mail over real TLS: Dovecot with ``ssl = required`` and aiosmtpd with implicit TLS or
STARTTLS, each with a certificate of a private CA that ``ca_file`` makes trusted."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator

import pytest

from smarthole.builtins.email.imap import Account, Mailbox
from smarthole.builtins.email.smtp import Sender, Server, SmtpFailure
from smarthole.builtins.email.tls import client_context
from smarthole.cli import main
from smarthole.errors import ConfigError
from smarthole.testing import text
from tests.helpers import wait_for

from .certs import Certs, make_certs
from .conftest import AGENT, USERS, enable_email
from .mail import channel_status, mail, plain, replies, send_directly
from .servers import PASSWORD, Dovecot, MailServer, require_dovecot

MODES = ["tls", "starttls"]


@pytest.fixture
def certs(tmp_path) -> Certs:
    return make_certs(tmp_path / "certs")


@pytest.fixture
def tls_dovecot(certs: Certs) -> Iterator[Dovecot]:
    require_dovecot()
    server = Dovecot(USERS, certs).start()
    yield server
    server.close()


@pytest.fixture
def tls_smtp(tls_dovecot: Dovecot, certs: Certs) -> Iterator[Callable[[str], MailServer]]:
    """``tls_smtp(mode)``: an SMTP server speaking ``mode``, stopped at the end."""
    started: list[MailServer] = []

    def start(mode: str) -> MailServer:
        started.append(MailServer(tls_dovecot, mode, certs))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def imap_port(dovecot: Dovecot, mode: str) -> int:
    return dovecot.tls_port if mode == "tls" else dovecot.port


def logins(dovecot: Dovecot) -> list[str]:
    return [line for line in dovecot.log().splitlines() if "Login: user=<" in line]


@pytest.mark.parametrize("mode", MODES)
def test_mail_in_and_the_reply_out_over_tls(
    mode, home, fake, mail_env, threads, certs, tls_dovecot, tls_smtp
):
    fake.add(text("Over TLS."))
    smtp = tls_smtp(mode)
    enable_email(
        home, tls_dovecot, smtp, imap_port=imap_port(tls_dovecot, mode), imap_tls=mode,
        smtp_tls=mode, ca_file=str(certs.ca),
    )  # fmt: skip
    threads(home, mail_env)
    send_directly(tls_dovecot, mail("hello"))
    (reply,) = wait_for(lambda: replies(tls_dovecot), 30, "the reply")
    assert plain(reply).strip() == "Over TLS."
    assert smtp.encrypted == [True] and smtp.logins == [AGENT], "logged in and sent over TLS"
    (login, *_) = logins(tls_dovecot)
    assert f"user=<{AGENT}>" in login and "TLS" in login


def test_an_untrusted_imap_server_is_refused_and_status_says_why(
    home, fake, mail_env, threads, tls_dovecot, tls_smtp, capsys
):
    smtp = tls_smtp("starttls")
    enable_email(home, tls_dovecot, smtp, imap_tls="starttls", smtp_tls="starttls")  # no ca_file
    threads(home, mail_env)
    found = wait_for(lambda: (c := channel_status(home, capsys))["last_error"] and c, 30, "why")
    assert found["state"] == "error"
    assert "certificate is not trusted" in found["last_error"]
    assert "ca_file" in found["last_error"]
    assert logins(tls_dovecot) == [], "no password crossed the connection"


@pytest.mark.parametrize("mode", MODES)
def test_without_ca_file_neither_server_is_trusted_and_nothing_is_sent(mode, tls_dovecot, tls_smtp):
    smtp = tls_smtp(mode)
    account = Account("127.0.0.1", imap_port(tls_dovecot, mode), mode, AGENT, PASSWORD, "INBOX")
    with pytest.raises(ssl.SSLCertVerificationError):
        Mailbox(account)
    assert logins(tls_dovecot) == []
    server = Server("127.0.0.1", smtp.port, mode, AGENT, PASSWORD)
    with pytest.raises(SmtpFailure, match="certificate is not trusted"), Sender(server) as out:
        out.send(mail("never sent"), AGENT, "me@example.com")
    assert smtp.received == []


def test_ca_file_must_exist_and_hold_certificates(tmp_path, certs):
    assert client_context(str(certs.ca), tmp_path).verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(ConfigError, match=r"\[email\] ca_file .*missing.pem does not exist"):
        client_context("missing.pem", tmp_path)
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="holds no usable PEM certificates"):
        client_context("junk.pem", tmp_path)


def test_a_missing_ca_file_stops_the_start_naming_it(
    home, environ, monkeypatch, dovecot, smtp, capsys
):
    monkeypatch.setenv("SMARTHOLE_MAIL_PASSWORD", PASSWORD)
    enable_email(home, dovecot, smtp, ca_file="no-such-ca.pem")
    code = main(["run", "--once", "--home", str(home)])
    assert code != 0
    assert "no-such-ca.pem does not exist" in capsys.readouterr().err
