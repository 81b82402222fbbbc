"""``smarthole service``: install, remove and look at smarthole as a user service.

Linux gets a systemd **user** unit (``Type=notify``, watchdog, reload on SIGHUP); macOS a
launchd agent. The API key is never written into the unit: it goes into the home's
``.smarthole/service.env`` (0600), which the unit reads, and it is never printed. ``--dry-run``
prints the files and commands and changes nothing. What each manager's files look like is in
``units``; this module plans, checks, writes and runs (``cli.commands.operations`` declares the
commands and their flags).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DaemonError, ExitCode, LookupFailed, SmartholeError, UsageError
from ..fsutil import atomic_write
from ..home import Home
from .common import daemon_pid, one_line
from .units import (
    ENV_HEADER,
    SECRET_ENV,
    ServiceTarget,
    env_file_text,
    launchd_target,
    service_env,
    systemd_target,
)

RELOAD_WAIT_SECONDS = 10.0
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
INSTEAD = (
    "use --dry-run to see what would be written, or run `smarthole run` under your own supervisor"
)


@dataclass
class Plan:
    """What ``install`` writes and runs."""

    target: ServiceTarget
    env_file: Path
    secrets: dict[str, str] = field(default_factory=dict)

    @property
    def start(self) -> list[list[str]]:
        return self.target.start_commands


# -- choosing the manager ---------------------------------------------------------------------


def target_for(
    name: str | None, home: Home | None, *, platform: str | None = None, env: Mapping[str, str]
) -> ServiceTarget:
    """The unit file, label and commands for this platform (``home`` None: for removal)."""
    if name is not None and not NAME_PATTERN.fullmatch(name):
        raise UsageError(f"--name {name!r}: use letters, digits, '-' and '_' only")
    platform = platform or sys.platform
    if platform.startswith("linux"):
        return systemd_target(name, home, executable(), env)
    if platform == "darwin":
        return launchd_target(name, home, executable(), env)
    raise UsageError(f"smarthole service does not support {platform}; {INSTEAD}")


def executable() -> list[str]:
    """How the service starts this installation: its ``smarthole`` script, absolute."""
    script = Path(sys.executable).parent / "smarthole"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(Path(sys.executable).absolute()), "-m", "smarthole"]


def check_manager(target: ServiceTarget, env: Mapping[str, str]) -> None:
    """A one-line error if the service manager cannot be reached from here."""
    tool = target.manager
    if shutil.which(tool, path=env.get("PATH")) is None:
        raise UsageError(f"{tool} was not found: this system has no {target.kind}; {INSTEAD}")
    if tool == "systemctl" and not user_bus(env):
        raise UsageError(
            "no user session bus (a login without a systemd user session, e.g. su or a "
            "container): log in directly or run `loginctl enable-linger`; " + INSTEAD
        )


def user_bus(env: Mapping[str, str]) -> bool:
    if env.get("DBUS_SESSION_BUS_ADDRESS"):
        return True
    runtime = env.get("XDG_RUNTIME_DIR")
    return runtime is not None and Path(runtime, "bus").exists()


def run_command(command: list[str], env: Mapping[str, str], *, check: bool = True) -> str:
    try:
        done = subprocess.run(command, env=dict(env), capture_output=True, text=True, timeout=120)
    except OSError as exc:
        raise UsageError(f"cannot run {command[0]}: {exc.strerror or exc}; {INSTEAD}") from exc
    if check and done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(
            f"`{shlex.join(command)}` failed (exit {done.returncode})"
            + (f": {reason[0]}" if reason else "")
        )
    return done.stdout + done.stderr


# -- install ----------------------------------------------------------------------------------


def plan_install(home: Home, name: str | None, env: Mapping[str, str]) -> Plan:
    target = target_for(name, home, env=env)
    secrets = {key: env[key] for key in SECRET_ENV if env.get(key, "").strip()}
    return Plan(target=target, env_file=service_env(home), secrets=secrets)


def install(
    home: Home,
    *,
    name: str | None,
    dry_run: bool,
    force: bool,
    start: bool,
    env: Mapping[str, str],
) -> int:
    plan = plan_install(home, name, env)
    unit = plan.target.unit_path
    if dry_run:
        print(describe(plan, force=force, start=start))
        return ExitCode.OK
    if unit.exists() and not force:
        raise UsageError(f"{unit} already exists; use --force to replace it")
    if start:
        check_manager(plan.target, env)
    unit.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(unit, plan.target.unit_text.encode(), mode=0o644)
    print(f"Wrote {unit}")
    if plan.secrets:
        atomic_write(plan.env_file, env_file_text(plan.secrets).encode())  # 0600
        print(f"Wrote {plan.env_file} (mode 0600) with {', '.join(plan.secrets)}")
    elif not plan.env_file.exists():
        print(f"Note: ANTHROPIC_API_KEY is not set; put it in {plan.env_file} (KEY='value', 0600)")
    if not start:
        print("Not started. To start it:\n" + "\n".join(f"  {shlex.join(c)}" for c in plan.start))
        return ExitCode.OK
    for command in plan.start:
        run_command(command, env)
        print(f"Ran {shlex.join(command)}")
    print(plan.target.next_steps)
    return ExitCode.OK


def describe(plan: Plan, *, force: bool, start: bool) -> str:
    """The ``--dry-run`` text: every file with its content (secrets by name), every command."""
    unit = plan.target.unit_path
    lines = [f"Would write {unit}:", ""]
    lines += [f"    {line}".rstrip() for line in plan.target.unit_text.splitlines()]
    lines.append("")
    if unit.exists() and not force:
        lines.append(f"Note: {unit} already exists; without --force, install stops here.")
    if plan.secrets:
        names = ", ".join(plan.secrets)
        lines.append(f"Would write {plan.env_file} (mode 0600) with {names} (values not shown)")
    else:
        lines.append(f"ANTHROPIC_API_KEY is not set: {plan.env_file} would not be written")
    if not start:
        lines.append("Would run nothing (--no-start)")
    else:
        lines.append("Would run:")
        lines += [f"    {shlex.join(command)}" for command in plan.start]
    return "\n".join(lines)


# -- uninstall and status ---------------------------------------------------------------------


def installed(name: str | None, env: Mapping[str, str]) -> ServiceTarget:
    target = target_for(name, None, env=env)
    if not target.unit_path.exists():
        raise LookupFailed(f"no smarthole service is installed at {target.unit_path}")
    return target


def uninstall(name: str | None, env: Mapping[str, str]) -> int:
    target = installed(name, env)
    check_manager(target, env)
    env_file = target.env_file()  # None when the unit is not as install wrote it
    if env_file is None:
        print(
            f"Note: {target.unit_path} is not as `smarthole service install` writes it; "
            "any service.env it reads is left in place"
        )
    for command in target.stop_commands:
        run_command(command, env, check=False)  # already stopped or disabled is fine
        print(f"Ran {shlex.join(command)}")
    target.unit_path.unlink()
    print(f"Removed {target.unit_path}")
    if env_file is not None and ours(env_file):
        env_file.unlink()
        print(f"Removed {env_file}")
    for command in target.after_removal:
        run_command(command, env, check=False)
    return ExitCode.OK


def ours(env_file: Path) -> bool:
    """Whether ``install`` wrote this service.env (a hand-written one is left alone)."""
    try:
        return env_file.read_text(encoding="utf-8", errors="replace").startswith(ENV_HEADER)
    except OSError:
        return False


def manager_status(name: str | None, env: Mapping[str, str]) -> Path | None:
    """Print the service manager's view of the service; returns the home it runs, if known."""
    target = installed(name, env)
    check_manager(target, env)
    print(run_command(target.status_command, env, check=False).rstrip())
    print()
    return target.home()


