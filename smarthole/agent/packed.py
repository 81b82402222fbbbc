"""Turns sent before, kept only as the JSON text they were sent as (see ``history``)."""

from __future__ import annotations

import json
from array import array
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .messages import Encoder

Row = tuple[str, list[dict[str, Any]], bool]
"""A stored message as the history keeps it: (kind, API blocks, whether plain text)."""

PACKED_TURN_BYTES = 24
"""What a packed turn costs beyond its JSON text: its number, size and end offset."""


class PackedText:
    """Packed turns as one earlier turn of a :class:`History`: their text, sent as it is."""

    __slots__ = ("json",)

    def __init__(self, text: str) -> None:
        self.json = text

    def api(self) -> list[dict[str, Any]]:  # decoded only off the usual path
        return list(json.loads(f"[{self.json}]"))

    def rows(self) -> list[Row]:
        """Their API messages stand in for their rows (converting them again changes nothing)."""
        return [(m["role"], m["content"], False) for m in self.api()]

    def encoded(self, encode: Encoder) -> str:
        return self.json


class Packed:
    """A conversation's turns that were sent as earlier turns, oldest first, kept only as
    their JSON text, joined by commas into one string: an object for every turn of a long
    conversation would cost as much as its text."""

    __slots__ = ("base", "chars", "ends", "numbers", "sizes", "text")

    def __init__(self) -> None:
        self.text = ""
        self.base = 0  # the offset of text[0] in the offsets of ends: dropping turns moves it
        self.numbers = array("q")  # turn numbers, ascending
        self.sizes = array("q")  # each turn's stored characters: what the budget counts
        self.chars = 0  # their sum
        self.ends = array("q")  # where each turn's text ends

    def __len__(self) -> int:
        return len(self.numbers)

    def last(self) -> int:
        """The newest turn's number (0 for none)."""
        return self.numbers[-1] if self.numbers else 0

    def weight(self) -> int:
        return len(self.text) + PACKED_TURN_BYTES * len(self.numbers)

    def add(self, turns: list[tuple[int, Any]]) -> None:
        """Keep closed turns, newer than those kept, as their text (they were sent as it)."""
        end = self.base + len(self.text)
        texts = [self.text] if self.text else []
        for number, turn in turns:
            assert turn.json and number > self.last()
            end += len(turn.json) + bool(texts)  # and the comma before it
            texts.append(turn.json)
            self.numbers.append(number)
            self.sizes.append(turn.size)
            self.chars += turn.size
            self.ends.append(end)
        self.text = ",".join(texts)  # one copy, however many turns come

    def drop(self, count: int) -> None:
        """Forget the oldest ``count`` turns."""
        if count >= len(self.numbers):
            self.text, self.base, self.chars = "", 0, 0
            for values in (self.numbers, self.sizes, self.ends):
                del values[:]
            return
        cut = self.ends[count - 1] - self.base + 1  # with the comma after it
        self.chars -= sum(self.sizes[:count])
        self.text = self.text[cut:]
        self.base += cut
        for values in (self.numbers, self.sizes, self.ends):
            del values[:count]
