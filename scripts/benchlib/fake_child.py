"""The fake Messages API in a process of its own: python fake_child.py

Prints {"url": ...} and answers every request with an echo until stdin closes. The pickup
row runs its server here: in the benchmark's own process, the server's work (it simulates
the prompt cache over each growing request) would hold the GIL while the benchmark's thread
waits to timestamp a claim, and the row would measure the benchmark, not the daemon.
"""

from __future__ import annotations

import json
import sys

from smarthole.testing import FakeMessagesAPI, echo


def main() -> None:
    with FakeMessagesAPI() as fake:
        fake.default = echo()
        print(json.dumps({"url": fake.url}), flush=True)
        sys.stdin.read()
        fake.reset()


if __name__ == "__main__":
    main()
