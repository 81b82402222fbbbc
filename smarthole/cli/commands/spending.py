"""Money: ``usage``, what the model cost, in tokens and dollars (see docs/budget.md)."""

from __future__ import annotations

import argparse

from ..common import rooted
from ..parser import Commands, command, one_of, option

BY_CHOICES = ("conversation", "channel", "model", "schedule")


def register(commands: Commands) -> None:
    commands.add(usage)


@command("usage", "what the model cost: tokens and dollars, by day, month or all time")
@one_of(
    option(
        "--day",
        nargs="?",
        const="today",
        metavar="DATE",
        help="one UTC day (YYYY-MM-DD; default today)",
    ),
    option(
        "--month",
        nargs="?",
        const="this",
        metavar="MONTH",
        help="one month (YYYY-MM; default this)",
    ),
)
@option("--by", choices=BY_CHOICES, help="one line per conversation, channel, model or schedule")
@option("--prices", action="store_true", help="print the price table in use instead")
@option("--json", action="store_true", help="print JSON")
def usage(args: argparse.Namespace) -> int:
    from ..spending import period_of, print_prices, print_usage

    with rooted(args) as root:
        if args.prices:
            return print_prices(root, as_json=args.json)
        period = period_of(args.day, args.month, root.store.clock())
        return print_usage(root, period, args.by, as_json=args.json)
