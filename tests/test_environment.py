"""Every ``SENTVEC_*`` environment variable is declared once (``sentvec._environment``), read
only through that declaration, and listed in the docs' table (``docs/configuration.md``)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import sentvec
from sentvec import _environment
from sentvec._environment import VARIABLES, default_cache_dir

ROOT = Path(sentvec.__file__).resolve().parent
DOC = ROOT.parents[1] / "docs" / "configuration.md"
_NAME = re.compile(r"^SENTVEC_[A-Z0-9_]+$")


def _doc_rows() -> list[tuple[str, str, str]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `SENTVEC_") and len(cells) == 3:
            rows.append((cells[0].strip("`"), cells[1], cells[2]))
    return rows


def test_docs_table_lists_every_variable_as_declared():
    declared = [(v.name, v.default, v.meaning) for v in VARIABLES]
    assert _doc_rows() == declared


def test_every_declared_variable_is_listed_and_named_sentvec():
    module_vars = [
        v for v in vars(_environment).values() if isinstance(v, _environment.EnvironmentVariable)
    ]
    assert sorted(v.name for v in module_vars) == sorted(v.name for v in VARIABLES)
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)
    assert all(_NAME.match(v.name) for v in VARIABLES)


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
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name):  # a module constant: its value
        value = getattr(importlib.import_module(module), key.id, None)
        return value if isinstance(value, str) else None
    return None


def test_no_module_reads_a_sentvec_variable_past_its_declaration():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "_environment.py":
            continue
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(p for p in rel.parts if p != "__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # the name itself, spelled out
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _NAME.match(node.value):
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
        for line, key in _environ_reads(tree):
            text = _key_text(module, key)
            if text is None or text.startswith("SENTVEC_"):
                found.append(f"{rel}:{line}: reads os.environ[{ast.unparse(key)}]")
    assert found == [], "read SENTVEC_* variables through sentvec._environment"


def test_the_checker_sees_a_direct_read():
    tree = ast.parse('import os\nx = os.environ.get("SENTVEC_X")\ny = os.environ["SENTVEC_Y"]\n')
    keys = [_key_text("os", k) for _, k in _environ_reads(tree)]
    assert keys == ["SENTVEC_X", "SENTVEC_Y"]


def test_cache_root_follows_the_variable(monkeypatch, tmp_path):
    from sentvec.cache import default_cache_dir as from_cache
    from sentvec.encoders.models import cache_dir

    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path == from_cache()
    assert cache_dir() == tmp_path / "models"
    monkeypatch.setenv("SENTVEC_CACHE", "")
    assert default_cache_dir() == Path.home() / ".cache" / "sentvec"


def test_the_tokenizer_finds_its_cache_without_the_vector_cache_module():
    import subprocess
    import sys

    code = (
        "import sys, sentvec.sent2vec.moses as m, sentvec.sent2vec._sidecar as s\n"
        "m._tables_path('0'); s.candidates(__import__('pathlib').Path('x.bin'))\n"
        "print('sentvec.cache' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
