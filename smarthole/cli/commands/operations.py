"""Operating a home: ``status``, ``reload``, ``service`` and ``retry``.

``status`` reads the store and the daemon's own state file; ``retry`` writes the ledger and
moves files; ``reload`` signals the daemon; ``service`` asks systemd or launchd (the work of
each is in ``cli.admin``, ``cli.health`` and ``cli.service``).
"""

from __future__ import annotations

import argparse
import os

from ...errors import ExitCode, StoreError, UsageError
from ..common import daemon_pid, home_of, print_json, rooted
from ..parser import Commands, bounded, command, option


def register(commands: Commands) -> None:
    commands.add(status)
    commands.add(reload)
    service = commands.command(
        "service", None, "run smarthole as a systemd or launchd user service"
    )
    actions = Commands.under(service, dest="service_command", required=True)
    for declared in (install, uninstall, service_status):
        actions.add(declared)
    commands.add(retry)


@command("status", "show the daemon, queue, deferred and failed work")
@option("--json", action="store_true", help="one JSON object")
@option(
    "--check",
    action="store_true",
    help="exit 1 with one line per problem (dead letters, stranded claims, an old queue, "
    "no daemon)",
)
@option(
    "--max-queue-age",
    type=bounded(float, 0),
    metavar="SECONDS",
    help="with --check: a problem when a message has waited longer",
)
def status(args: argparse.Namespace) -> int:
    from ..admin import status_report
    from ..statustext import status_text

    if args.check or args.max_queue_age is not None:
        return _check(args)
    with rooted(args) as root:
        report = status_report(root)
    if args.json:
        print_json(report)
    else:
        print(status_text(report))
    return ExitCode.OK if report["running"] else ExitCode.NOT_RUNNING


def _check(args: argparse.Namespace) -> int:
    """``status --check``: one line per problem. A daemon writing into deleted store files is
    told first, from ``/proc`` alone: the store may not even open beside it."""
    from ..admin import status_report
    from ..health import deleted_files_warning, deleted_store_files, problems

    home = home_of(args)
    pid = daemon_pid(home)
    gone = deleted_files_warning(
        {"pid": pid, "store_files_deleted": deleted_store_files(home, pid)}
    )
    if gone:
        print(gone)
    try:
        with rooted(args) as root:
            report = status_report(root)
    except StoreError:
        if gone:
            return ExitCode.FAILED
        raise
    found = [line for line in problems(report, args.max_queue_age) if line != gone]
    for line in found:
        print(line)
    return ExitCode.FAILED if found or gone else ExitCode.OK


@command("reload", "make the running daemon re-read config.toml (SIGHUP)")
def reload(args: argparse.Namespace) -> int:
    from ..service import reload as reload_daemon

    return reload_daemon(home_of(args))


# -- service ACTION: each takes --name, and no -v --------------------------------------------

SERVICE_NAME = option(
    "--name",
    metavar="NAME",
    help="run several homes side by side: the unit is smarthole-NAME",
)


@command("install", "install and start smarthole as a user service", verbose=False)
@SERVICE_NAME
@option("--dry-run", action="store_true", help="print the files and commands; change nothing")
@option("--force", action="store_true", help="replace an installed unit of that name")
@option("--no-start", action="store_true", help="write the files; run nothing")
def install(args: argparse.Namespace) -> int:
    from ..service import install as install_service

    return install_service(
        home_of(args),
        name=args.name,
        dry_run=args.dry_run,
        force=args.force,
        start=not args.no_start,
        env=os.environ,
    )


@command("uninstall", "stop, disable and remove the service", verbose=False)
@SERVICE_NAME
def uninstall(args: argparse.Namespace) -> int:
    from ..service import uninstall as uninstall_service

    return uninstall_service(args.name, os.environ)


@command("status", "the service manager's view, then `smarthole status`", verbose=False)
@SERVICE_NAME
def service_status(args: argparse.Namespace) -> int:
    from ..service import manager_status

    home = manager_status(args.name, os.environ)
    if home is None:
        return ExitCode.NOT_RUNNING
    return status(argparse.Namespace(home=str(home), json=False, check=False, max_queue_age=None))


@command("retry", "make deferred messages due and redrive dead ones")
@option("ids", nargs="*", metavar="ID", help="message ids or unique prefixes")
@option("--all", action="store_true", help="every deferred and dead message")
def retry(args: argparse.Namespace) -> int:
    from ..admin import retry as retry_messages

    if not args.ids and not args.all:
        raise UsageError("name message ids to retry, or use --all")
    with rooted(args) as root:
        done = retry_messages(root, None if args.all else args.ids)
    if not done:
        print("Nothing to retry.")
    for message_id, what in done:
        print(f"{message_id}: {what}")
    return ExitCode.OK
