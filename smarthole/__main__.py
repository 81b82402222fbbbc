"""``python -m smarthole``, and the ``smarthole`` command: the CLI, guarded while it loads."""

import sys

# Commands after which the process leaves without the interpreter's teardown (see _leave).
LEAVE_AT_ONCE = ("run",)


def run() -> int:
    """The CLI's ``main``; a Ctrl-C while the CLI itself is still being imported also ends
    quietly with 130 (``main`` owns Ctrl-C from its first line on)."""
    try:
        from .cli import main
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    code = main()
    words = [word for word in sys.argv[1:] if not word.startswith("-")]
    if words[:1] and words[0] in LEAVE_AT_ONCE:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """Exit now, once everything is written: the daemon has stopped its threads, closed its
    store and logged "smarthole stopped". The interpreter's own teardown of what a daemon
    loaded (anthropic, pydantic, the tools' models: every module and object freed one by
    one) took seconds of CPU on a busy machine after that line, and does nothing a person
    needs. Falls back to the ordinary exit while another thread still runs."""
    import atexit
    import contextlib
    import logging
    import os
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate()[1:]):
        return
    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(run())
