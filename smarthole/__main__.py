"""``python -m smarthole``, and the ``smarthole`` command: the CLI, guarded while it loads."""

import sys


def run() -> int:
    """The CLI's ``main``; a Ctrl-C while the CLI itself is still being imported also ends
    quietly with 130 (``main`` owns Ctrl-C from its first line on)."""
    try:
        from .cli import main
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
