"""The rules of docs/ARCHITECTURE.md, each checked here by walking the source with ``ast``.

* no import cycle between modules of ``sentvec`` (imports inside functions count too: a cycle
  that only closes at run time still ties the two modules together);
* no ``_private`` name (module, function, class or constant) imported from another subpackage
  (``sentvec.encoders``, ``sentvec.evaluation``, ...). Private modules at the package root
  (``sentvec._io``, ``sentvec._validation``, ...) are the package's shared utilities: their public
  names may be used everywhere, their private names nowhere outside them;
* every subpackage re-exports its public names; nothing outside ``cli/`` imports ``cli/``;
* each name imported from the module that defines it, and no deprecated module or name used;
* only the modules of :data:`TORCH_MODULES` import torch, and Sent2Vec work never loads it;
* module and function sizes (:data:`MAX_MODULE_LINES`, :data:`MAX_FUNCTION_LINES`);
* no capability of an encoder found by ``getattr`` / ``hasattr`` on it;
* one home each: exception classes (``exceptions.py``), ``SENTVEC_*`` variables
  (``_environment.py``), the CPU count (``_parallel.py``).

A ``KNOWN_*`` set lists what breaks a rule today, by name; a test fails when a listed entry no
longer breaks it, so the sets can only shrink.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

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


def _rel(name: str) -> str:
    return str(MODULES[name].relative_to(ROOT.parent))


def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def test_nothing_outside_cli_imports_cli():
    """``cli/`` is argparse wiring over the public API; ``python -m sentvec`` is its entry."""
    bad = [
        f"{_rel(name)}:{line}: imports {mod}"
        for name in MODULES
        if _owner(name) != "sentvec.cli" and name != "sentvec.__main__"  # the entry point
        for mod, _, line in _imports(name)
        if mod == "sentvec.cli" or mod.startswith("sentvec.cli.")
    ]
    assert bad == []


# ---------------------------------------------------------------------------------- torch
#: The only modules that import torch (at the top or inside a function), and why.
TORCH_MODULES = {
    "sentvec.encoders.transformer": "the transformer encoder's forward pass",
    "sentvec.encoders.devices": "the torch device a transformer runs on",
    "sentvec.encoders.onnx_backend": "export to ONNX, tensors in and out of a session",
    "sentvec.encoders.pooling": "masked pooling of hidden states (inside functions)",
    "sentvec.distill.rows": "the teacher's thread count beside the corpus pass",
    "sentvec.integrations.sentence_transformers": "the exported sentence-transformers modules",
    "sentvec.cluster_worker": "torch's thread count on each Dask worker",
    "sentvec.static_training.train": "the rows' training (EmbeddingBag, sparse Adam)",
}


def _imports_torch(name: str) -> bool:
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "torch" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            if not node.level:
                return True
    return False


def test_only_the_listed_modules_import_torch():
    assert {name for name in MODULES if _imports_torch(name)} == set(TORCH_MODULES)


def test_sent2vec_work_never_loads_torch(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import sentvec\n"
        "from sentvec import Sent2Vec, load_encoder\n"
        "m = load_encoder(sys.argv[1])\n"
        "v = m.encode(['the cat sat on the mat .', 'hello world'])\n"
        "assert isinstance(m, Sent2Vec) and v.shape[0] == 2\n"
        "print(sorted(k for k in ('torch', 'transformers') if k in sys.modules))\n"
    )
    model = Path(__file__).parent / "data" / "sent2vec-reference" / "tiny-bigram.bin"
    out = subprocess.run(
        [sys.executable, "-c", code, str(model)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT.parent)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------- sizes
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100
#: numba kernel modules: exempt from both size limits (a kernel is one loop nest that splits
#: badly, and numba compiles each function separately). Functions decorated with a numba
#: ``jit`` are exempt wherever they are.
KERNEL_MODULES = {"sentvec.sent2vec.kernels", "sentvec.sent2vec._stdsort"}
#: Modules over the limit today (being split).
KNOWN_OVERSIZE_MODULES: set[str] = set()
#: Functions over the limit today (being split), as ``module:qualified name``.
KNOWN_OVERSIZE_FUNCTIONS: set[str] = set()


def _module_lines(name: str) -> int:
    return len(MODULES[name].read_text(encoding="utf-8").splitlines())


def _oversize_modules() -> set[str]:
    return {
        name
        for name in MODULES
        if name not in KERNEL_MODULES and _module_lines(name) > MAX_MODULE_LINES
    }


def _is_jitted(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in node.decorator_list)


def _functions(name: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function of a module, methods and nested ones included."""
    return _functions_of(_tree(name))


