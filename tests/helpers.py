"""Helpers the tests share: polling with a deadline, looking into a home, running smarthole."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from smarthole.cli import main
from smarthole.daemon import Daemon
from smarthole.formats import dumps_toml
from smarthole.home import Home
from smarthole.pipeline.inbox import drop_message

REPO = Path(__file__).resolve().parent.parent


TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, message: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(0.01)


def turned_clock(start: datetime) -> Callable[[], datetime]:
    """A clock that says ``start`` until a test appends a later moment to ``clock.moments``."""
    moments = [start]

    def now() -> datetime:
        return moments[-1]

    now.moments = moments  # type: ignore[attr-defined]
    return now


def db(home: Path) -> sqlite3.Connection:
    """A plain connection to a home's database, for looking at what the daemon stored."""
    connection = sqlite3.connect(home / ".smarthole" / "smarthole.db")
    connection.row_factory = sqlite3.Row
    return connection


def write_config(home: Path, **sections: dict[str, Any]) -> None:
    """A config.toml with fast test timings, plus the given sections."""
    base: dict[str, dict[str, Any]] = {
        "inbox": {"rescan_seconds": 0.5},
        "retry": {"base_delay_seconds": 0.05, "max_delay_seconds": 5.0},
        "daemon": {"shutdown_grace_seconds": 5.0},
        "titles": {"enabled": False},
        "plugins": {"paths": []},
    }
    for name, values in sections.items():
        base.setdefault(name, {}).update(values)
    (home / "config.toml").write_text(dumps_toml(base))


def write_schedules(home: Path, *schedules: dict[str, Any], **sections: dict[str, Any]) -> None:
    """``write_config``, with these ``[[schedules]]`` entries."""
    write_config(home, **sections)
    if schedules:
        data = tomllib.loads((home / "config.toml").read_text())
        (home / "config.toml").write_text(dumps_toml({"schedules": list(schedules), **data}))


@dataclass
class OutboxFile:
    path: Path
    fields: dict[str, Any]
    text: str

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


def read_outbox(home: Path) -> list[OutboxFile]:
    """Every outbox file, parsed, in name (time) order."""
    files = []
    for path in sorted((home / "outbox").glob("*.md")):
        content = path.read_text()
        _, header, body = content.split("+++\n", 2)
        files.append(OutboxFile(path, tomllib.loads(header), body.rstrip("\n")))
    return files


def finals(home: Path) -> list[OutboxFile]:
    return [f for f in read_outbox(home) if f["kind"] in ("response", "error")]


def tool_runs(home: Path) -> list[str]:
    """What the test plugins' recording tools really ran (one line per run), in order."""
    log = home / "tool-runs.log"
    return log.read_text().splitlines() if log.exists() else []


def forget_modules_under(folder: Path) -> None:
    """Drop modules imported from ``folder``, so the next test imports its own."""
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]


def drop(home: Path, text: str, message_id: str, **fields: Any) -> Path:
    return drop_message(home / "inbox", text, message_id=message_id, **fields)


def run_once(home: Path, env: dict[str, str], **kwargs: Any) -> Daemon:
    """Run ``--once`` in this process (fast); the subprocess tests cover the real CLI."""
    daemon = Daemon(Home(home), once=True, env=env, handle_signals=False, **kwargs)
    assert daemon.run() == 0
    return daemon


def says_ready(home: Path) -> bool:
    """Whether the daemon.json of ``home`` says a daemon of this process is ready."""
    try:
        state = json.loads((home / ".smarthole" / "daemon.json").read_text())
    except (OSError, ValueError):
        return False
    return state.get("ready") is True and state.get("pid") == os.getpid()


class DaemonThread:
    """A daemon running in a thread of this process: no process start, no signals (SIGTERM's
    part is :meth:`stop`), the same start-up, loop, workers and shutdown as ``smarthole run``.
    The subprocess :class:`DaemonProcess` is for what needs a process: kill -9, signals."""

    def __init__(self, home: Path, env: dict[str, str], **kwargs: Any) -> None:
        self.home = home
        self.daemon = Daemon(Home(home), env=env, handle_signals=False, **kwargs)
        self.code: int | None = None
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="test-daemon")
        self.thread.start()

    def _run(self) -> None:
        try:
            self.code = self.daemon.run()
        except BaseException as exc:  # surfaced by wait_ready and stop
            self.errors.append(exc)

    def wait_ready(self, timeout: float = 60) -> DaemonThread:
        assert self.daemon.ready.wait(timeout), "the daemon did not start"
        if self.errors:
            raise self.errors[0]
        assert self.daemon.started, "the daemon stopped during start-up"
        # Then what `smarthole status` and friends read: daemon.json says ready (written just
        # after the ready event, as "is watching" is logged, which DaemonProcess waits for).
        wait_for(lambda: says_ready(self.home), timeout, "daemon.json to say ready")
        return self

    def hangup(self) -> None:
        """What SIGHUP does: the daemon's signal watcher hands it the signal, it reloads."""
        self.daemon._on_signal(signal.Signals.SIGHUP)

    def close(self) -> None:
        """As :meth:`DaemonProcess.close`: stopped, as a service manager stops it."""
        self.stop()

    def stop(self, timeout: float = 30) -> int | None:
        """Stop as SIGTERM would (finish or interrupt the turns), and return the exit status."""
        self.daemon.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the daemon did not stop"
        if self.errors:
            raise self.errors[0]
        return self.code


