"""Which mail may reach the model: the allow list, the authentication rule, no loops.

A refused mail never reaches the model and is never answered (an answer to a forged or
automatic mail is how reply storms start). A mail from an allowed, authenticated person that
cannot be used (too large, too many recipients, broken MIME) is answered with the reason.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .mailparse import MAX_RECIPIENTS

if TYPE_CHECKING:
    from ...config.email import EmailSettings
    from .mailparse import Mail

RESULT = re.compile(r"\b(dkim|spf|dmarc)\s*=\s*(\w+)([^;]*)", re.IGNORECASE)
PROPERTY = re.compile(r"\b(header\.d|header\.i|smtp\.mailfrom|header\.from)\s*=\s*([^\s;]+)")


def allowed(sender: str, allow: list[str]) -> bool:
    """Whether ``sender`` (lowercased) matches an entry: an address, or ``*@domain``."""
    domain = sender.rpartition("@")[2]
    for entry in allow:
        entry = entry.lower()
        if entry == sender or (entry.startswith("*@") and entry[2:] == domain):
            return True
    return False


def authenticated(mail: Mail) -> tuple[bool, str]:
    """What the receiving server found: its Authentication-Results (the topmost one, which it
    added; any below came with the mail and prove nothing) must say ``dkim=pass`` or
    ``spf=pass`` for the From: address's domain."""
    if not mail.authentication:
        return False, "the mail has no Authentication-Results"
    if mail.sender is None:
        return False, "the mail has no single From: address"
    domain = mail.sender.rpartition("@")[2]
    header = mail.authentication[0]
    for method, result, rest in RESULT.findall(header.partition(";")[2] or header):
        if method.lower() not in ("dkim", "spf") or result.lower() != "pass":
            continue
        found = dict((k.lower(), v.strip().lower()) for k, v in PROPERTY.findall(rest))
        said = found.get("header.d") or found.get("smtp.mailfrom") or found.get("header.i")
        if said is None or _aligned(said.rpartition("@")[2], domain):
            return True, f"{method.lower()}=pass"
    return False, f"no dkim=pass or spf=pass for {domain}"


def _aligned(said: str, domain: str) -> bool:
    said, domain = said.strip(".").lower(), domain.strip(".").lower()
    return said == domain or domain.endswith("." + said) or said.endswith("." + domain)


def refusal(mail: Mail, settings: EmailSettings) -> str | None:
    """Why the mail must not reach the model (and gets no answer); None if it may."""
    if mail.sender is None:
        return "no single readable From: address"
    if mail.sender == settings.address.lower():
        return "a loop: the mail is from the agent's own address"
    if mail.auto is not None:
        return f"an automatic mail ({mail.auto})"
    if not allowed(mail.sender, settings.allow):
        return f"the sender {mail.sender} is not in [email] allow"
    if settings.require_authenticated:
        passed, why = authenticated(mail)
        if not passed:
            return f"not authenticated: {why}"
    return None


def unusable(mail: Mail) -> str | None:
    """Why an allowed mail cannot be taken (its sender is told); None if it can."""
    if mail.recipients > MAX_RECIPIENTS:
        return f"it was sent to {mail.recipients} recipients (at most {MAX_RECIPIENTS})"
    if mail.problems:
        return mail.problems[0]
    if not mail.text.strip() and not mail.attachments:
        return "it has no text and no attachments"
    return None
