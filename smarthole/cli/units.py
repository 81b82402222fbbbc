"""The files a service manager reads: a systemd user unit, a launchd agent, ``service.env``.

Pure text: nothing here touches the system, so ``--dry-run`` prints exactly what ``install``
would write.
"""

from __future__ import annotations

import os
import plistlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..home import Home

SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
ENV_HEADER = "# Written by `smarthole service install`"
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
        """The home the installed unit runs, read back from its file."""
        env_file = self.env_file()
        return env_file.parent.parent if env_file is not None else None

    def env_file(self) -> Path | None:
        try:
            text = self.unit_path.read_text(encoding="utf-8")
        except OSError:
            return None
        if self.manager == "systemctl":
            found = re.search(r"^EnvironmentFile=-?(.+)$", text, re.MULTILINE)
            return Path(found.group(1).replace("%%", "%")) if found else None
        try:
            arguments = plistlib.loads(text.encode())["ProgramArguments"]
        except (ValueError, KeyError, TypeError):
            return None
        return Path(arguments[3]) if len(arguments) > 3 else None


# -- systemd ----------------------------------------------------------------------------------


def systemd_quote(argument: str) -> str:
    """One ``ExecStart=`` word: ``%`` and ``$`` escaped, quoted when it has spaces or quotes."""
    argument = argument.replace("%", "%%").replace("$", "$$")
    if re.search(r"[\s\"'\\;]", argument) or not argument:
        argument = '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return argument


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

    grace = load_config(home).daemon.shutdown_grace_seconds
    start = " ".join(systemd_quote(word) for word in [*command, "run", "--home", str(home.root)])
    env_file = str(home.state / "service.env").replace("%", "%%")
    return f"""\
[Unit]
Description=smarthole: answers the messages dropped into {home.inbox}
Documentation={DOCS}

[Service]
Type=notify
NotifyAccess=main
ExecStart={start}
ExecReload=/bin/kill -HUP $MAINPID
EnvironmentFile=-{env_file}
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
    env_file = str(home.state / "service.env")
    loader = 'if [ -f "$0" ]; then set -a; . "$0"; set +a; fi; exec "$@"'
    log = str(home.state / "service.log")
    data = {
        "Label": label,
        "ProgramArguments": [
            "/bin/sh",
            "-c",
            loader,
            env_file,
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


# -- service.env ------------------------------------------------------------------------------


def env_file_text(secrets: Mapping[str, str]) -> str:
    """``KEY='value'`` lines that both systemd and a POSIX shell read the same way."""
    lines = [ENV_HEADER + "; read by the service manager. Keep it private (0600)."]
    for key, value in secrets.items():
        if any(c in value for c in "'\n\r\\"):
            raise UsageError(f"${key} contains a quote, backslash or newline; it cannot be stored")
        lines.append(f"{key}='{value}'")
    return "\n".join(lines) + "\n"
