"""The files a service manager reads: a systemd user unit, a launchd agent, ``service.env``.

Pure text: nothing here changes the system, so ``--dry-run`` prints exactly what ``install``
would write. A value no unit can hold (a control character would start a new line, and a
new line a new directive) is refused, never escaped into something else; the rest is quoted
by systemd.syntax(7). Reading an installed unit back trusts nothing in it but what
``install`` itself would have written for the home it names.
"""

from __future__ import annotations

import os
import plistlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers.expat import ExpatError

from ..errors import UsageError
from ..home import Home

SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
ENV_HEADER = "# Written by `smarthole service install`"
UNIT_MARKER = ENV_HEADER + "; `smarthole service uninstall` removes it."
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1
# systemd never expands $ in ExecStart='s program path but does in argv[0], the same word:
# no spelling of a '$' is right for both. Quotes and backslashes it refuses there outright.
NOT_IN_PROGRAM = "$\"'\\"
LOADER = 'if [ -f "$0" ]; then set -a; . "$0"; set +a; fi; exec "$@"'
WATCHDOG_SECONDS = 60  # the daemon pets every 30 s from its main loop
LAUNCHD_PREFIX = "com.github.smarthole.smarthole"
DOCS = "https://github.com/smarthole/smarthole#running-as-a-service"


@dataclass(frozen=True)
class ServiceTarget:
    """One service: where its file lives, what it says, and the manager's commands."""

    kind: str
    manager: str
    unit_path: Path
    unit_text: str = ""
    start_commands: list[list[str]] = field(default_factory=list)
    stop_commands: list[list[str]] = field(default_factory=list)
    after_removal: list[list[str]] = field(default_factory=list)
    status_command: list[str] = field(default_factory=list)
    next_steps: str = ""

    def home(self) -> Path | None:
        """The home the installed service runs, if its file is one ``install`` wrote."""
        try:
            text = self.unit_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return systemd_home(text) if self.manager == "systemctl" else launchd_home(text)

    def env_file(self) -> Path | None:
        """The ``service.env`` of that home: derived from the home, never read from the file."""
        home = self.home()
        return service_env(Home(home)) if home is not None else None


def service_env(home: Home) -> Path:
    return home.state / "service.env"


def check_holdable(home: Home, command: list[str]) -> None:
    """Refuse what no unit or plist can hold, before anything is written or printed."""
    holdable("home path", str(home.root))
    for index, word in enumerate(command):
        holdable("executable path" if index == 0 else "command word", word)


def holdable(what: str, value: str) -> None:
    found = CONTROL.search(value)
    if found:
        char = repr(found.group())[1:-1]  # shown escaped: the message is one line
        raise UsageError(
            f"the {what} {value!r} contains a control character ({char}); "
            "a service unit cannot hold it"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"the {what} {value!r} is not valid UTF-8; a service unit cannot hold it"
        ) from None


# -- systemd ----------------------------------------------------------------------------------


def systemd_quote(argument: str) -> str:
    """One ``ExecStart=`` word: ``%%`` and ``$$`` for ``%`` and ``$``; in double quotes, with
    ``\\`` and ``\\"`` inside, when it has a space, a quote, a backslash or a ``;``."""
    argument = argument.replace("%", "%%").replace("$", "$$")
    if re.search(r"[\s\"'\\;]", argument) or not argument:
        argument = '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return argument


def systemd_command(words: list[str]) -> str:
    return " ".join(systemd_quote(word) for word in words)


def systemd_text(value: str) -> str:
    """A value systemd takes as it stands but for ``%`` specifiers: ``Description=`` and
    ``EnvironmentFile=`` have no quoting or escapes, and ours never start or end in a space
    (which systemd would strip) or end in a backslash (which would continue the line)."""
    return value.replace("%", "%%")


def check_systemd(home: Home, program: str) -> None:
    """Refuse what systemd would read as something else, or quietly ignore."""
    for char in NOT_IN_PROGRAM:
        if char in program:
            raise UsageError(
                f"the executable path {program!r} contains {char!r}, which systemd cannot "
                "start a program from; install smarthole at a path without it"
            )
    if ".." in home.root.parts:  # EnvironmentFile= skips a path that is not normalized
        raise UsageError(f"the home path {str(home.root)!r} has a '..' part; give it without")


def systemd_target(
    name: str | None, home: Home | None, command: list[str], env: Mapping[str, str]
) -> ServiceTarget:
    unit = f"smarthole-{name}.service" if name else "smarthole.service"
    config_home = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~"), ".config"))
    path = config_home.expanduser() / "systemd" / "user" / unit
    journal = f"journalctl --user -u {unit} -f"
    return ServiceTarget(
        kind="systemd user session",
        manager="systemctl",
        unit_path=path,
        unit_text=systemd_unit(home, command) if home is not None else "",
        start_commands=[
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", unit],
        ],
        stop_commands=[["systemctl", "--user", "disable", "--now", unit]],
        after_removal=[["systemctl", "--user", "daemon-reload"]],
        status_command=["systemctl", "--user", "status", "--no-pager", unit],
        next_steps=(
            f"smarthole runs as {unit}: `systemctl --user status {unit}`, logs: `{journal}`.\n"
            "To keep it running while you are logged out: `loginctl enable-linger`."
        ),
    )