# -- reload -----------------------------------------------------------------------------------


def reload(home: Home) -> int:
    """Ask the running daemon to re-read config.toml (SIGHUP) and say how it went: one line
    per change this reload read but only a restart applies (what it applied live is logged)."""
    from ..daemon.signals import send_reload
    from ..daemon.state import read_state

    pid = daemon_pid(home)
    if not pid or pid < 0:
        raise DaemonError(f"no daemon is running for {home.root}; nothing to reload")
    before = read_state(home, pid) or {}
    send_reload(pid)
    deadline = time.monotonic() + RELOAD_WAIT_SECONDS
    while time.monotonic() < deadline:
        state = read_state(home, pid) or {}
        if state.get("reloaded_at") != before.get("reloaded_at"):
            print(f"Reloaded {home.config_file} (pid {pid}).")
            known = set(before.get("restart_needed") or [])
            for name in state.get("restart_needed") or []:
                if name not in known:
                    print(f"needs a restart: {one_line(name)}")
            return ExitCode.OK
        error = state.get("last_error") or ""
        if state.get("last_error_at") != before.get("last_error_at") and "reload" in error:
            raise SmartholeError(error)
        time.sleep(0.05)
    print(f"Asked the daemon (pid {pid}) to reload; it has not confirmed yet (see its log).")
    return ExitCode.OK
