"""Fixtures for the MCP tests: the test servers of ``servers.py``, over stdio and HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from smarthole.config import parse_config
from smarthole.home import Home
from smarthole.mcpservers import McpServers
from smarthole.tools import ToolRegistry
from tests.helpers import wait_for

SERVERS = Path(__file__).with_name("servers.py")


def stdio_server(kind: str, **settings: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVERS), kind], **settings}


@pytest.fixture
def stdio() -> Callable[..., dict[str, Any]]:
    """``stdio(kind, **settings)``: the [mcp.servers.<name>] table of a stdio test server."""
    return stdio_server


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Callable[[str, Path], str]]:
    """``http_server(kind, cwd)``: start a test server on 127.0.0.1; returns its URL."""
    started: list[subprocess.Popen[bytes]] = []

    def start(kind: str, cwd: Path) -> str:
        port_file = tmp_path / f"port-{len(started)}"
        log = (tmp_path / f"http-{len(started)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, str(SERVERS), kind, "--http", str(port_file)],
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(process)
        port = wait_for(lambda: port_file.exists() and port_file.read_text(), 20, "the port")
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., tuple[McpServers, ToolRegistry]]]:
    """``start(registry=None, **servers)``: McpServers over a registry, stopped at the end."""
    running: list[McpServers] = []

    def start_servers(
        registry: ToolRegistry | None = None, **servers: dict[str, Any]
    ) -> tuple[McpServers, ToolRegistry]:
        config = parse_config({"mcp": {"start_timeout_seconds": 5, "servers": servers}})
        home = Home(tmp_path / "home")
        home.ensure()
        registry = registry or ToolRegistry()
        manager = McpServers(config.mcp, home, registry, os.environ)
        running.append(manager)
        manager.start()
        return manager, registry

    yield start_servers
    for manager in running:
        manager.stop()
