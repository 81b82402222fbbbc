"""kill -9 at each step of taking a mail and of sending its reply: one reply per mail.

A plugin in the home's plugins folder (loaded by the real daemon, a subprocess) makes the
process kill itself with SIGKILL at the named step, once. The daemon is started again, and the
test counts the replies in the person's Maildir: one Message-ID per mail; a copy more only
where the crash fell between the SMTP hand-over and its record (the same Message-ID then, so
mail clients show one message). The model is asked once.
"""

from __future__ import annotations

import pytest

from smarthole.testing import text
from tests.helpers import wait_for

from .conftest import enable_email
from .mail import distinct, mail, plain, replies, send

CRASHER = """
import os, signal
from pathlib import Path

from smarthole import hookimpl
from smarthole.builtins.email import channel, imap, intake
from smarthole.channels import host, records

HOME = Path(__file__).resolve().parent.parent
STEP = (HOME / "crash_at.txt").read_text().strip()
DONE = HOME / "crashed"


def crashing(owner, name, when=lambda *a, **k: True):
    original = getattr(owner, name)

    def replacement(*args, **kwargs):
        if STEP_NAME == STEP and not DONE.exists() and when(*args, **kwargs):
            DONE.write_text(STEP)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)

    return replacement


STEPS = {
    "read, not taken": (intake.MailIntake, "incoming", None),
    "recorded, not written": (host.ChannelHost, "_write", None),
    "written, not recorded": (
        records.ChannelRecords, "intake_batch", lambda self, entries, state, **k: state == "taken"
    ),
    "taken, not seen": (imap.Mailbox, "mark_seen", None),
    "thread recorded, not sent": (channel.Sender, "send", None),
    "sent, not recorded": (host.ChannelHost, "sent", None),
}


@hookimpl
def startup(app):
    owner, name, when = STEPS[STEP]
    global STEP_NAME
    STEP_NAME = STEP
    setattr(owner, name, crashing(owner, name, when or (lambda *a, **k: True)))
"""
STEPS = [
    "read, not taken",
    "recorded, not written",
    "written, not recorded",
    "taken, not seen",
    "thread recorded, not sent",
    "sent, not recorded",
]


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_each_step_gives_one_reply(home, fake, mail_env, daemons, dovecot, smtp, step):
    plugins = home / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "crasher.py").write_text(CRASHER)
    (home / "crash_at.txt").write_text(step)
    enable_email(home, dovecot, smtp, sections={"plugins": {"paths": [str(plugins)]}})
    fake.add(text("Once."))
    first = daemons(home, mail_env, ready=False).wait_ready(60)  # a process start: slow
    send(smtp, mail("hello", subject="Crash"))
    wait_for(lambda: first.process.poll() is not None, 60, f"the kill at {step!r}")
    assert (home / "crashed").read_text() == step
    daemons(home, mail_env, ready=False).wait_ready(60)
    wait_for(lambda: replies(dovecot), 60, "the reply")
    fake.add(text("Marker."))
    send(smtp, mail("and this?", subject="Marker"))
    wait_for(lambda: any(plain(r).strip() == "Marker." for r in replies(dovecot)), 60, "marker")
    found = [r for r in replies(dovecot) if r["Subject"] == "Re: Crash"]
    assert len(distinct(found)) == 1, "one reply per mail"
    copies = 2 if step == "sent, not recorded" else 1
    assert len(found) == copies and plain(found[0]).strip() == "Once."
    assert len(fake.requests) == 2, "the model was asked once for the mail"
