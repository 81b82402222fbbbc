"""The package's shape: imports point down the layers, SQL stays in db/, modules stay small.

Layers, lowest first. A module may import from its own layer (without a cycle) and from any
layer below; never from one above. Imports under ``TYPE_CHECKING`` and inside functions count:
they are dependencies all the same.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "smarthole"
FACE = ""  # smarthole/__init__.py, the plugin face: ``from smarthole import hookimpl``

# Lowest first. The plugin host (layer 2) is what plugins see: the hooks, the manager, the
# tool registry and the application object, whose plugin-facing part is
# ``hookspecs.PluginApp``, and the face that re-exports them for plugin authors. The built-ins
# are ordinary plugins, and ``testing`` drives the whole daemon for plugin authors, so both sit
# on top. MCP servers are a source of tools: they fill the registry, below the agent that calls
# them and the daemon that starts them.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "fsutil", "formats", "backoff", "home", "schedules", "config", "attachments"),
    ("db",),
    (FACE, "hookspecs", "plugins", "isolation", "tools", "app"),
    ("mcpservers",),
    ("agent",),
    ("teams",),
    ("pipeline", "conversations", "channels"),
    ("daemon",),
    ("cli", "__main__", "testing", "builtins", "web"),
]
MAX_LINES = 400
MAX_TOP_LEVEL_MODULES = 12
SQL_METHODS = {"execute", "executemany", "executescript"}
# The store's query helpers (db/connection.py) run the SQL text they are handed: called with
# SQL outside db/, they are SQL outside db/. (Other ``write``s take other text: only SQL counts.)
QUERY_HELPERS = {"query", "query_one", "write"}
SQL_TEXT = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|PRAGMA|CREATE|DROP|ALTER|BEGIN|VACUUM)\b",
    re.IGNORECASE,
)


def layer_of(module: str) -> int:
    """The layer of a dotted module name under ``smarthole``: its longest listed prefix."""
    parts = module.split(".")
    for length in range(len(parts), 0, -1):
        prefix = ".".join(parts[:length])
        for index, names in enumerate(LAYERS):
            if prefix in names:
                return index
    raise AssertionError(f"smarthole.{module} is in no layer; add it to LAYERS")


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def is_module(name: str) -> bool:
    """Whether dotted ``name`` is a module or package under ``smarthole``."""
    path = PACKAGE.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """``(imported smarthole module, line)`` for every import in the file, relative or not.

    ``from package import name`` imports the submodule ``name`` when there is one, else the
    package itself (``from smarthole import hookimpl``: the face)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("smarthole.") or alias.name == "smarthole":
                    yield alias.name.removeprefix("smarthole").lstrip("."), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = [p for p in package[: len(package) - node.level + 1] if p]
                target = ".".join([*base, node.module] if node.module else base)
            elif node.module and node.module.split(".")[0] == "smarthole":
                target = node.module.removeprefix("smarthole").lstrip(".")
            else:
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}" if target else alias.name
                yield (submodule if is_module(submodule) else target), node.lineno


def test_imports_point_down():
    upward = []
    for module, path in modules():
        for target, line in imports(module, path):
            if layer_of(target) > layer_of(module):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} -> {target}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_import_cycles():
    graph: dict[str, set[str]] = {}
    for module, path in modules():
        graph[module] = {t for t, _ in imports(module, path) if t != module}
    names = set(graph)

    def resolve(target: str) -> str:
        """The module that holds ``target``: itself, or the nearest package above it."""
        while target not in names:
            target = target.rpartition(".")[0]  # down to the face, "", which is a module
        return target

    edges = {m: {r for t in ts if (r := resolve(t)) != m} for m, ts in graph.items()}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> None:
        if node in done:
            return
        if node in visiting:
            cycle = [*visiting[visiting.index(node) :], node]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        visiting.append(node)
        for target in sorted(edges.get(node, ())):
            visit(target)
        visiting.pop()
        done.add(node)

    for module in sorted(edges):
        visit(module)


