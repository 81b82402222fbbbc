"""Cutting a model call in flight (``agent.cutting``): another thread hangs the call up, the
blocked read returns at once, and the call raises ``TurnHalted`` instead of a reply."""

from __future__ import annotations

import threading

import pytest

from smarthole.agent.client import ModelClient
from smarthole.agent.cutting import StreamCut
from smarthole.config import ModelSettings
from smarthole.errors import TurnHalted
from smarthole.testing import stalled, text


@pytest.fixture
def client(fake):
    model = ModelClient(ModelSettings(), api_key="test", base_url=fake.url)
    yield model
    model.close()


def call(client: ModelClient, cut: StreamCut) -> object:
    return client.complete(system="s", messages=[{"role": "user", "content": "hi"}], cut=cut)


def test_a_cut_hangs_up_the_stream_and_raises_turn_halted(client, fake):
    never = threading.Event()
    fake.add(stalled(never, text("a reply that never ends")))
    cut = StreamCut()
    cutter = threading.Thread(target=lambda: (fake.wait_for_stall(1), cut.cut("stopped")))
    cutter.start()
    with pytest.raises(TurnHalted, match="stopped"):
        call(client, cut)
    cutter.join()
    fake.wait_for_hang_up(1)
    assert not never.is_set()


def test_a_call_cut_before_it_is_sent_is_not_sent(client, fake):
    cut = StreamCut()
    cut.cut("stopped by /stop")
    cut.cut("a later reason")  # the first reason stays
    with pytest.raises(TurnHalted, match="stopped by /stop"):
        call(client, cut)
    assert fake.requests == []


def test_an_uncut_call_is_answered_and_the_connection_kept(client, fake):
    fake.add(text("one"))
    fake.add(text("two"))
    cut = StreamCut()
    assert client.complete(system="s", messages=[{"role": "user", "content": "a"}], cut=cut).text
    assert call(client, cut).text == "two"  # type: ignore[attr-defined]
    assert cut.reason is None and fake.hung_up == 0
