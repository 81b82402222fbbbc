"""A daemon keeps every module it imported for as long as it runs: what only some commands
or some configurations need is imported when they need it."""

from __future__ import annotations

import subprocess
import sys

import pytest

OTHER_COMMANDS = [
    "smarthole.cli.chat",
    "smarthole.cli.mcp",
    "smarthole.cli.service",
    "smarthole.cli.teams",
    "smarthole.cli.transfer",
    "smarthole.cli.units",
    "plistlib",
    "PIL",
]
BRIDGE = [
    "smarthole.builtins.desktop.connection",
    "smarthole.builtins.desktop.intake",
    "smarthole.builtins.desktop.protocol",
    "smarthole.builtins.desktop.records",
]

CASES = {
    "the command line of `run`": (
        "from smarthole.cli import parse; parse(['run'])",
        OTHER_COMMANDS,
    ),
    "logging without a log file": (
        "from smarthole.daemon.logs import setup_logging; setup_logging(level='info', fmt='text')",
        ["logging.handlers", "pickle"],
    ),
    # The SDK's HTTP stack and TLS context (3 MiB) wait for the first model call.
    "the model client before its first call": (
        "from smarthole.agent.client import ModelClient; from smarthole.config import "
        "ModelSettings; ModelClient(ModelSettings(), api_key='k').close()",
        ["httpcore2", "h11"],
    ),
    "the plugins, the desktop bridge off": (
        "from pathlib import Path; from smarthole.app import App; from smarthole.home import Home; "
        "home = Home(Path(sys.argv[1])); home.ensure(); App.load(home).close()",
        BRIDGE,
    ),
}


def loaded(code: str, names: list[str], *args: str) -> list[str]:
    """Which of ``names`` a fresh interpreter has imported after running ``code``."""
    script = f"import sys; {code}; print(*[n for n in {names!r} if n in sys.modules])"
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.split()


@pytest.mark.parametrize("case", list(CASES))
def test_the_daemon_does_not_import_what_it_does_not_use(case, tmp_path):
    code, names = CASES[case]
    assert loaded(code, names, str(tmp_path / "home")) == []


def test_the_check_sees_an_import():
    assert loaded("import plistlib", ["plistlib", "pickle"]) == ["plistlib"]