def systemd_unit(home: Home, command: list[str]) -> str:
    from ..config import load_config

    check_holdable(home, command)
    check_systemd(home, command[0])
    grace = load_config(home).daemon.shutdown_grace_seconds
    start = systemd_command([*command, "run", "--home", str(home.root)])
    return f"""\
{UNIT_MARKER}
[Unit]
Description=smarthole: answers the messages dropped into {systemd_text(str(home.inbox))}
Documentation={DOCS}

[Service]
Type=notify
NotifyAccess=main
ExecStart={start}
ExecReload=/bin/kill -HUP $MAINPID
EnvironmentFile=-{systemd_text(str(service_env(home)))}
Environment=PYTHONUNBUFFERED=1
Restart=on-failure
RestartSec=5
# Exit status 2 is a bad config.toml or a missing API key: restarting will not fix it.
RestartPreventExitStatus=2
WatchdogSec={WATCHDOG_SECONDS}
TimeoutStopSec={int(grace) + 20}

[Install]
WantedBy=default.target
"""


def systemd_home(text: str) -> Path | None:
    """The home of a unit ``install`` wrote; None for any other unit.

    The home is taken from ``EnvironmentFile=``, then the unit must carry the marker and its
    ``EnvironmentFile=`` and ``ExecStart=`` must be, to the character, what ``install``
    writes for that home: a unit naming any other file gives None, so that file is safe.
    """
    lines = text.split("\n")
    env_lines = [line for line in lines if line.startswith("EnvironmentFile=")]
    exec_lines = [line for line in lines if line.startswith("ExecStart=")]
    if lines[0] != UNIT_MARKER or len(env_lines) != 1 or len(exec_lines) != 1:
        return None
    named = Path(env_lines[0].removeprefix("EnvironmentFile=-").replace("%%", "%"))
    if not named.is_absolute():
        return None
    home = Home(named.parent.parent)
    expected_env = f"EnvironmentFile=-{systemd_text(str(service_env(home)))}"
    expected_tail = " " + systemd_command(["run", "--home", str(home.root)])
    if env_lines[0] != expected_env or not exec_lines[0].endswith(expected_tail):
        return None
    return home.root


# -- launchd ----------------------------------------------------------------------------------


def launchd_target(
    name: str | None, home: Home | None, command: list[str], env: Mapping[str, str]
) -> ServiceTarget:
    label = f"{LAUNCHD_PREFIX}.{name}" if name else LAUNCHD_PREFIX
    path = Path(env.get("HOME", "~")).expanduser() / "Library" / "LaunchAgents" / f"{label}.plist"
    domain = f"gui/{os.getuid()}"
    return ServiceTarget(
        kind="launchd",
        manager="launchctl",
        unit_path=path,
        unit_text=launchd_plist(label, home, command) if home is not None else "",
        start_commands=[["launchctl", "bootstrap", domain, str(path)]],
        stop_commands=[["launchctl", "bootout", f"{domain}/{label}"]],
        status_command=["launchctl", "print", f"{domain}/{label}"],
        next_steps=f"smarthole runs as {label}: `launchctl print {domain}/{label}`.",
    )


def launchd_plist(label: str, home: Home, command: list[str]) -> str:
    """launchd has no environment file: a shell reads service.env, then becomes smarthole."""
    check_holdable(home, command)  # XML 1.0 cannot hold most control characters either
    log = str(home.state / "service.log")
    data = {
        "Label": label,
        "ProgramArguments": [
            "/bin/sh",
            "-c",
            LOADER,
            str(service_env(home)),
            *command,
            "run",
            "--home",
            str(home.root),
        ],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": log,
        "StandardErrorPath": log,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
    }
    return plistlib.dumps(data).decode()


def launchd_home(text: str) -> Path | None:
    """The home of an agent ``install`` wrote: its loader, and the service.env of its home."""
    try:
        arguments = plistlib.loads(text.encode())["ProgramArguments"]
    except (ValueError, KeyError, TypeError, ExpatError):
        return None
    if not (
        isinstance(arguments, list)
        and len(arguments) >= 8
        and arguments[:3] == ["/bin/sh", "-c", LOADER]
        and arguments[-3:-1] == ["run", "--home"]
        and isinstance(arguments[-1], str)
    ):
        return None
    home = Home(Path(arguments[-1]))
    if not home.root.is_absolute() or str(home.root) != arguments[-1]:
        return None
    if arguments[3] != str(service_env(home)):
        return None
    return home.root


# -- service.env ------------------------------------------------------------------------------


def env_file_text(secrets: Mapping[str, str]) -> str:
    """``KEY='value'`` lines that both systemd and a POSIX shell read the same way."""
    lines = [ENV_HEADER + "; read by the service manager. Keep it private (0600)."]
    for key, value in secrets.items():
        if any(c in value for c in "'\n\r\\"):
            raise UsageError(f"${key} contains a quote, backslash or newline; it cannot be stored")
        lines.append(f"{key}='{value}'")
    return "\n".join(lines) + "\n"
