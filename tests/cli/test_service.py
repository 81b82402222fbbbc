"""`smarthole service`: the systemd unit under a temporary XDG_CONFIG_HOME, systemctl stubbed.

The only stub is a fake ``systemctl`` on PATH that records its arguments: CI has no systemd
user session. Everything else (the files, their modes, the CLI) is real.
"""

from __future__ import annotations

import os
import plistlib
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.cli.units import env_file_text, launchd_target, systemd_quote
from smarthole.errors import UsageError
from smarthole.home import Home

SECRET = "sk-ant-secret-do-not-print"


@pytest.fixture
def service_env(tmp_path, monkeypatch, home):
    """A user session: XDG_CONFIG_HOME in tmp, a session bus, and a recording systemctl."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "systemctl.calls"
    fake = bin_dir / "systemctl"
    fake.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n'
        'if [ "$2" = status ]; then echo "smarthole.service - fake status"; fi\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    return {"calls": calls, "unit": tmp_path / "config" / "systemd" / "user", "home": home}


def recorded(service_env) -> list[str]:
    calls = service_env["calls"]
    return calls.read_text().splitlines() if calls.exists() else []


def install(home: Path, *extra: str) -> int:
    return main(["service", "install", "--home", str(home), *extra])


def test_install_writes_the_unit_and_the_private_env_file_then_starts(service_env, capsys):
    home = service_env["home"]
    assert install(home) == 0
    unit = (service_env["unit"] / "smarthole.service").read_text()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "Restart=on-failure",
        "WatchdogSec=60",
        f"EnvironmentFile=-{home}/.smarthole/service.env",
        "ExecReload=/bin/kill -HUP $MAINPID",
    ):
        assert line in unit.splitlines(), line
    exec_start = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    program = exec_start.removeprefix("ExecStart=").split()[0]
    assert Path(program).is_absolute() and os.access(program, os.X_OK)
    assert exec_start.endswith(f" run --home {home}")
    assert SECRET not in unit
    env_file = home / ".smarthole" / "service.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert f"ANTHROPIC_API_KEY='{SECRET}'" in env_file.read_text()
    assert recorded(service_env) == [
        "--user daemon-reload",
        "--user enable --now smarthole.service",
    ]
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err


def test_dry_run_prints_everything_and_changes_nothing(service_env, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/private")
    home = service_env["home"]
    assert install(home, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "Would write" in out and "Type=notify" in out
    assert "systemctl --user enable --now smarthole.service" in out
    assert "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (values not shown)" in out
    assert SECRET not in out and "127.0.0.1:9" not in out
    assert not service_env["unit"].exists()
    assert not (home / ".smarthole" / "service.env").exists()
    assert recorded(service_env) == []


def test_dry_run_needs_no_service_manager(service_env, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert install(service_env["home"], "--dry-run") == 0


def test_installing_over_a_unit_asks_for_force_which_replaces_it(service_env, capsys):
    home = service_env["home"]
    assert install(home) == 0
    capsys.readouterr()
    assert install(home) == 2
    err = capsys.readouterr().err
    assert "already exists; use --force" in err and err.count("\n") == 1
    assert install(home, "--force") == 0


def test_a_named_service_and_no_start(service_env):
    assert install(service_env["home"], "--name", "work", "--no-start") == 0
    assert (service_env["unit"] / "smarthole-work.service").exists()
    assert recorded(service_env) == []


def test_a_bad_name_is_refused(service_env, capsys):
    assert install(service_env["home"], "--name", "../x") == 2
    assert "--name" in capsys.readouterr().err


def test_without_systemctl_the_error_says_what_to_do_instead(
    service_env, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert install(service_env["home"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smarthole: systemctl was not found") and err.count("\n") == 1
    assert "--dry-run" in err and "smarthole run" in err
    assert not service_env["unit"].exists()


def test_without_a_user_bus_the_error_says_what_to_do_instead(
    service_env, monkeypatch, tmp_path, capsys
):
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "no-runtime"))
    assert install(service_env["home"]) == 2
    err = capsys.readouterr().err
    assert "no user session bus" in err and "--dry-run" in err and err.count("\n") == 1


def test_a_failing_systemctl_is_one_line(service_env, capsys):
    (service_env["calls"].parent / "bin" / "systemctl").write_text(
        "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n"
    )
    assert install(service_env["home"]) == 2
    err = capsys.readouterr().err
    assert "daemon-reload` failed (exit 1): Failed to connect to bus" in err
    assert err.count("\n") == 1


def test_uninstall_stops_disables_and_removes_what_install_wrote(service_env):
    home = service_env["home"]
    assert install(home) == 0
    assert main(["service", "uninstall"]) == 0
    assert not (service_env["unit"] / "smarthole.service").exists()
    assert not (home / ".smarthole" / "service.env").exists()
    assert recorded(service_env)[2:] == [
        "--user disable --now smarthole.service",
        "--user daemon-reload",
    ]
    assert main(["service", "uninstall"]) == 1  # nothing left to remove


def test_uninstall_leaves_a_hand_written_env_file(service_env, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    home = service_env["home"]
    env_file = home / ".smarthole" / "service.env"
    env_file.write_text("ANTHROPIC_API_KEY=mine\n")
    assert install(home) == 0
    assert env_file.read_text() == "ANTHROPIC_API_KEY=mine\n"
    assert main(["service", "uninstall"]) == 0
    assert env_file.exists()


def test_service_status_shows_the_managers_view_then_smarthole_status(service_env, capsys):
    assert install(service_env["home"]) == 0
    capsys.readouterr()
    assert main(["service", "status"]) == 3  # the fake manager starts nothing
    out = capsys.readouterr().out
    assert "fake status" in out and "daemon: not running" in out


# -- what a unit can hold -----------------------------------------------------------------------

CONTROLS = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9b"]
IN_A_FOLDER_NAME = [char for char in CONTROLS if char != "\x00"]  # no file name holds NUL
C_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "s": " "}


def systemd_words(value: str) -> list[str]:
    """An ``ExecStart=`` value as systemd.syntax(7) reads it: words split at spaces outside
    quotes, C escapes undone, then each word's ``%%`` and ``$$`` made single."""
    words: list[str] = []
    word, quote, chars = None, "", iter(value)
    for char in chars:
        if char == "\\":
            word = (word or "") + C_ESCAPES[next(chars)]
        elif quote:
            quote, word = ("", word) if char == quote else (quote, word + char)
        elif char in "\"'":
            quote, word = char, word or ""
        elif char == " ":
            words += [] if word is None else [word]
            word = None
        else:
            word = (word or "") + char
    assert not quote, f"an unclosed quote in {value!r}"
    return [literal(w, "%$") for w in [*words, *([] if word is None else [word])]]


