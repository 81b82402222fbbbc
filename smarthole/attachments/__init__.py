"""Attachments: the photos, screenshots, PDFs and text files a message carries.

``kinds`` says what a file is from its bytes; ``checks`` takes one file or refuses it with the
rule it broke; ``images`` (the only importer of Pillow) measures, checks and scales images;
``blobs`` keeps each attachment once, content-addressed, under ``.smarthole/blobs/``;
``blocks`` makes the Messages API blocks the model reads.
"""

from .blobs import BlobStore
from .blocks import api_block, placeholder_block
from .checks import Accepted, accept
from .kinds import ATTACHMENT_BLOCK, Attachment, attachments_in, sniff

__all__ = [
    "ATTACHMENT_BLOCK",
    "Accepted",
    "Attachment",
    "BlobStore",
    "accept",
    "api_block",
    "attachments_in",
    "placeholder_block",
    "sniff",
]
