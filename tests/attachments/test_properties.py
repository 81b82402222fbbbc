"""Attachments are untrusted bytes: any bytes under any name are taken or refused with a
``MessageError``, nothing else (never a Pillow exception, a decode error or a crash)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smarthole.attachments import accept
from smarthole.config import AttachmentSettings
from smarthole.errors import MessageError
from tests.helpers import compressed_pdf_bytes, image_bytes, pdf_bytes

PROPERTIES = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
LIMITS = AttachmentSettings(max_image_pixels=1_000_000)
SEEDS = [image_bytes(fmt=f) for f in ("PNG", "JPEG", "GIF", "WEBP")]
SEEDS += [pdf_bytes(), compressed_pdf_bytes(), b"a,b\n"]
names = st.builds(
    lambda stem, suffix: os.fsdecode(stem) + suffix,
    st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b),
    st.sampled_from([".png", ".jpg", ".gif", ".webp", ".pdf", ".txt", ".csv", ".json", "", ".x"]),
)


def taken_or_refused(name: str, data: bytes) -> None:
    try:
        accepted = accept(name, data, LIMITS)
    except MessageError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert accepted.data == data


@PROPERTIES
@given(names, st.binary(max_size=2048))
def test_any_bytes_are_taken_or_refused(name, data):
    taken_or_refused(name, data)


@PROPERTIES
@given(names, st.sampled_from(SEEDS), st.data())
def test_damaged_real_files_are_taken_or_refused(name, seed, data):
    """A real image or PDF with bytes changed, cut or added: what a corrupt upload is."""
    damaged = bytearray(seed)
    for _ in range(data.draw(st.integers(0, 8))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    taken_or_refused(name, bytes(damaged[:cut]) + data.draw(st.binary(max_size=64)))