def literal(text: str, doubled: str) -> str:
    """``%%`` as ``%`` (and ``$$`` as ``$``); a lone one would be a specifier or a variable."""
    out, chars = "", iter(text)
    for char in chars:
        if char in doubled:
            assert next(chars, None) == char, f"a lone {char} in {text!r}"
        out += char
    return out


def settings(unit: str) -> dict[str, str]:
    """Each ``Key=value`` line of a unit (every key once in ours), as systemd splits it."""
    pairs = [line.split("=", 1) for line in unit.split("\n") if "=" in line]
    assert len({key for key, _ in pairs}) == len(pairs), unit
    return {key: value for key, value in pairs}


def home_at(root: Path) -> Path:
    Home(root).ensure()
    return root


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.endswith("\n") and err[:-1].isprintable(), repr(err)
    return err


@pytest.mark.parametrize("control", IN_A_FOLDER_NAME)
@pytest.mark.parametrize("extra", [(), ("--dry-run",)])
def test_a_home_path_with_a_control_character_is_refused_before_anything_is_written(
    service_env, tmp_path, capsys, control, extra
):
    home = home_at(tmp_path / f"a{control}b")
    assert install(home, *extra) == 2
    out = capsys.readouterr()
    escaped = repr(control)[1:-1]
    assert one_line(out.err) == (
        f"smarthole: the home path {str(home)!r} contains a control character ({escaped}); "
        "a service unit cannot hold it\n"
    )
    assert out.out == ""
    assert not service_env["unit"].exists() and not (home / ".smarthole/service.env").exists()
    assert recorded(service_env) == []


