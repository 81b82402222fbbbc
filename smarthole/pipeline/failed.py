"""The failed/ folder: each message that cannot be answered, beside ``<name>.error.txt``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..formats import display_name, iso
from ..fsutil import NAME_MAX, atomic_write, fit_name, make_private, move_durably, unique_path

if TYPE_CHECKING:
    from ..db.ledger import LedgerEntry

ERROR_SUFFIX = ".error.txt"
# Room for ERROR_SUFFIX and unique_path's "-N" when a failed file's name is made to fit.
FAILED_NAME_MAX = NAME_MAX - len(ERROR_SUFFIX) - 8


def move_to_failed(folder: Path, claimed: Path, name: str, reason: str) -> Path:
    """Move ``claimed`` (inbox file ``name``) into ``folder`` with its reason; its new path.

    Two fsyncs: call it outside the store's transactions.
    """
    folder.mkdir(parents=True, exist_ok=True)
    fitted = fit_name(display_name(name), FAILED_NAME_MAX)
    if fitted != name:
        reason = f"{reason.strip()}\noriginal name: {display_name(name)}"
    target = unique_path(folder, fitted)
    atomic_write(target.with_name(target.name + ERROR_SUFFIX), (reason.strip() + "\n").encode())
    move_durably(claimed, target)
    make_private(target)  # the writer's mode may have let others read it
    return target


def aside_note(entry: LedgerEntry, reason: str, *, attempts: int | None, now: str) -> str:
    """What ``<name>.error.txt`` says of a dead message: the reason, and after failed attempts,
    how many, since when, and how to try again."""
    details = [reason]
    if attempts is not None:
        details += [
            f"attempts: {attempts}",
            f"first received: {iso(entry.received_at)}",
            f"given up: {now}",
            f"message id: {entry.id}",
            f"retry with: smarthole retry {entry.id}",
        ]
    return "\n".join(details)