def leading_text(node: ast.expr) -> str | None:
    """The text a string expression starts with: a literal, an f-string or a concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return leading_text(node.values[0]) or ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return leading_text(node.left)
    return None


def runs_sql(node: ast.AST) -> bool:
    """A call that runs SQL: a connection's ``execute``, or a query helper handed SQL text."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr in SQL_METHODS:
        return True
    if node.func.attr in QUERY_HELPERS and node.args:
        text = leading_text(node.args[0])
        return text is not None and SQL_TEXT.match(text) is not None
    return False


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('store.query_one("SELECT 1 FROM messages WHERE id = ?", (i,))', True),
        ('self.store.write(f"UPDATE inbox SET status = {s}", ())', True),
        ('db.query("select " + columns)', True),
        ("connection.execute(sql)", True),
        ('sys.stdout.write("selected 3 files")', False),
        ('out.write(f"{n} messages queued")', False),
        ("store.query(sql)", False),  # text from elsewhere: only its source can say
    ],
)
def test_the_sql_check_sees_sql_handed_to_a_query_helper(source, found):
    assert any(runs_sql(node) for node in ast.walk(ast.parse(source))) is found


def test_sql_runs_only_in_db():
    found = []
    for module, path in modules():
        if module.split(".")[0] == "db":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if runs_sql(node):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, "SQL outside smarthole/db/:\n" + "\n".join(found)


# What the composition root (daemon/runtime.py) builds, once per process, and hands down: a
# command, the web view or a plugin that built its own would bypass what the root wires in.
ROOT = ("daemon.runtime", "daemon.storeparts")  # the root, and its parts over the store
ROOT_PARTS = {
    "Agent",
    "Conversations",
    "Cursors",
    "EventHook",
    "EventLog",
    "HistoryCache",
    "Inbox",
    "Ledger",
    "Lifecycle",
    "Outbox",
    "OutboxRecord",
    "PendingQuestions",
    "Processor",
    "Scheduler",
    "Schedules",
    "Search",
    "Tasks",
    "TeamRunner",
    "Titler",
    "UsageLog",
}


def builds(node: ast.AST) -> str | None:
    """The root part a call constructs, if it constructs one (``Ledger(store)``, a model
    client from the environment)."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if name in ROOT_PARTS:
        return name
    if name == "from_environment" and isinstance(func, ast.Attribute):
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "ModelClient":
            return "ModelClient.from_environment"
    return None


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("Ledger(store)", "Ledger"),
        ("self.tasks = db.tasks.Tasks(app.store)", "Tasks"),
        ("ModelClient.from_environment(config.model)", "ModelClient.from_environment"),
        ("root.ledger.by_status(status)", None),
        ("Store.open(path)", None),  # the store is the app's: App.store opens it
    ],
)
def test_the_root_check_sees_a_part_built_on_the_spot(source, found):
    assert next(filter(None, map(builds, ast.walk(ast.parse(source)))), None) == found


def test_only_the_composition_root_builds_its_parts():
    found = []
    for module, path in modules():
        if module in ROOT:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if part := builds(node):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {part}")
    where = "\n".join(found)
    assert not found, f"built outside the composition root (daemon/runtime.py):\n{where}"


def test_modules_are_small():
    large = [
        f"{path.relative_to(PACKAGE.parent)}: {n} lines"
        for _, path in modules()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not large, f"modules over {MAX_LINES} lines:\n" + "\n".join(large)


def test_few_modules_sit_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


REPO = PACKAGE.parent
PUBLIC = {"smarthole", "smarthole.testing"}


def public_imports(source: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("smarthole"):
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("smarthole"))


def doc_code_blocks(text: str) -> Iterator[str]:
    for block in text.split("```python\n")[1:]:
        yield block.split("```", 1)[0]


def test_docs_and_example_plugins_use_only_the_public_face():
    sources = {str(path): path.read_text() for path in (REPO / "plugins").glob("*.py")}
    docs = (REPO / "docs" / "plugins.md").read_text()
    sources.update({f"docs/plugins.md block {n}": b for n, b in enumerate(doc_code_blocks(docs))})
    private = [
        f"{where}: {module}"
        for where, source in sources.items()
        for module in public_imports(source)
        if module not in PUBLIC
    ]
    assert not private, "imports past the public face:\n" + "\n".join(private)


def test_every_public_name_is_documented():
    import smarthole

    assert smarthole.__all__ == sorted(smarthole.__all__)
    docs = (REPO / "docs" / "plugins.md").read_text()
    missing = [name for name in smarthole.__all__ if f"`{name}`" not in docs]
    assert not missing, f"not in docs/plugins.md: {missing}"
