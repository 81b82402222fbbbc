"""Error types say what happened: usage errors, internal errors and lookups are told apart."""

from __future__ import annotations

from smarthole import hookimpl
from smarthole.cli import main
from smarthole.errors import InternalError, ModelError, TurnError
from smarthole.testing import text
from tests.helpers import drop, finals, run_once, write_config


def test_an_empty_new_title_is_a_usage_error(home, fake, env, capsys):
    fake.default = text("ok")
    drop(home, "hello", "m1", new_conversation=True)
    run_once(home, env)
    (conversation,) = [line.split()[-1] for line in _ls(home, capsys)]
    assert main(["rename", conversation, "   ", "--home", str(home)]) == 2
    assert capsys.readouterr().err.strip() == "smarthole: the new title is empty"


def test_retry_with_nothing_named_is_a_usage_error(home, capsys):
    assert main(["retry", "--home", str(home)]) == 2
    assert "name message ids to retry, or use --all" in capsys.readouterr().err


class FailureRecorder:
    def __init__(self) -> None:
        self.failures: list[BaseException] = []

    @hookimpl
    def turn_failed(self, message, error):
        self.failures.append(error)


def test_a_bug_inside_processing_is_an_internal_error_not_a_model_error(
    home, fake, env, monkeypatch
):
    def buggy_run(self, session, **options):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("smarthole.agent.loop.Agent.run", buggy_run)
    write_config(home, retry={"max_attempts": 1})
    drop(home, "hello", "m1")
    recorder = FailureRecorder()
    run_once(home, env, extra_plugins=[("recorder", recorder)])
    (error,) = recorder.failures
    assert isinstance(error, InternalError) and isinstance(error, TurnError)
    assert not isinstance(error, ModelError)
    assert not error.retryable and "ZeroDivisionError: a bug" in str(error)


def test_an_internal_error_is_not_retried_and_says_so(home, fake, env, caplog, monkeypatch):
    calls = []

    def buggy_run(self, session, **options):
        calls.append(1)
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("smarthole.agent.loop.Agent.run", buggy_run)
    drop(home, "hello", "m1")
    run_once(home, env)  # [retry] max_attempts is 8: still one attempt
    assert len(calls) == 1
    (reply,) = finals(home)
    assert reply["kind"] == "error"
    assert "internal error" in reply.text and "could not reach" not in reply.text
    assert "smarthole retry m1" in reply.text
    assert caplog.text.count("Traceback") <= 1 and caplog.text.count("ZeroDivisionError") >= 1
    assert (home / "failed").is_dir() and any((home / "failed").iterdir())


def _ls(home, capsys) -> list[str]:
    main(["conversations", "--home", str(home)])
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]
