"""The package's import rules (docs/ARCHITECTURE.md), checked by walking the source with ``ast``.

* no import cycle between modules of ``sentvec`` (imports inside functions count too: a cycle
  that only closes at run time still ties the two modules together);
* no ``_private`` name (module, function, class or constant) imported from another subpackage
  (``sentvec.encoders``, ``sentvec.evaluation``, ...). Private modules at the package root
  (``sentvec._io``, ``sentvec._validation``, ...) are the package's shared utilities: their public
  names may be used everywhere, their private names nowhere outside them.
"""

from __future__ import annotations

import ast
import tokenize
from pathlib import Path

import pytest

import sentvec

ROOT = Path(sentvec.__file__).resolve().parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not _is_package(importer):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported attribute or None, line) for every import in a module."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, None, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, node)
            for a in node.names:
                if f"{mod}.{a.name}" in MODULES:  # `from pkg import submodule`
                    out.append((f"{mod}.{a.name}", None, node.lineno))
                else:
                    out.append((mod, a.name, node.lineno))
    return [(m, attr, line) for m, attr, line in out if m == "sentvec" or m.startswith("sentvec.")]


def _owner(module: str) -> str:
    """The subpackage a module belongs to (``sentvec`` for root modules)."""
    parts = module.split(".")
    if len(parts) >= 2 and f"sentvec.{parts[1]}" in MODULES and _is_package(f"sentvec.{parts[1]}"):
        return f"sentvec.{parts[1]}"
    return "sentvec"


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for name in MODULES:
        for mod, _, _ in _imports(name):
            if mod in MODULES and mod != name:
                graph[name].add(mod)
                # importing a.b.c runs a/__init__ and a/b/__init__ first
                parts = mod.split(".")
                for i in range(2, len(parts)):
                    parent = ".".join(parts[:i])
                    if parent != name and parent in MODULES:
                        graph[name].add(parent)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    # a package's __init__ that re-exports from its own modules is not a cycle partner
    graph = _graph()
    for name in MODULES:
        if _is_package(name):
            graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _private(attr: str | None) -> bool:
    return attr is not None and attr.startswith("_") and not attr.startswith("__")


def _private_violations() -> list[str]:
    bad = []
    for name in MODULES:
        me = _owner(name)
        foreign: set[str] = set()  # names bound to objects of other subpackages
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = _resolve(name, node)
                if (mod == "sentvec" or mod.startswith("sentvec.")) and _owner(mod) != me:
                    foreign.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("sentvec.") and _owner(a.name) != me and a.asname:
                        foreign.add(a.asname)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            base = node.value.func if isinstance(node.value, ast.Call) else node.value
            if isinstance(base, ast.Name) and base.id in foreign:
                bad.append(
                    f"{MODULES[name].relative_to(ROOT.parent)}:{node.lineno}: uses "
                    f"private {base.id}(...).{node.attr} of another subpackage"
                )
        for mod, attr, line in _imports(name):
            owner = _owner(mod)
            where = f"{MODULES[name].relative_to(ROOT.parent)}:{line}"
            private_module = [
                p for p in mod.split(".")[1:] if p.startswith("_") and p != "__init__"
            ]
            if owner != me and owner != "sentvec" and private_module:
                bad.append(f"{where}: imports private module {mod} of {owner}")
            if _private(attr) and _owner(mod) != me:
                bad.append(f"{where}: imports private name {attr} from {mod}")
            if (
                _private(attr)
                and owner == "sentvec"
                and me == "sentvec"
                and mod != name
                and mod.split(".")[-1].startswith("_")
            ):
                bad.append(f"{where}: imports private name {attr} from {mod}")
    return bad


def test_no_private_name_across_subpackages():
    assert _private_violations() == []


def test_every_subpackage_reexports_its_public_names():
    for name in MODULES:
        if not _is_package(name) or name == "sentvec":
            continue
        pkg = __import__(name, fromlist=["__all__"])
        assert getattr(pkg, "__all__", None), f"{name} has no __all__"