def _functions_of(tree: ast.AST) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` to the function's last line, docstring and nested functions included."""
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def _oversize_functions() -> set[str]:
    found = set()
    for name in MODULES:
        if name in KERNEL_MODULES:
            continue
        for qualname, node in _functions(name):
            if _is_jitted(node):
                continue
            if _owner(name) == "sentvec.cli" and qualname == "register":  # argparse wiring
                continue
            if _function_lines(node) > MAX_FUNCTION_LINES:
                found.add(f"{name}:{qualname}")
    return found


def test_module_size():
    oversize = _oversize_modules()
    new = sorted(f"{n} ({_module_lines(n)} lines)" for n in oversize - KNOWN_OVERSIZE_MODULES)
    assert new == [], f"modules over {MAX_MODULE_LINES} lines: split them by concept"
    fixed = sorted(KNOWN_OVERSIZE_MODULES - oversize)
    assert fixed == [], "no longer over the limit: remove them from KNOWN_OVERSIZE_MODULES"


def test_function_size():
    oversize = _oversize_functions()
    new = sorted(oversize - KNOWN_OVERSIZE_FUNCTIONS)
    assert new == [], f"functions over {MAX_FUNCTION_LINES} lines: split them"
    fixed = sorted(KNOWN_OVERSIZE_FUNCTIONS - oversize)
    assert fixed == [], "no longer over the limit: remove them from KNOWN_OVERSIZE_FUNCTIONS"


def test_function_size_counts_every_line_of_methods_and_nested_functions():
    # The size check above passes vacuously if the walk misses functions or miscounts lines:
    # a method and a nested function one line over the limit must be found, one at it must not.
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 2))
    at_limit = f'def f():\n    """Doc."""\n{body}\n'
    over = f"def g():\n{body}\n    y = 0\n    z = 0\n"
    nested = "\n".join("    " + line for line in over.splitlines())
    source = f"{at_limit}\nclass C:\n{nested}\n\ndef h():\n{nested}\n    return g\n"
    lengths = {q: _function_lines(n) for q, n in _functions_of(ast.parse(source))}
    assert lengths["f"] == MAX_FUNCTION_LINES
    assert lengths["C.g"] == lengths["h.g"] == MAX_FUNCTION_LINES + 1
    over_limit = {q for q, n in lengths.items() if n > MAX_FUNCTION_LINES}
    assert over_limit == {"C.g", "h", "h.g"}


def test_kernel_modules_exist():
    assert KERNEL_MODULES <= set(MODULES)


# ------------------------------------------------------------------------ capability probing
#: Names an encoder is bound to in the source; ``getattr(encoder, ...)`` / ``hasattr`` on one
#: discovers a capability by an attribute's name, which neither mypy nor a test sees renamed.
ENCODER_NAMES = {"encoder", "enc", "_encoder", "inner", "teacher"}


def _capability_probes(tree: ast.AST) -> int:
    n = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
        ):
            first = node.args[0]
            bound = first.id if isinstance(first, ast.Name) else getattr(first, "attr", None)
            n += bound in ENCODER_NAMES
    return n


def test_no_capability_probing_on_encoders():
    found = {name: n for name in MODULES if (n := _capability_probes(_tree(name)))}
    assert found == {}, "declare the capability in encoders/base.py and test it with isinstance"


def test_the_probe_finder_sees_getattr_on_an_encoder():
    tree = ast.parse("getattr(encoder, 'count_tokens', None)\nhasattr(self.encoder, 'x')\n")
    assert _capability_probes(tree) == 2
    assert _capability_probes(ast.parse("getattr(config, 'x', None)")) == 0


# ---------------------------------------------------------------------------------- one home
_BUILTIN_EXCEPTIONS = {
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
}
#: Raised and caught inside one module, never seen by a caller.
INTERNAL_EXCEPTIONS = {"sentvec.sent2vec._scan.TooManyTokens"}


def test_public_exception_classes_live_in_the_exceptions_module():
    from sentvec import exceptions

    bases = _BUILTIN_EXCEPTIONS | set(exceptions.__all__)
    found = []
    for name in MODULES:
        if name == "sentvec.exceptions":
            continue
        for node in ast.walk(_tree(name)):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            names = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if names & bases and f"{name}.{node.name}" not in INTERNAL_EXCEPTIONS:
                found.append(f"{_rel(name)}:{node.lineno}: {node.name}")
    assert found == [], "define public exception classes in sentvec/exceptions.py"


_SENTVEC_VARIABLE = re.compile(r"^SENTVEC_[A-Z0-9_]+$")


def _environ_reads(tree: ast.AST) -> list[tuple[int, ast.expr]]:
    """(line, key) of every ``os.environ.get(key)``, ``os.environ[key]`` (read) and
    ``os.getenv(key)`` of a module."""

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            f = node.func
            if (f.attr in ("get", "pop") and is_environ(f.value)) or f.attr == "getenv":
                out.append((node.lineno, node.args[0]))
        elif isinstance(node, ast.Subscript) and is_environ(node.value):
            if isinstance(node.ctx, ast.Load):
                out.append((node.lineno, node.slice))
    return out


def _key_text(module: str, key: ast.expr) -> str | None:
    """The text of an environment key: a literal, or a module constant's value."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name):
        value = getattr(importlib.import_module(module), key.id, None)
        return value if isinstance(value, str) else None
    return None


def test_sentvec_variables_are_read_only_through_their_declaration():
    found = []
    for name in MODULES:
        if name == "sentvec._environment":
            continue
        tree = _tree(name)
        for node in ast.walk(tree):  # the variable's name, spelled out
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _SENTVEC_VARIABLE.match(node.value):
                    found.append(f"{_rel(name)}:{node.lineno}: {node.value!r}")
        for line, key in _environ_reads(tree):
            text = _key_text(name, key)
            if text is None or text.startswith("SENTVEC_"):
                found.append(f"{_rel(name)}:{line}: reads os.environ[{ast.unparse(key)}]")
    assert found == [], "declare and read SENTVEC_* variables in sentvec/_environment.py"


def test_the_environment_checker_sees_a_direct_read():
    tree = ast.parse('import os\nx = os.environ.get("SENTVEC_X")\ny = os.environ["SENTVEC_Y"]\n')
    assert [_key_text("os", k) for _, k in _environ_reads(tree)] == ["SENTVEC_X", "SENTVEC_Y"]


def test_the_cpu_count_is_read_only_by_available_cpus():
    found = [
        f"{_rel(name)}:{node.lineno}: {node.attr}"
        for name in MODULES
        if name != "sentvec._parallel"
        for node in ast.walk(_tree(name))
        if isinstance(node, ast.Attribute) and node.attr in ("cpu_count", "sched_getaffinity")
    ]
    assert found == [], "use sentvec._parallel.available_cpus"


# ------------------------------------------------------------------------ imports from the home
#: Modules kept only so that users' imports keep working; nothing in ``src/`` imports them.
DEPRECATED_MODULES = {
    "sentvec.distillation",
    "sentvec.distill_corpus",
    "sentvec.distill_vocabulary",
}
#: Deprecated names (their replacement: ``detect_format``, ``by_encoder_type``), each kept where
#: it is defined and in its package's re-exports, and used nowhere else in ``src/``.
DEPRECATED_NAMES = {
    "model_kind": {"sentvec.encoders.loading", "sentvec.encoders"},
    "ENCODER_LOADERS": {"sentvec.encoders.pipeline", "sentvec.encoders"},
    "static_model_format": {"sentvec.encoders.static_loaders"},
}
#: ``from module import name`` through a module that only re-exports the name, per importing
#: module today (the counts only shrink).
KNOWN_IMPORTS_THROUGH_REEXPORTS = {
    "sentvec.cli._args": 3,
    "sentvec.encoders.transformer": 1,
    "sentvec.serve.app": 4,
    "sentvec.serve.http_limits": 1,
    "sentvec.serve.protocol": 1,
    "sentvec.serve.security": 1,
}


def _top_level_bindings(name: str) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """(names a module defines, name -> (module, name) it imports from) at its top level,
    ``if`` / ``try`` blocks included."""
    defined: set[str] = set()
    imported: dict[str, tuple[str, str]] = {}
    stack: list[ast.stmt] = list(_tree(name).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                imported[a.asname or a.name] = (_resolve(name, node), a.name)
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse)
            stack.extend(s for h in getattr(node, "handlers", []) for s in h.body)
    return defined, imported


def _home(module: str, name: str) -> str:
    """The module that defines ``name``, following ``module``'s re-exports."""
    for _ in range(10):
        if module not in MODULES or _is_package(module):
            return module
        defined, imported = _top_level_bindings(module)
        if name in defined or name not in imported or imported[name][1] != name:
            return module
        module = imported[name][0]
    return module


def _imports_through_reexports(name: str) -> list[str]:
    found = []
    for node in ast.walk(_tree(name)):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = _resolve(name, node)
        if module not in MODULES or _is_package(module):
            continue
        for a in node.names:
            if f"{module}.{a.name}" not in MODULES and _home(module, a.name) != module:
                found.append(f"{_rel(name)}:{node.lineno}: {a.name} from {module}")
    return found


def test_src_imports_each_name_from_the_module_that_defines_it():
    """A split module's old home re-exports what moved, for users; ``src/`` imports the home."""
    found = {name: _imports_through_reexports(name) for name in MODULES}
    found = {name: f for name, f in found.items() if f}
    more = {n: f for n, f in found.items() if len(f) > KNOWN_IMPORTS_THROUGH_REEXPORTS.get(n, 0)}
    assert more == {}, "import these names from the module that defines them"
    fewer = {n: c for n, c in KNOWN_IMPORTS_THROUGH_REEXPORTS.items() if len(found.get(n, [])) < c}
    assert fewer == {}, "fewer imports through re-exports: lower KNOWN_IMPORTS_THROUGH_REEXPORTS"


def test_the_home_finder_follows_reexports():
    assert _home("sentvec._io", "check_input_file") == "sentvec._path_checks"
    assert _home("sentvec.sent2vec.binfile", "ModelFormatError") == "sentvec.exceptions"
    assert _home("sentvec._path_checks", "check_input_file") == "sentvec._path_checks"


def test_src_uses_no_deprecated_module_or_name():
    found = []
    for name in MODULES:
        if name in DEPRECATED_MODULES:
            continue
        found += [
            f"{_rel(name)}:{line}: imports {mod}"
            for mod, _, line in _imports(name)
            if mod in DEPRECATED_MODULES
        ]
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used = node.id
            elif isinstance(node, ast.Attribute):
                used = node.attr
            elif isinstance(node, ast.alias):
                used = node.name
            else:
                continue
            if used in DEPRECATED_NAMES and name not in DEPRECATED_NAMES[used]:
                found.append(f"{_rel(name)}:{getattr(node, 'lineno', '?')}: uses {used}")
    assert found == [], "use sentvec.distill and sentvec.encoders.formats instead"