def in_process(
    capsys: Any, *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``smarthole ARGS`` through ``main`` in this process, as :func:`smarthole` runs it in a
    subprocess: stdin is ``input`` (never a terminal), stdout and stderr are what it printed.
    A command that reads ``ANTHROPIC_*`` needs the ``environ`` fixture."""
    stdin = sys.stdin
    sys.stdin = io.StringIO(input or "")
    try:
        code = main(list(args))
    finally:
        sys.stdin = stdin
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), int(code), out, err)


def smarthole(
    *args: str, env: dict[str, str], timeout: float = 60, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smarthole", *args],
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
        input=input,
    )


class DaemonProcess:
    """``smarthole run`` as a real subprocess."""

    def __init__(self, home: Path, env: dict[str, str], *extra: str) -> None:
        self.home = home
        self.log = home.parent / f"daemon-{time.monotonic_ns()}.log"
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "smarthole", "run", "--home", str(home), *extra],
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def wait_ready(self, timeout: float = 60) -> DaemonProcess:
        wait_for(
            lambda: "is watching" in self.output() or self.process.poll() is not None,
            timeout,
            "the daemon to start",
        )
        assert self.process.poll() is None, self.output()
        return self

    def output(self) -> str:
        return self.log.read_text()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 30) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def close(self, grace: float = 15) -> None:
        """End the daemon as a service manager would: SIGTERM, so it stops what it started
        (MCP servers, their process groups), then SIGKILL if it has not gone after ``grace``."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()


class Command:
    """A CLI command as a subprocess: stdin a pipe, its output collected in files (never a
    full pipe), so a test can read what it said so far."""

    def __init__(self, tmp_path: Path, env: dict[str, str], *args: str) -> None:
        self.out = tmp_path / f"out-{time.monotonic_ns()}"
        self.err = self.out.with_suffix(".err")
        with self.out.open("w") as out, self.err.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "smarthole", *args],
                env=env,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                text=True,
            )

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def stdout(self) -> str:
        return self.out.read_text()

    def stderr(self) -> str:
        return self.err.read_text()

    def output(self) -> str:
        return self.stdout() + self.stderr()

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


# -- attachments: files made in the tests ------------------------------------------------------


def image_bytes(size: tuple[int, int] = (64, 48), fmt: str = "PNG", color: str = "red") -> bytes:
    """An image made with Pillow (``fmt``: PNG, JPEG, GIF or WEBP)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, fmt)
    return buffer.getvalue()


def noise_jpeg(size: tuple[int, int]) -> bytes:
    """A JPEG of random pixels (hard to compress: a large photo's size)."""
    import io
    import os

    from PIL import Image

    image = Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=95)
    return buffer.getvalue()


def pdf_bytes(pages: int = 1, padding: int = 0) -> bytes:
    """A small hand-written PDF of ``pages`` empty pages (``padding``: a comment that long)."""
    kids = " ".join(f"{3 + n} 0 R" for n in range(pages))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>",
        *["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"] * pages,
    ]
    body = "%PDF-1.4\n"
    offsets = []
    for number, text in enumerate(objects, start=1):
        offsets.append(len(body))
        body += f"{number} 0 obj\n{text}\nendobj\n"
    xref = len(body)
    body += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n"
    body += "".join(f"{offset:010d} 00000 n \n" for offset in offsets)
    body += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
    return body.encode() + b"%" + b"x" * padding + b"\n%%EOF\n"


def compressed_pdf_bytes(pages: int = 1) -> bytes:
    """A PDF 1.5 whose every dictionary (catalog, page tree, pages) is in one Flate-compressed
    object stream, as pdfTeX and qpdf write them: no ``/Type /Page`` in the file's own bytes."""
    import zlib

    kids = " ".join(f"{3 + n} 0 R" for n in range(pages))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>",
        *["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"] * pages,
    ]
    offsets, body = [], ""
    for text in objects:
        offsets.append(len(body))
        body += text + "\n"
    header = " ".join(f"{n} {offset}" for n, offset in enumerate(offsets, start=1)) + "\n"
    packed = zlib.compress((header + body).encode())
    stream = (
        f"{len(objects) + 1} 0 obj\n<< /Type /ObjStm /N {len(objects)} /First {len(header)} "
        f"/Filter /FlateDecode /Length {len(packed)} >>\nstream\n"
    ).encode()
    return b"%PDF-1.5\n" + stream + packed + b"\nendstream\nendobj\n%%EOF\n"


def bomb_png(width: int = 30_000, height: int = 30_000) -> bytes:
    """A PNG that says it is ``width`` x ``height`` pixels in a few KB (a decompression bomb)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    rows = zlib.compress(b"\0" * (1 + width // 8) * 200, 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


def drop_folder(home: Path, name: str, files: dict[str, bytes]) -> Path:
    """A folder message: written beside the inbox, then renamed into it."""
    import os

    staging = home / f".staging-{name}"
    staging.mkdir()
    for file_name, data in files.items():
        (staging / file_name).write_bytes(data)
    target = home / "inbox" / name
    os.rename(staging, target)
    return target


def blobs(home: Path) -> list[Path]:
    """Every stored blob of a home."""
    root = home / ".smarthole" / "blobs" / "sha256"
    if not root.exists():
        return []
    return sorted(p for p in root.glob("*/*") if not p.name.startswith("."))
