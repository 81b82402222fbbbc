"""Row 10 (issue 36): attachments through a real daemon.

- peak RSS while a 30 MiB PDF goes through (claimed, stored as a blob, sent as a base64
  document block, answered): the daemon's VmHWM once it has answered, less its RSS when idle
  before, as a multiple of the PDF's size (goal: under 4x). The absolute peak is beside it.
- drop -> request for a 10 MiB photo: from its rename into inbox/ until the fake Messages API
  has the request (the type read from the bytes, Pillow's pixel check and decode, the blob
  written and fsynced, the ledger, the history, the image scaled to 1568 px and encoded).
"""

from __future__ import annotations

import io
import os
import statistics
import time
from pathlib import Path

from smarthole.home import Home
from smarthole.testing import FakeMessagesAPI

from .procs import daemon, make_home, poll_until, replies, rss_mib, wait_ready
from .report import Row

MIB = 1024 * 1024
PDF_MIB = 30
PHOTO_BYTES = 10 * MIB - 64 * 1024  # under [attachments] max_image_bytes
PHOTO_RUNS = 3


def peak_mib(pid: int) -> float:
    """VmHWM (the peak resident set) of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmHWM for {pid}")


def big_pdf(size: int) -> bytes:
    """A one-page PDF of ``size`` bytes (an incompressible stream pads it)."""
    head = (
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
        b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n"
        b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>\nendobj\n"
    )
    tail = b"\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"
    stream = os.urandom(size - len(head) - len(tail) - 64)
    body = head + b"4 0 obj\n<< /Length %d >>\nstream\n" % len(stream) + stream
    body += b"\nendstream\nendobj"
    return body + b" " * (size - len(body) - len(tail)) + tail


def big_photo(limit: int) -> bytes:
    """A JPEG of random pixels of at most ``limit`` bytes and more than 90% of it (a photo's
    size; it must be scaled down before it is sent)."""
    width, data = 2400, b""
    for _ in range(8):
        data = _noise_jpeg(width)
        if limit * 0.9 < len(data) <= limit:
            return data
        width = int(width * (limit * 0.95 / len(data)) ** 0.5)
    return data


def _noise_jpeg(width: int) -> bytes:
    from PIL import Image

    height = width * 3 // 4
    image = Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def drop(home: Home, name: str, data: bytes) -> float:
    """Write ``data`` beside the inbox, then rename it in; perf_counter of the rename."""
    staging = home.root / ".staging" / name
    staging.write_bytes(data)
    at = time.perf_counter()
    os.rename(staging, home.inbox / name)
    return at


def attachment_rows(root: Path, fake: FakeMessagesAPI) -> list[Row]:
    home = make_home(root / "attachments")
    pdf = big_pdf(PDF_MIB * MIB)
    photo = big_photo(PHOTO_BYTES)
    with daemon(home, fake.url) as process:
        wait_ready(home, process)
        time.sleep(1.0)  # let start-up settle
        idle = rss_mib(process.pid)
        drop(home, "statement.pdf", pdf)
        poll_until(lambda: replies(home) >= 1, 120, 0.01)
        peak = peak_mib(process.pid)
        latencies = []
        for run in range(PHOTO_RUNS):
            seen = len(fake.requests)
            at = drop(home, f"photo-{run}.jpg", photo)
            poll_until(lambda seen=seen: len(fake.requests) > seen, 60, 0.001)
            latencies.append((time.perf_counter() - at) * 1000)
            poll_until(lambda run=run: replies(home) >= run + 2, 60, 0.01)
    growth = (peak - idle) / (len(pdf) / MIB)
    return [
        Row(
            f"attachments: peak RSS growth for a {PDF_MIB} MiB PDF, x its size",
            round(growth, 2),
            "x",
            goal="< 4x",
            max_value=4.0,
            detail={"idle_rss_mib": round(idle, 1), "peak_rss_mib": round(peak, 1)},
        ),
        Row(
            f"attachments: drop -> request, {len(photo) / MIB:.1f} MiB photo (p50 of {PHOTO_RUNS})",
            round(statistics.median(latencies), 1),
            "ms",
            detail={"runs_ms": [round(x, 1) for x in latencies]},
        ),
    ]
