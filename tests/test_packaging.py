"""What an installation ships: type information, bounded dependencies, pinned dev tools."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import smarthole

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_package_is_marked_as_typed():
    assert (Path(smarthole.__file__).parent / "py.typed").is_file()


def test_runtime_dependencies_stop_before_the_next_major_version():
    for requirement in PYPROJECT["project"]["dependencies"]:
        assert re.search(r",\s*<\d", requirement), f"{requirement}: give it an upper bound"


def test_dev_tools_are_pinned():
    for requirement in PYPROJECT["project"]["optional-dependencies"]["dev"]:
        if not requirement.startswith("smarthole"):
            assert "==" in requirement, f"{requirement}: pin the dev tool's version"


def test_the_example_config_ships_inside_the_package():
    shipped = Path(smarthole.__file__).parent / "config" / "example.toml"
    assert shipped.read_text() == (REPO / "config.example.toml").read_text()
