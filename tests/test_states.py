"""States are enums: outside ``smarthole/db/`` no decision compares a state with its text.

A state's text written in a comparison (``row.state == "waiting"``) goes on compiling when the
enum's member is renamed or its meaning moves; the member does not. The store's states are in
``db/states.py``; a state that is not stored is an enum beside its owner (the web view's rows,
the MCP servers, the desktop bridge's records, daemon.json's status).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "smarthole"
STATE_LIKE = re.compile(r"\b(state|status)\b|[\"'](state|status)[\"']")


def _text(node: ast.expr) -> bool:
    """A string constant, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_text(element) for element in node.elts)
    return False


def decisions_by_state_text(source: str) -> list[str]:
    """Each comparison of a state (or status) with string text in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        if not isinstance(node.ops[0], ast.Eq | ast.NotEq | ast.In | ast.NotIn):
            continue
        left, right = node.left, node.comparators[0]
        for subject, other in ((left, right), (right, left)):
            if _text(other) and STATE_LIKE.search(ast.unparse(subject)):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_what_it_looks_for():
    assert decisions_by_state_text("row.state == 'waiting'") == ["1: row.state == 'waiting'"]
    assert decisions_by_state_text("x = v.get('state') in ('a', 'b')")
    assert not decisions_by_state_text("row.state is RowState.WAITING")
    assert not decisions_by_state_text("kind == 'image'")


def test_no_decision_outside_the_store_compares_a_state_with_its_text():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{where}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "db"
        for where in decisions_by_state_text(path.read_text())
    ]
    assert found == [], "compare with the state's enum member:\n" + "\n".join(found)
