"""The composition root's parts over the store alone: the ledger, the tasks, the usage log,
the spend, the pending questions, search, schedules and approvals. Every process has them;
:class:`~smarthole.daemon.runtime.Runtime` builds them, once, on first use, through this base.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..db.approvals import Approvals
    from ..db.ledger import Ledger
    from ..db.pending import PendingQuestions
    from ..db.schedules import Schedules
    from ..db.search import Search
    from ..db.spend import Spend
    from ..db.spendreports import SpendReports
    from ..db.store import Store
    from ..db.tasks import Tasks
    from ..db.usage import UsageLog


class StoreParts:
    """What the root builds over its store and nothing else (a base of ``Runtime``)."""

    @property
    def store(self) -> Store:
        raise NotImplementedError  # the root's own

    @cached_property
    def ledger(self) -> Ledger:
        from ..db.ledger import Ledger

        return Ledger(self.store)

    @cached_property
    def tasks(self) -> Tasks:
        from ..db.tasks import Tasks

        return Tasks(self.store)

    @cached_property
    def usage(self) -> UsageLog:
        from ..db.usage import UsageLog

        return UsageLog(self.store)

    @cached_property
    def spend(self) -> Spend:
        from ..db.spend import Spend

        return Spend(self.store)

    @cached_property
    def spend_reports(self) -> SpendReports:
        from ..db.spendreports import SpendReports

        return SpendReports(self.store)

    @cached_property
    def pending(self) -> PendingQuestions:
        from ..db.pending import PendingQuestions

        return PendingQuestions(self.store)

    @cached_property
    def search(self) -> Search:
        """What was said, found through the full-text index."""
        from ..db.search import Search

        return Search(self.store)

    @cached_property
    def schedules(self) -> Schedules:
        from ..db.schedules import Schedules

        return Schedules(self.store)

    @cached_property
    def approvals(self) -> Approvals:
        """The tool calls that wait for (or got) a person's approval."""
        from ..db.approvals import Approvals

        return Approvals(self.store)
