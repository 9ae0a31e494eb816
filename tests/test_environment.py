"""Every ``SENTVEC_*`` environment variable is declared once (``sentvec._environment``), read
only through that declaration, and listed in the docs' table (``docs/configuration.md``)."""

from __future__ import annotations

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
