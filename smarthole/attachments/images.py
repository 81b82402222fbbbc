"""Images: measured before they are decoded, checked by decoding, scaled to the API's limits.

The only importer of Pillow, and only inside the functions that need it, so ``smarthole
--help`` and the daemon's start stay fast.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MessageError

if TYPE_CHECKING:
    from PIL.Image import Image

API_IMAGE_BYTES = 5 * 1024 * 1024
"""The Messages API's largest image; a bigger one, even within the edge, is sent as JPEG."""
FORMATS = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WEBP"}
JPEG_QUALITY = 85


@dataclass(frozen=True)
class Checked:
    width: int
    height: int
    sent: bytes | None  # what the model is sent instead, if the image had to change


def check_image(
    name: str, data: bytes, media_type: str, *, max_pixels: int, max_edge: int
) -> Checked:
    """Refuse a decompression bomb (by its header, before decoding) or an image that does not
    decode; scale one over ``max_edge`` down. ``MessageError`` names the file and the rule."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None  # the pixel limit is ours, checked before decoding
    try:
        with Image.open(io.BytesIO(data), formats=[FORMATS[media_type]]) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise MessageError(
                    f"{name}: {width}\u00d7{height} pixels is more than max_image_pixels "
                    f"({max_pixels}); refused before decoding"
                )
            if media_type == "image/jpeg" and max(width, height) > max_edge:
                # Decoded at the smallest scale JPEG allows that is still at least the edge
                # (1/2, 1/4, 1/8): every byte is still read and checked, at a fraction of
                # the time and memory; the scaling below then finishes the job.
                scale = max_edge / max(width, height)
                image.draft("RGB", (round(width * scale), round(height * scale)))
            image.load()
            if max(width, height) <= max_edge and len(data) <= API_IMAGE_BYTES:
                return Checked(width, height, None)
            return Checked(width, height, _scaled(image, media_type, max_edge))
    except MessageError:
        raise
    except Exception as exc:  # Pillow raises many kinds for a corrupt file
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise MessageError(
            f"{name}: not a readable {FORMATS[media_type]} image ({detail})"
        ) from exc


def _scaled(image: Image, media_type: str, max_edge: int) -> bytes:
    """The image with its long edge at most ``max_edge``, in its own format, or as a JPEG if
    that is still over the API's size. Deterministic: the same bytes in, the same out."""
    from PIL import Image as PILImage
    from PIL import ImageOps

    if media_type == "image/jpeg":
        image = ImageOps.exif_transpose(image)
    image.thumbnail((max_edge, max_edge), PILImage.Resampling.LANCZOS)
    out = _encoded(image, media_type)
    if len(out) > API_IMAGE_BYTES and media_type != "image/jpeg":
        out = _encoded(image.convert("RGB"), "image/jpeg")
    return out


def _encoded(image: Image, media_type: str) -> bytes:
    buffer = io.BytesIO()
    fmt = FORMATS[media_type]
    if fmt == "JPEG":
        image = image if image.mode in ("RGB", "L") else image.convert("RGB")
        image.save(buffer, fmt, quality=JPEG_QUALITY)
    elif fmt == "WEBP":
        image.save(buffer, fmt, quality=JPEG_QUALITY)
    else:
        image.save(buffer, fmt)
    return buffer.getvalue()


def thumbnail(data: bytes, edge: int) -> bytes:
    """A small PNG of an image, for the web view."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = None
    with Image.open(io.BytesIO(data)) as image:
        image.thumbnail((edge, edge))
        buffer = io.BytesIO()
        image.convert("RGBA").save(buffer, "PNG")
        return buffer.getvalue()
