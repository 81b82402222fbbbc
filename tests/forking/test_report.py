"""The replay report's files: what a model or a person wrote is text, never markup."""

from __future__ import annotations

import pytest

from smarthole.cli.replaying import html_report, markdown
from smarthole.db.usage import UsageTotals
from smarthole.pipeline.replayreport import ReplayReport, Side, TurnPair

HOSTILE = "<script>alert(1)</script> | a\x1b[31mred\nnext line"


def report(reply: str = HOSTILE) -> ReplayReport:
    pair = TurnPair(
        turn=2,
        said=HOSTILE,
        original=Side("same", "completed", UsageTotals(1, 100, 20), tools=[("record", "ran")]),
        replay=Side(reply, "completed", UsageTotals(1, 90, 30), tools=[("record", "recorded")]),
    )
    return ReplayReport(
        replay="r1",
        original="o1",
        title="replay of <b>plans</b>",
        model="claude-other",
        system_prompt=True,
        live_tools=False,
        from_turn=1,
        finished=True,
        real_runs=0,
        turns=[pair],
    )


@pytest.mark.parametrize("render", [markdown, html_report], ids=["markdown", "html"])
def test_hostile_text_is_shown_not_run(render):
    written = render([report()])
    assert "<script>" not in written and "<b>plans" not in written
    assert "\x1b" not in written
    assert "&lt;script&gt;" in written


def test_a_markdown_row_stays_one_table_row():
    lines = markdown([report()]).splitlines()
    (reply,) = [line for line in lines if line.startswith("| reply |")]
    assert reply.count(" | ") == 2 and "\\|" in reply
    assert "| tokens in / out | 100 / 20 | 90 / 30 |" in lines
    assert "| cost | — | — |" in lines, "until prices are known"
    assert "| tool calls | record (ran) | record (recorded) |" in lines


def test_a_turn_that_differs_is_marked():
    assert "### Turn 2 (differs)" in markdown([report()])
    assert "### Turn 2 (differs)" not in markdown([report("same")])
