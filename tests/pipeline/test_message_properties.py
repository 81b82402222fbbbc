"""Parsing untrusted inbox bytes: any input gives a Message or a MessageError, nothing else."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smarthole.db.records import Message
from smarthole.errors import MessageError
from smarthole.pipeline.message import parse_message

MTIME = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


# The same examples every run (a failure is reproducible, never a fluke of one run), and no
# timing checks: on a loaded 2-core CI machine a slow draw says nothing about the parser.
def properties(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


# Names as the inbox scanner hands them over: any bytes a POSIX name may hold, decoded the
# way os.listdir decodes them (surrogate escapes for bytes that are not UTF-8).
file_names = st.binary(min_size=1, max_size=255).filter(lambda b: b"/" not in b and b"\0" not in b)
suffixes = st.sampled_from([b".md", b".txt", b".json", b".MD", b"", b".bin"])


def parses_or_refuses(name: str, data: bytes) -> None:
    try:
        message = parse_message(name, data, modified=MTIME)
    except MessageError as exc:
        assert str(exc).strip(), "a refusal must say why"
        assert "\n" not in str(exc), "the reason is one line"
        return
    assert isinstance(message, Message)
    assert message.text.strip()
    Message.from_json(message.to_json())  # what the ledger stores must load back


@properties(examples=300)
@given(stem=file_names, suffix=suffixes, data=st.binary(max_size=2048))
def test_any_bytes_and_any_name_parse_or_give_the_documented_error(stem, suffix, data):
    parses_or_refuses(os.fsdecode(stem + suffix), data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
json_keys = st.sampled_from(
    ["id", "text", "channel", "conversation", "new_conversation", "timestamp", "metadata", "x"]
)


@properties(examples=300)
@given(st.dictionaries(json_keys, json_values | st.text()))
def test_any_json_object_parses_or_gives_the_documented_error(fields):
    parses_or_refuses("m.json", json.dumps(fields).encode())


toml_scalars = st.sampled_from(
    [
        "nan",
        "inf",
        "-inf",
        "1e400",
        "99999999999999999999",
        "-99999999999999999999",
        "9999999999999",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01",
        "00:00:00",
        '"x"',
        "true",
        "[]",
        "{}",
    ]
)


@properties(examples=200)
@given(key=json_keys, value=toml_scalars)
def test_any_front_matter_value_parses_or_gives_the_documented_error(key, value):
    data = f"+++\n{key} = {value}\n+++\nhello\n".encode()
    parses_or_refuses("note.md", data)


POISON = {
    "nan.json": b'{"text": "hi", "timestamp": NaN}',
    "inf.json": b'{"text": "hi", "timestamp": Infinity}',
    "neg-inf.json": b'{"text": "hi", "timestamp": -Infinity}',
    "huge-int.json": b'{"text": "hi", "timestamp": 99999999999999999999999}',
    "huge-float.json": b'{"text": "hi", "timestamp": 1e300}',
    "negative.json": b'{"text": "hi", "timestamp": -99999999999999}',
    "underflow.md": b"+++\ntimestamp = 0001-01-01T00:00:00+14:00\n+++\nhi\n",
    "overflow.md": b"+++\ntimestamp = 9999-12-31T23:59:59-14:00\n+++\nhi\n",
    "underflow-string.json": b'{"text": "hi", "timestamp": "0001-01-01T00:00:00+14:00"}',
    "deep.json": b'{"text": "hi", "metadata": ' + b'{"a": ' * 10_000 + b"1" + b"}" * 10_001,
    "deep-array.json": b"[" * 10_000 + b"]" * 10_000,
    "deep.md": b"+++\nmetadata = " + b"[" * 10_000 + b"]" * 10_000 + b"\n+++\nhi\n",
    "deep-table.md": b"+++\nmetadata = " + b"{a = " * 5_000 + b"1" + b"}" * 5_000 + b"\n+++\nhi\n",
    "deep-but-parsable.json": b'{"text": "hi", "metadata": ' + b"[" * 900 + b"]" * 900 + b"}",
}


@pytest.mark.parametrize("name", sorted(POISON))
def test_poison_values_are_refused_with_a_reason(name):
    with pytest.raises(MessageError) as refused:
        parse_message(name, POISON[name], modified=MTIME)
    reason = str(refused.value)
    assert reason and "\n" not in reason


def test_a_float_timestamp_in_range_is_still_accepted():
    message = parse_message("t.json", b'{"text": "hi", "timestamp": 1763802000.5}', modified=MTIME)
    assert message.timestamp == datetime(2025, 11, 22, 9, 0, 0, 500000, tzinfo=UTC)