def test_top_level_type_checking_block_mirrors_lazy_names():
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    declared: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    for a in stmt.names:
                        declared[a.asname or a.name] = stmt.module
    assert declared == sentvec._LAZY


def _logical_lines(path: Path) -> int:
    """Statements in a module (tokenize's NEWLINE tokens): independent of how the formatter wraps
    a long call or signature over several physical lines."""
    with path.open("rb") as f:
        return sum(1 for tok in tokenize.tokenize(f.readline) if tok.type == tokenize.NEWLINE)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_size(name):
    lines = _logical_lines(MODULES[name])
    limit = 750 if name == "sentvec.sent2vec.kernels" else 450
    assert lines <= limit, f"{name} has {lines} logical lines (limit {limit}): split it by concept"


#: Longest function, in physical lines from its ``def`` (decorators aside) to its last line,
#: docstring included.
FUNCTION_LINES = 100
#: Exempt: the Sent2Vec training kernels and the libstdc++ sort they emulate (numba), any other
#: ``@njit`` kernel, and the argparse registration of a sub-command (``sentvec.cli.*.register``).
KERNEL_MODULES = {"sentvec.sent2vec.kernels", "sentvec.sent2vec._stdsort"}
#: Still longer than FUNCTION_LINES, each waiting to be split where a reader would split it.
LONG_FUNCTIONS = {
    "sentvec.cli.serve.run",
    "sentvec.cli.whiten_sweep.run_whiten_sweep",
    "sentvec.cluster.encode_file_distributed",
    "sentvec.distillation.distill",
    "sentvec.distillation.token_rows",
    "sentvec.encoders.static.StaticEncoder.encode",
    "sentvec.encoders.transformer.TransformerEncoder.from_pretrained",
    "sentvec.evaluation.layers.analyze_layers",
    "sentvec.evaluation.rte.score_rte",
    "sentvec.evaluation.sts.evaluate_sts",
    "sentvec.evaluation.table1.render_report",
    "sentvec.evaluation.transfer.evaluate_transfer",
    "sentvec.search.open_corpus_index",
}


def _is_kernel(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("njit" in ast.unparse(d) for d in node.decorator_list)


def _long_functions(name: str, source: str) -> list[str]:
    """``module.qualname (lines)`` of each function of module ``name`` (its ``source``) over
    FUNCTION_LINES lines."""
    out: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}.{child.name}"
                lines = child.end_lineno - child.lineno + 1
                registration = name.startswith("sentvec.cli.") and child.name == "register"
                if lines > FUNCTION_LINES and not (_is_kernel(child) or registration):
                    out.append(f"{qualname} ({lines} lines)")
                visit(child, f"{qualname}.<locals>")
            else:
                visit(child, prefix)

    visit(ast.parse(source), name)
    return out


def test_long_function_finder_names_methods_and_closures_and_exempts_kernels():
    def body(indent: int) -> str:
        return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(FUNCTION_LINES))

    source = (
        f"class C:\n    def long(self):\n{body(8)}    def short(self):\n        pass\n"
        f"def outer():\n    def inner():\n{body(8)}"
        f"@njit(cache=True)\ndef kernel():\n{body(4)}"
    )
    assert _long_functions("sentvec.m", source) == [
        f"sentvec.m.C.long ({FUNCTION_LINES + 1} lines)",
        f"sentvec.m.outer ({FUNCTION_LINES + 2} lines)",
        f"sentvec.m.outer.<locals>.inner ({FUNCTION_LINES + 1} lines)",
    ]
    registration = f"def register(parser):\n{body(4)}"
    assert _long_functions("sentvec.cli.x", registration) == []
    assert _long_functions("sentvec.x", registration) == [
        f"sentvec.x.register ({FUNCTION_LINES + 1} lines)"
    ]


@pytest.mark.parametrize("name", sorted(set(MODULES) - KERNEL_MODULES))
def test_function_size(name):
    source = MODULES[name].read_text(encoding="utf-8")
    long = [f for f in _long_functions(name, source) if f.split(" (")[0] not in LONG_FUNCTIONS]
    assert long == [], f"over {FUNCTION_LINES} lines: {long}; split them where a reader would"
