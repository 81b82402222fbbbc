"""The mail password: from the environment or a 0600 file named in config, never config itself.

Read once when the channel starts; kept only in the channel's connections. Errors name the
variable or the file, never the value.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ...errors import ConfigError

MAX_BYTES = 4096


def read_password(
    password_env: str, password_file: str, env: Mapping[str, str], home_root: Path
) -> str:
    """The password; ``ConfigError`` saying where it was looked for and why it is not usable."""
    if password_file:
        return _from_file(home_root / Path(password_file).expanduser())
    value = env.get(password_env, "")
    if not value:
        raise ConfigError(
            f"[email] password_env: the environment variable {password_env} is not set "
            "(or set password_file to a 0600 file)"
        )
    return value


def _from_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ConfigError(f"[email] password_file {path}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"[email] password_file {path} is not a regular file")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise ConfigError(
                f"[email] password_file {path} is readable by others "
                f"(mode {stat.S_IMODE(info.st_mode):o}); chmod 600 it"
            )
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"[email] password_file {path} is over {MAX_BYTES} bytes")
    value = data.decode("utf-8", "replace").strip("\r\n")
    if not value:
        raise ConfigError(f"[email] password_file {path} is empty")
    return value
