"""Mail from the folder into the inbox, each exactly once, then marked ``\\Seen``.

For each unseen UID: read it (``BODY.PEEK``: reading marks nothing), screen it, and take it
through the channel host, whose record of the external id (the Message-ID, else folder,
UIDVALIDITY and UID) commits before the inbox entry is written. Only then is it marked
``\\Seen``: a crash before leaves it unseen, and the next check takes it again as a
duplicate (nothing written twice) and marks it. A refused mail stays unread (or moves to
``refused_folder``) and is remembered by its UID key, so it is counted once; an allowed
mail that cannot be used is answered with the reason, once (a delivery keyed by the mail).
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

from ...channels import Delivery, Incoming
from ...errors import MessageError
from ...formats import iso
from ...pipeline.message import CHANNEL_PATTERN
from .mailparse import Mail, parse_mail
from .screening import refusal, unusable

if TYPE_CHECKING:
    from ...channels import ChannelHost
    from ...config.email import EmailSettings
    from .imap import Mailbox

logger = logging.getLogger(__name__)

SENT = "sent:"  # sent:<Message-ID> -> the thread a reply of ours belongs to
REFUSED = "refused:"  # refused:<folder/uidvalidity/uid> -> why
MAX_REFERENCES = 20
LISTED_SENDERS = 20
UNSAFE_IN_CHANNEL = re.compile(r"[^\w.+-]")  # and no @: see sender_channel
READABLE = 40  # "email." + 40 + "-" + 16 hex digits: 63, within CHANNEL_PATTERN's 64
ANSWER = re.compile(r"^\s*(approve\s+always|approve|deny)\b[\s:,.-]*(.*)\Z", re.IGNORECASE)


def approval_answer(text: str) -> tuple[str, bool, str] | None:
    """``(decision, always, reason)`` when the first line answers an approval."""
    lines = text.strip().splitlines()
    found = ANSWER.match(lines[0]) if lines else None
    if found is None:
        return None
    word = " ".join(found.group(1).lower().split())
    rest = "\n".join([found.group(2), *lines[1:]]).strip()
    if word == "deny":
        return "deny", False, rest
    return "approve", word == "approve always", ""


class MailIntake:
    """Takes the unseen mail of one folder, for one channel host."""

    def __init__(self, host: ChannelHost, settings: EmailSettings) -> None:
        self.host = host
        self.settings = settings
        self.data = host.records.data

    def check(self, box: Mailbox) -> int:
        """Take every unseen mail of the folder, searching again until a search finds none
        this check has not looked at; how many were looked at.

        Mail that comes while the check fetches, marks or moves is told of in those commands'
        answers, which the IMAP client does not keep: the IDLE after them would not hear of it
        (a mail would wait for the periodic check). The last search, finding nothing new, is
        the last command before IDLE, which tells of anything after it. A mail left unseen
        (refused and left unread, or not taken this time) is looked at once a check.
        """
        looked: set[int] = set()
        while True:
            new = [uid for uid in box.unseen() if uid not in looked]
            if not new:
                return len(looked)
            for uid in new:
                self.one(box, uid)
            looked.update(new)

    def one(self, box: Mailbox, uid: int) -> None:
        key = f"{box.folder}/{box.uidvalidity}/{uid}"
        if self.data.get(REFUSED + key) is not None:
            return  # refused before, left unread: counted once
        size = box.size(uid)
        too_large = size > self.settings.max_mail_bytes
        raw = box.headers(uid) if too_large else box.fetch(uid)
        if raw is None:
            return  # gone meanwhile
        try:
            mail = parse_mail(raw)
        except MessageError as exc:
            self.refuse(box, uid, key, None, str(exc))
            return
        reason = refusal(mail, self.settings)
        if reason is not None:
            self.refuse(box, uid, key, mail, reason)
            return
        limit = self.settings.max_mail_bytes
        problem = f"it is {size} bytes (at most {limit})" if too_large else unusable(mail)
        if problem is None:
            try:
                incoming = self.incoming(mail, key)
                taken = self.host.take(incoming)
                if taken.duplicate:
                    logger.info("email: %s was taken before; marking it seen", key)
                self.list_sender(incoming.channel)
            except MessageError as exc:
                problem = str(exc)
        if problem is not None:
            self.answer_unusable(mail, key, problem)
        box.mark_seen(uid)

    # -- taking ----------------------------------------------------------------------------------

    def incoming(self, mail: Mail, key: str) -> Incoming:
        assert mail.sender is not None
        thread = self.thread(mail)
        text, fields = mail.text, {}
        approval = thread.get("approval") if thread else None
        answer = approval_answer(text) if isinstance(approval, str) else None
        if answer is not None and thread is not None:
            decision, always, reason = answer
            fields = {decision: approval, "args_hash": thread.get("args_hash"), "always": always}
            fields = {k: v for k, v in fields.items() if v not in (None, False)}
            text = reason
        conversation = thread.get("conversation") if thread else None
        return Incoming(
            external_id=mail.message_id or key,
            text=text,
            channel=self.channel_for(mail.sender),
            conversation=conversation if not fields else None,
            new_conversation=conversation is None and not fields,
            timestamp=mail.date,
            metadata={"email": {"from": mail.sender, "subject": mail.subject}},
            attachments=_unique(mail.attachments),
            fields=fields,
            keep=origin_of(mail, key, new_thread=conversation is None),
        )

    def thread(self, mail: Mail) -> dict[str, Any] | None:
        """What we kept of the reply of ours this mail answers (In-Reply-To, References)."""
        for answered in [*mail.in_reply_to, *reversed(mail.references)]:
            found = self.data.get(SENT + answered)
            if isinstance(found, dict):
                return found
        return None

    def channel_for(self, sender: str) -> str:
        if self.settings.channel != "per-sender":
            return "email"
        return sender_channel(sender)

    def list_sender(self, channel: str | None) -> None:
        """Per sender: status lists their channels, the latest first (a bounded list)."""
        if self.settings.channel != "per-sender" or channel is None:
            return
        listed = self.host.records.status().get("senders")
        others = [c for c in listed if c != channel] if isinstance(listed, list) else []
        self.host.records.update_status(senders=[channel, *others][:LISTED_SENDERS])

    # -- refusing ----------------------------------------------------------------------------

    def refuse(self, box: Mailbox, uid: int, key: str, mail: Mail | None, reason: str) -> None:
        """Never reaches the model, never answered; left unread (or moved), counted once."""
        sender = mail.sender if mail is not None else None
        logger.warning("email: refused %s from %s: %s", key, sender or "?", reason)
        with self.host.records.store.transaction():  # the record, the count and the event
            self.data.set(
                REFUSED + key, {"reason": reason, "from": sender, "at": iso(self.host.now())}
            )
            status = self.host.records.status()
            self.host.records.update_status(
                refused=int(status.get("refused", 0)) + 1, last_refused=f"{sender or '?'}: {reason}"
            )
            self.host.event("mail_refused", reason=reason, sender=sender, mail=key)
        if self.settings.refused_folder:
            box.move(uid, self.settings.refused_folder)

    def answer_unusable(self, mail: Mail, key: str, reason: str) -> None:
        """Tell an allowed sender why their mail cannot be used: once, however often seen."""
        logger.warning("email: cannot use %s from %s: %s", key, mail.sender, reason)
        external = mail.message_id or key
        outbox_id = "unusable-" + hashlib.sha256(external.encode()).hexdigest()[:24]
        delivery = Delivery(
            outbox_id=outbox_id,
            message_id="",
            conversation=None,
            kind="error",
            text=f"Your mail could not be used: {reason}.",
            created_at=iso(self.host.now()),
            origin=origin_of(mail, key, new_thread=False),
        )
        if self.host.records.keep(delivery):
            status = self.host.records.status()
            self.host.records.update_status(
                unusable=int(status.get("unusable", 0)) + 1, last_unusable=reason
            )


def sender_channel(sender: str) -> str:
    """The ledger's channel of a sender: ``email.<address>`` when that is a valid channel name;
    else a readable part and a hash of the address, with no ``@``. A name of the first kind has
    exactly one ``@``, so the two kinds never meet (``o'brien@x`` is not ``o_brien@x``)."""
    address = sender.lower()
    plain = "email." + address
    if address.count("@") == 1 and CHANNEL_PATTERN.fullmatch(plain):
        return plain
    readable = UNSAFE_IN_CHANNEL.sub("_", address.replace("@", "_"))[:READABLE]
    digest = hashlib.sha256(address.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"email.{readable}-{digest}"


def origin_of(mail: Mail, key: str, *, new_thread: bool) -> dict[str, Any]:
    """What each reply needs of the mail it answers: who, the subject, the thread."""
    return {
        "from": mail.sender,
        "subject": mail.subject,
        "message_id": mail.message_id,
        "references": list(mail.references[-MAX_REFERENCES:]),
        "uid": key,
        "new_thread": new_thread,
    }


def _unique(files: tuple[tuple[str, bytes], ...]) -> tuple[tuple[str, bytes], ...]:
    """Attachment names made distinct (two ``image.png`` in one mail), never ``message.md``."""
    seen: set[str] = set()
    named = []
    for name, data in files:
        stem, dot, suffix = name.rpartition(".")
        stem, suffix = (stem, dot + suffix) if dot else (name, "")
        candidate, count = name, 1
        while candidate.lower() in seen or candidate.lower() == "message.md":
            count += 1
            candidate = f"{stem}-{count}{suffix}"
        seen.add(candidate.lower())
        named.append((candidate, data))
    return tuple(named)
