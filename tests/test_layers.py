"""The package's layers, read from the source (docs/design.md, Layers).

Every import between files of cli_org/ is read with `ast`, lazy ones inside functions
included (only `if TYPE_CHECKING:` blocks are left out: they never run). Then:
- no cycle between files, and none between parts (a top-level module or package; each
  face under faces/ is a part of its own);
- a part imports only parts of its own layer or below (LAYERS);
- at most 8 modules sit loose at the top of cli_org/;
- the library below the faces never imports click, and no library part imports a face.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cli_org"

# Bottom to top; a part may import its own layer and the ones below.
LAYERS = [
    {"cli_org", "errors", "limits", "text", "shaping", "local", "config"},  # foundations
    {"db"},
    {"vault"},  # the query model and the vault's search
    {"checks"},  # the write checks (the injection classifier runs the query model)
    {"store", "recall", "session", "archive", "evaluation"},  # features
    {"org"},  # the one object every face opens, and the registry of what each face offers
    {"setup"},  # wires a harness to the faces: approves the tools the registry calls reads
    {"faces", "faces.render", "faces.cli", "faces.mcp", "faces.web", "faces.warm", "__main__"},  # faces
]
MAX_TOP_MODULES = 8


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["cli_org", *path.relative_to(PACKAGE).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    path, package = MODULES[name]
    tree = ast.parse(path.read_text("utf-8"))
    skipped = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    here = name.split(".") if package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{module}.{alias.name}" in MODULES:
                    out.add(f"{module}.{alias.name}")
                elif module in MODULES:
                    out.add(module)
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in MODULES}
    return out - {name}


GRAPH = {name: _imports(name) for name in MODULES}


def part(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "cli_org"
    return ".".join(parts[:2]) if parts[0] == "faces" and len(parts) > 1 else parts[0]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _part_graph() -> dict[str, set[str]]:
    parts: dict[str, set[str]] = {}
    for module, deps in GRAPH.items():
        parts.setdefault(part(module), set()).update(part(d) for d in deps if part(d) != part(module))
    return parts


def test_no_import_cycle_between_files():
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH) or [])


def test_no_import_cycle_between_parts():
    found = _cycle(_part_graph())
    assert found is None, " -> ".join(found or [])


def test_every_part_has_a_layer_and_imports_only_its_own_or_lower():
    rank = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    parts = _part_graph()
    assert set(parts) <= set(rank), f"parts with no layer: {sorted(set(parts) - set(rank))}"
    upward = [(a, b) for a, deps in parts.items() for b in deps if rank[b] > rank[a]]
    assert not upward, f"imports up the layers: {upward}"


def test_few_loose_modules_at_the_top():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_TOP_MODULES, loose


def test_the_library_never_imports_a_face_or_click():
    face_layer = LAYERS[-1]
    for module, (path, _package) in MODULES.items():
        if part(module) in face_layer:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {
            n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level
        }
        assert not names & {"click", "fastapi", "mcp", "uvicorn"}, (module, names & {"click", "fastapi", "mcp"})
        assert not {part(d) for d in GRAPH[module]} & face_layer, module


def test_the_checker_sees_a_cycle_and_an_upward_import():
    """The rules above can fail: a made-up graph with a cycle and an upward edge."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert part("cli_org.faces.web.pages.facts") == "faces.web"
    assert part("cli_org.store.facts") == "store"
    # a real edge from the store to the query model's part is allowed, the reverse is not
    rank = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    assert rank["vault"] < rank["store"]