@pytest.mark.parametrize("control", CONTROLS)
def test_a_python_executable_with_a_control_character_is_refused(
    service_env, tmp_path, monkeypatch, capsys, control
):
    python = tmp_path / f"venv{control}" / "bin" / "python3"
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(service_env["home"], "--dry-run") == 2
    err = one_line(capsys.readouterr().err)
    assert f"the executable path {str(python)!r} contains a control character" in err
    assert not service_env["unit"].exists()


@pytest.mark.parametrize("char", ["$", '"', "'", "\\"])
def test_an_executable_path_systemd_cannot_start_a_program_from_is_refused(
    service_env, tmp_path, monkeypatch, capsys, char
):
    python = tmp_path / f"venv{char}x" / "bin" / "python3"
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(service_env["home"], "--no-start") == 2
    err = one_line(capsys.readouterr().err)
    assert f"the executable path {str(python)!r} contains {char!r}" in err
    assert not service_env["unit"].exists()


UNIT_KEYS = [
    *("Description", "Documentation", "Type", "NotifyAccess", "ExecStart", "ExecReload"),
    *("EnvironmentFile", "Environment", "Restart", "RestartSec", "RestartPreventExitStatus"),
    *("WatchdogSec", "TimeoutStopSec", "WantedBy"),
]


def test_a_home_path_that_is_not_utf8_is_refused(service_env, tmp_path, capsys):
    home = home_at(tmp_path / os.fsdecode(b"caf\xe9"))
    assert install(home) == 2
    assert "is not valid UTF-8" in one_line(capsys.readouterr().err)
    assert not service_env["unit"].exists()


def test_a_home_path_with_a_dot_dot_part_is_refused(service_env, capsys):
    home = service_env["home"]
    assert install(home / ".." / home.name, "--dry-run") == 2
    assert "has a '..' part" in one_line(capsys.readouterr().err)


ODD_NAMES = [
    "a b",
    'say "hi"',
    "it's",
    "100%",
    "%h and %%",
    "$HOME",
    "${HOME}x$$",
    "back\\slash",
    "ends in a backslash\\",
    ";",
    "# not a comment",
    "every \" ' % $ \\ ; # at once",
]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_home_and_executable_paths_read_back_from_the_unit_as_written(
    service_env, tmp_path, monkeypatch, name
):
    home = home_at(tmp_path / name)
    python = tmp_path / "my venv %i" / "bin" / "python3"  # spaces and % are fine in a program
    monkeypatch.setattr(sys, "executable", str(python))
    assert install(home, "--no-start") == 0
    unit = (service_env["unit"] / "smarthole.service").read_text()
    values = settings(unit)
    assert list(values) == UNIT_KEYS  # nothing was injected
    assert systemd_words(values["ExecStart"]) == [
        str(python),
        "-m",
        "smarthole",
        "run",
        "--home",
        str(home),
    ]
    assert literal(values["EnvironmentFile"], "%") == f"-{home}/.smarthole/service.env"
    assert literal(values["Description"], "%") == (
        f"smarthole: answers the messages dropped into {home}/inbox"
    )
    assert main(["service", "uninstall"]) == 0  # read back for removal, too
    assert not (service_env["unit"] / "smarthole.service").exists()
    assert not (home / ".smarthole" / "service.env").exists()


# -- reading an installed unit back ----------------------------------------------------------


@pytest.mark.parametrize("victim", ["important", "other-home/.smarthole/service.env"])
def test_uninstall_leaves_the_file_a_tampered_unit_names(service_env, tmp_path, victim, capsys):
    home = service_env["home"]
    assert install(home) == 0
    victim_file = tmp_path / victim
    victim_file.parent.mkdir(parents=True, exist_ok=True)
    victim_file.write_text(env_file_text({"ANTHROPIC_API_KEY": "theirs"}))  # even one like ours
    unit = service_env["unit"] / "smarthole.service"
    unit.write_text(
        "\n".join(
            f"EnvironmentFile=-{victim_file}" if line.startswith("EnvironmentFile=") else line
            for line in unit.read_text().split("\n")
        )
    )
    capsys.readouterr()
    assert main(["service", "uninstall"]) == 0
    assert victim_file.exists() and not unit.exists()
    assert "is not as `smarthole service install` writes it" in capsys.readouterr().out


