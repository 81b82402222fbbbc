"""Images and PDFs in the workspace, and the conversation's attachments saved into it.

``read_file`` on an image or PDF returns it as an image or document block, so the agent can
look at a file it saved earlier; ``save_attachment`` files an attachment of the current
conversation into the workspace, under the same confinement rules as ``write_file``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...attachments import Attachment, BlobStore, accept, api_block, attachments_in, sniff
from ...errors import MessageError, ToolError
from ...fsutil import HEAD_BYTES, atomic_write
from ...tools import ToolContext, ToolResult

if TYPE_CHECKING:
    from ...config import AttachmentSettings
    from .paths import WorkspacePaths


def read_media(
    paths: WorkspacePaths, target: Path, settings: AttachmentSettings
) -> ToolResult | None:
    """An image or PDF file as a block the model reads; None for any other file."""
    with paths.open_file(target) as handle:
        head = handle.read(HEAD_BYTES)
    media_type = sniff(head)
    if media_type is None:
        return None
    shown = paths.display(target)
    limit = settings.max_pdf_bytes if media_type.endswith("pdf") else settings.max_image_bytes
    data = paths.read_bytes(target, limit)
    try:
        accepted = accept(target.name, data, settings)
    except MessageError as exc:
        raise ToolError(f"cannot show '{shown}': {exc}") from exc
    attachment = Attachment(target.name, accepted.media_type, len(data), "0" * 64)
    block = api_block(attachment, accepted.sent if accepted.sent is not None else data)
    summary = f'{accepted.media_type} file "{shown}" ({len(data)} bytes), shown as a block'
    return ToolResult(summary, blocks=({"type": "text", "text": summary}, block))


class AttachmentTools:
    """``save_attachment``, bound to one workspace."""

    def __init__(self, paths: WorkspacePaths, blobs: Path) -> None:
        self.paths = paths
        self.blobs = BlobStore(blobs)

    def save_attachment(self, name: str, path: str, *, context: ToolContext) -> str:
        """Save an attachment of this conversation into the workspace, e.g. file a receipt.

        :param name: The attachment's name as the person sent it, like "receipt.pdf".
        :param path: Where to save it, relative to the workspace: a file name, or a folder
            ending in "/" (like "receipts/") to keep the attachment's own name.
        """
        attachment = self._find(name, context)
        target_text = path + attachment.name if path.endswith("/") or not path else path
        target = self.paths.resolve(target_text, write=True)
        if target.is_dir():
            target = self.paths.resolve(f"{target_text.rstrip('/')}/{attachment.name}", write=True)
        try:
            data = self.blobs.read(attachment.sha256)
        except FileNotFoundError as exc:
            raise ToolError(f"attachment {name!r} is no longer stored") from exc
        existed = target.exists()
        self.paths.make_folders(target.parent, target_text)
        try:
            atomic_write(target, data, mode=None)
        except OSError as exc:
            raise ToolError(self.paths.describe(exc)) from exc
        verb = "Replaced" if existed else "Saved"
        return f'{verb} "{self.paths.display(target)}" ({attachment.media_type}, {len(data)} bytes)'

    def _find(self, name: str, context: ToolContext) -> Attachment:
        """The newest attachment of the conversation called ``name``."""
        messages = context.app.store.messages(context.conversation_id)
        found = [a for m in messages if m.kind == "user" for a in attachments_in(m.content)]
        for attachment in reversed(found):
            if attachment.name == name:
                return attachment
        if not found:
            raise ToolError("this conversation has no attachments")
        names = ", ".join(sorted({a.name for a in found}))
        raise ToolError(f"no attachment is called {name!r}; this conversation has: {names}")
