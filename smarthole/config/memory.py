"""The ``[memory]`` table: the agent's memory of its person (see docs/memory.md)."""

from __future__ import annotations

from dataclasses import dataclass

from .fields import setting


@dataclass(frozen=True)
class MemorySettings:
    enabled: bool = setting(True, "Offer the entry agent the memory tool and its profile.")
    profile_chars: int = setting(
        2000,
        "Characters of /memories/profile.md in the system prompt, as it stood when the "
        "conversation began.",
        minimum=0,
    )
    max_file_bytes: int = setting(64 * 1024, "Largest memory file (UTF-8 bytes).", minimum=1)
    max_bytes: int = setting(4 * 1024 * 1024, "Largest whole memory (UTF-8 bytes).", minimum=1)