def test_uninstall_removes_no_env_file_for_a_unit_without_the_marker(service_env):
    home = service_env["home"]
    assert install(home) == 0
    unit = service_env["unit"] / "smarthole.service"
    unit.write_text(unit.read_text().split("\n", 1)[1])  # the same unit, written by hand
    assert main(["service", "uninstall"]) == 0
    assert (home / ".smarthole" / "service.env").exists() and not unit.exists()


@pytest.fixture
def agent(tmp_path):
    """A launchd agent as install writes it, for a home under tmp_path."""
    home = Home(tmp_path / "home")
    home.ensure()
    target = launchd_target(None, home, ["/opt/bin/smarthole"], {"HOME": str(tmp_path)})
    target.unit_path.parent.mkdir(parents=True)
    target.unit_path.write_text(target.unit_text)
    return target, home


@pytest.mark.parametrize(
    ("index", "value"),
    [(3, "/elsewhere/important"), (2, 'exec "$@"'), (-1, "relative/home")],
    ids=["env-file", "loader", "relative-home"],
)
def test_a_tampered_launchd_agent_names_no_env_file(agent, index, value):
    target, home = agent
    assert target.home() == home.root and target.env_file() == home.state / "service.env"
    data = plistlib.loads(target.unit_text.encode())
    data["ProgramArguments"][index] = value
    target.unit_path.write_bytes(plistlib.dumps(data))
    assert target.home() is None and target.env_file() is None


def test_a_broken_launchd_agent_names_no_env_file(agent):
    target, _ = agent
    target.unit_path.write_text('<?xml version="1.0"?><plist><dict>')
    assert target.home() is None


@pytest.mark.parametrize("control", CONTROLS)
def test_the_launchd_agent_refuses_a_home_with_a_control_character(tmp_path, control):
    home = Home(tmp_path / f"a{control}b")
    with pytest.raises(UsageError, match=r"the home path .* contains a control character"):
        launchd_target(None, home, ["/opt/bin/smarthole"], {"HOME": str(tmp_path)})


def test_odd_paths_are_quoted_for_systemd():
    assert systemd_quote("/home/a b/SmartHole") == '"/home/a b/SmartHole"'
    assert systemd_quote("/x/100%") == "/x/100%%"
    assert systemd_quote("/plain/path") == "/plain/path"


def test_the_launchd_agent_keeps_the_key_out_of_the_plist(tmp_path):
    home = Home(tmp_path / "home")
    home.ensure()
    target = launchd_target("work", home, ["/opt/bin/smarthole"], {"HOME": str(tmp_path)})
    assert target.unit_path == (
        tmp_path / "Library/LaunchAgents/com.github.smarthole.smarthole.work.plist"
    )
    plist = plistlib.loads(target.unit_text.encode())
    assert plist["Label"] == "com.github.smarthole.smarthole.work"
    assert plist["ProgramArguments"][3] == str(home.state / "service.env")
    assert plist["ProgramArguments"][-4:] == ["/opt/bin/smarthole", "run", "--home", str(home.root)]
    assert "ANTHROPIC_API_KEY" not in target.unit_text
    assert target.start_commands[0][:2] == ["launchctl", "bootstrap"]


def test_the_launchd_loader_reads_service_env_with_a_real_shell(tmp_path):
    home = Home(tmp_path / "home")
    home.ensure()
    (home.state / "service.env").write_text(env_file_text({"ANTHROPIC_API_KEY": SECRET}))
    command = ["/bin/sh", "-c", 'printf %s "$ANTHROPIC_API_KEY"', "sh"]
    target = launchd_target(None, home, command, {"HOME": str(tmp_path)})
    arguments = plistlib.loads(target.unit_text.encode())["ProgramArguments"]
    done = subprocess.run(arguments, capture_output=True, text=True, env={}, timeout=10)
    assert done.stdout == SECRET
