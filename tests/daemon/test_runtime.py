"""The composition root: each part built once, on first use, and the same part for everyone."""

from __future__ import annotations

import pytest

from smarthole.app import App
from smarthole.cli.common import rooted
from smarthole.daemon.runtime import Runtime
from smarthole.errors import ConfigError
from smarthole.formats import utc_now
from smarthole.home import Home


def test_a_commands_root_needs_no_api_key_for_what_calls_no_model(home, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with rooted(Home(home)) as root:
        assert root.conversations.recent(now=utc_now()) == []
        assert root.tasks.running() == []
        built = set(vars(root))
        assert "store" in built and not {"client", "titler", "processor"} & built
        with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
            root.client  # noqa: B018 -- asked for: now the key is needed


def test_every_part_is_built_once_and_handed_to_whoever_needs_it(home, fake, env):
    app = App.load(Home(home))
    root = Runtime.build(app, env=env)
    try:
        processor = root.processor
        assert Runtime.of(app) is root, "the daemon's root is attached to its app"
        assert processor.lifecycle is root.lifecycle and processor.history is root.history
        assert processor.conversations is root.conversations
        assert root.conversations.events is root.events is processor.events
        assert root.lifecycle.tasks is root.teams.tasks is root.tasks
        assert root.lifecycle.pending is root.conversations.pending is root.pending
        assert root.titler.usage is root.teams.usage is root.usage
        assert root.outbox_record is root.outbox is processor.outbox
        assert root.event_hook.log is root.events
    finally:
        root.close()
        app.close()


def test_a_bare_app_gets_a_root_whose_parts_wait_until_asked(home, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    app = App.load(Home(home))
    try:
        root = Runtime.of(app)
        assert Runtime.of(app) is root and root.store is app.store
        assert root.ledger.counts() == {}
        assert "processor" not in vars(root)
    finally:
        app.close()
