"""Commit what each turn changed in ``workspace/``, when it is a git repository.

After every completed turn, if ``workspace/.git`` exists, the changes are staged (``git add
-A``) and committed with a message naming the conversation and the turn, and listing the files.
Nothing is committed when nothing changed. Run ``git init`` in the workspace to turn it on.

Settings (optional)::

    [plugins.git_autocommit]
    author_name = "smarthole"
    author_email = "smarthole@localhost"
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from smarthole import hookimpl

logger = logging.getLogger(__name__)

TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class GitSettings:
    author_name: str = "smarthole"
    author_email: str = "smarthole@localhost"


class AutoCommit:
    def __init__(self, workspace: Path, settings: GitSettings) -> None:
        self.workspace = workspace
        self.settings = settings

    def git(self, *args: str) -> str:
        identity = [
            "-c",
            f"user.name={self.settings.author_name}",
            "-c",
            f"user.email={self.settings.author_email}",
        ]
        result = subprocess.run(
            ["git", *identity, *args],
            cwd=self.workspace,
            text=True,
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            check=True,
        )
        return result.stdout

    def commit_turn(self, conversation: str | None, turn: int | None) -> str | None:
        """Commit the workspace's changes; returns the commit's files, or None."""
        if not (self.workspace / ".git").exists():
            return None
        self.git("add", "-A")
        changed = self.git("diff", "--cached", "--name-only").split()
        if not changed:
            return None
        message = f"smarthole: conversation {conversation} turn {turn}\n\n" + "\n".join(
            f"- {name}" for name in changed
        )
        self.git("commit", "--quiet", "-m", message)
        return "\n".join(changed)


_committer: AutoCommit | None = None


@hookimpl
def register_settings(register):
    register("git_autocommit", GitSettings)


@hookimpl
def startup(app):
    global _committer
    _committer = AutoCommit(app.home.workspace, app.settings("git_autocommit"))


@hookimpl
def event(event):
    if _committer is None or event.type != "turn_completed":
        return
    try:
        files = _committer.commit_turn(event.conversation, event.turn)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning(
            "git autocommit failed for turn %s of %s: %s", event.turn, event.conversation, exc
        )
        return
    if files:
        logger.info("committed %s", files.replace("\n", ", "))
