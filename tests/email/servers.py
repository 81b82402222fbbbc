"""Real mail servers for the email channel's tests: Dovecot for IMAP, aiosmtpd for SMTP.

Dovecot runs as an unprivileged instance of its own: its config, base_dir, state, log,
passwd-file users and Maildirs in one temporary folder, listening on 127.0.0.1 only. Run as
root (CI), the whole instance runs as ``nobody`` (Dovecot refuses to run its login processes
as root). The SMTP server plays the receiving MX and the outgoing relay at once: it stamps an
``Authentication-Results`` header as a real MX does (``spf=pass`` for the envelope domains it
trusts, ``spf=fail`` otherwise) and delivers each recipient's copy into their Maildir through
Dovecot's delivery agent (``dovecot-lda``).
"""

from __future__ import annotations

import contextlib
import mailbox
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from .certs import Certs

DOVECOT = Path("/usr/sbin/dovecot")
LDA = Path("/usr/lib/dovecot/dovecot-lda")
REQUIRE_ENV = "SMARTHOLE_REQUIRE_DOVECOT"
PASSWORD = "mail-secret"
TRUSTED_DOMAINS = ("example.com", "family.example")
CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
{ssl}
disable_plaintext_auth = no
auth_mechanisms = plain login
default_login_user = {user}
default_internal_user = {user}
default_internal_group = {group}
first_valid_uid = 1
mail_location = maildir:{root}/home/%n/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/home/%n
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
    ssl = yes
  }}
  chroot =
}}
service anvil {{
  chroot =
}}
"""


def require_dovecot() -> None:
    """Skip, saying why, when Dovecot is missing; in CI (``SMARTHOLE_REQUIRE_DOVECOT``) fail."""
    if DOVECOT.exists() and LDA.exists():
        return
    why = f"Dovecot is not installed ({DOVECOT}; Debian: apt-get install dovecot-imapd)"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{why}, and {REQUIRE_ENV} says the email tests must run")
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Dovecot:
    """An unprivileged Dovecot on 127.0.0.1 with passwd-file users and Maildirs.

    Given ``certs``, TLS is required (``ssl = required``: no login without it): ``port``
    speaks STARTTLS and ``tls_port`` implicit TLS, with the certificate ``certs`` made.
    """

    def __init__(self, users: Iterable[str], certs: Certs | None = None) -> None:
        # Short (unix sockets live in base_dir) and reachable by the unprivileged user.
        self.root = Path(tempfile.mkdtemp(prefix="shdv-", dir="/tmp"))
        self.root.chmod(0o755)
        self.port = free_port()
        self.tls_port = free_port() if certs is not None else 0
        self.users = {user: user.partition("@")[0] for user in users}
        as_root = os.geteuid() == 0
        account = pwd.getpwnam("nobody") if as_root else pwd.getpwuid(os.geteuid())
        self.uid, self.gid = (account.pw_uid, account.pw_gid) if as_root else (-1, -1)
        group = _group_name(account.pw_gid)
        for folder in ("run", "state", "home"):
            (self.root / folder).mkdir()
        for name in self.users.values():  # made now and owned by the instance: never by root
            for folder in ("tmp", "new", "cur"):
                (self.root / "home" / name / "Maildir" / folder).mkdir(parents=True)
        (self.root / "passwd").write_text(
            "".join(f"{user}:{{PLAIN}}{PASSWORD}\n" for user in self.users)
        )
        (self.root / "dovecot.conf").write_text(
            CONFIG.format(
                root=self.root,
                user=account.pw_name,
                group=group,
                uid=account.pw_uid,
                gid=account.pw_gid,
                port=self.port,
                tls_port=self.tls_port,
                ssl=self._ssl(certs),
            )
        )
        self._own()
        self.process: subprocess.Popen[bytes] | None = None

    def _ssl(self, certs: Certs | None) -> str:
        if certs is None:
            return "ssl = no"
        # Copied in: the test's tmp_path is not readable by the unprivileged instance.
        shutil.copy(certs.cert, self.root / "cert.pem")
        shutil.copy(certs.key, self.root / "key.pem")
        return f"ssl = required\nssl_cert = <{self.root}/cert.pem\nssl_key = <{self.root}/key.pem"

    def _own(self) -> None:
        """Run as root: what the test wrote becomes the instance's (Dovecot renames meanwhile)."""
        if self.uid < 0:
            return
        for path in [self.root, *self.root.rglob("*")]:
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(path).st_uid != self.uid:
                    os.chown(path, self.uid, self.gid, follow_symlinks=False)

    def start(self) -> Dovecot:
        preexec = None
        if self.uid >= 0:
            uid, gid = self.uid, self.gid

            def preexec() -> None:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)

        self.process = subprocess.Popen(
            [str(DOVECOT), "-F", "-c", str(self.root / "dovecot.conf")],
            preexec_fn=preexec,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        wait_until(self._answers, 20, f"Dovecot on port {self.port} ({self.log()})")
        return self

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            err = self.process.stderr.read().decode() if self.process.stderr else ""
            raise AssertionError(f"Dovecot exited: {err} {self.log()}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                return conn.recv(100).startswith(b"* OK")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        if self.process.stderr:
            self.process.stderr.close()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        try:
            return (self.root / "dovecot.log").read_text()[-2000:]
        except OSError:
            return ""

    def maildir(self, user: str) -> mailbox.Maildir:
        path = self.root / "home" / self.users[user] / "Maildir"
        return mailbox.Maildir(path, factory=None, create=False)

    def deliver(self, user: str, raw: bytes, sender: str = "mx@mx.test") -> None:
        """The mail into the user's Maildir by Dovecot's own delivery agent, which also
        updates the index and so wakes an IDLE session at once, as a real delivery does.
        While Dovecot is down (the agent cannot see it then): a plain Maildir delivery."""
        if self.process is None:
            self.maildir(user).add(raw)
            self._own()
            return
        done = subprocess.run(
            [str(LDA), "-c", str(self.root / "dovecot.conf"), "-d", user, "-f", sender],
            input=raw,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, f"dovecot-lda: {done.stderr.decode()} {self.log()}"

    def mails(self, user: str) -> list[EmailMessage]:
        """The user's mail in the order it was delivered."""
        box = self.maildir(user)
        keys = sorted(box.keys(), key=_delivered)
        return [message_from_bytes(box.get_bytes(k), policy=policy.default) for k in keys]  # type: ignore[misc]


def _delivered(key: str) -> tuple[int, int]:
    """A Maildir name's time of delivery: ``<seconds>.M<microseconds>P<pid>...``."""
    seconds, _, rest = key.partition(".")
    micro = rest[1:].split("P")[0] if rest.startswith("M") else "0"
    return int(seconds), int(micro) if micro.isdigit() else 0


def _group_name(gid: int) -> str:
    import grp

    return grp.getgrgid(gid).gr_name


class MailServer:
    """aiosmtpd as the MX (stamping Authentication-Results) and the relay, into Dovecot.

    ``tls``: "none", "tls" (implicit, the whole connection) or "starttls" (required before
    any mail), with the certificate ``certs`` made.
    """

    def __init__(self, dovecot: Dovecot, tls: str = "none", certs: Certs | None = None) -> None:
        from aiosmtpd.controller import Controller

        self.dovecot = dovecot
        self.received: list[tuple[str, list[str], bytes]] = []
        self.received_at: list[float] = []  # time.perf_counter() of each, for the bench
        self.encrypted: list[bool] = []  # whether each came over TLS
        self.logins: list[str] = []  # each accepted AUTH's user
        self.refuse_with: str | None = None  # an SMTP answer to give instead of taking mail
        self.port = free_port()
        options: dict[str, Any] = {}
        if tls != "none":
            assert certs is not None, "a TLS server needs its certificate"
            context = certs.server_context()
            # aiosmtpd offers AUTH over STARTTLS only unless told the whole connection is TLS.
            options = (
                {"ssl_context": context, "auth_require_tls": False}
                if tls == "tls"
                else {"tls_context": context, "require_starttls": True}
            )
        self.controller = Controller(
            self,
            hostname="127.0.0.1",
            port=self.port,
            data_size_limit=200 * 1024 * 1024,
            authenticator=self._authenticate,  # offered by aiosmtpd only over TLS
            **options,
        )
        self.controller.start()

    def _authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        known = isinstance(auth_data, LoginPassword) and (
            auth_data.login.decode() in self.dovecot.users
            and auth_data.password.decode() == PASSWORD
        )
        if known:
            self.logins.append(auth_data.login.decode())
        return AuthResult(success=known)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse_with is not None:
            return self.refuse_with
        content = envelope.original_content or envelope.content
        sender = envelope.mail_from or ""
        domain = sender.rpartition("@")[2].lower()
        verdict = "pass" if domain in TRUSTED_DOMAINS else "fail"
        stamp = f"Authentication-Results: mx.test; spf={verdict} smtp.mailfrom={sender}\r\n"
        for recipient in envelope.rcpt_tos:
            if recipient.lower() not in self.dovecot.users:
                return f"550 no mailbox {recipient}"
        self.received.append((sender, list(envelope.rcpt_tos), content))
        self.encrypted.append(server.transport.get_extra_info("ssl_object") is not None)
        self.received_at.append(time.perf_counter())
        for recipient in envelope.rcpt_tos:
            self.dovecot.deliver(recipient.lower(), stamp.encode() + content, sender or "<>")
        return "250 OK delivered"

    def stop(self) -> None:
        self.controller.stop()
