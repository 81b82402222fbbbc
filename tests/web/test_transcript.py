"""How a decided approval reads in the web view's transcript: one line, what, who and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from smarthole.db.approvals import Approval
from smarthole.db.states import ApprovalState
from smarthole.web.transcript import decision

NOW = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
AT = datetime(2026, 11, 28, 6, 53, tzinfo=UTC)


def approval(status: ApprovalState, **fields) -> Approval:
    values = dict(
        id="a1", scope="c1", tool_use_id="toolu_1", conversation_id="c1", channel="default",
        turn=2, message_id="m1", task_id=None, agent="assistant", tool="write_file",
        input={"path": "a.md"}, args_hash="h", question=None, status=status, always=False,
        note=None, decided_by="web", answer_id=None, created_at=AT - timedelta(hours=1),
        expires_at=AT + timedelta(days=1), decided_at=AT,
    )  # fmt: skip
    return Approval(**{**values, **fields})


@pytest.mark.parametrize(
    ("status", "fields", "line"),
    [
        (ApprovalState.APPROVED, {}, "write_file approved (web, 06:53)"),
        (
            ApprovalState.APPROVED,
            {"always": True, "decided_by": "cli"},
            "write_file approved for the rest of this conversation (command line, 06:53)",
        ),
        (
            ApprovalState.DENIED,
            {"note": "not that file", "decided_by": "inbox"},
            "write_file denied (a file, 06:53): not that file",
        ),
        (
            ApprovalState.EXPIRED,
            {"decided_by": "timeout", "decided_at": None, "expires_at": AT},
            "write_file expired: no answer by 06:53, so it did not run",
        ),
        (
            ApprovalState.APPROVED,
            {"decided_at": AT - timedelta(days=1)},
            "write_file approved (web, 2026-11-27 06:53)",
        ),
        (
            ApprovalState.DENIED,
            {"task_id": "t1", "agent": "critic"},
            "write_file (asked by critic) denied (web, 06:53)",
        ),
        (ApprovalState.ANSWERED, {}, "write_file not run: you answered instead (web, 06:53)"),
    ],
)
def test_a_decided_approval_is_one_line(status, fields, line):
    said = decision(approval(status, **fields), now=NOW)
    assert (said.kind, said.turn, said.text) == ("decision", 2, line)
