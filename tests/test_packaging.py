"""The source distribution is complete and its metadata is what an index shows.

The sdist is built (``python -m build --sdist --no-isolation``, about 10 s) from a copy of this
checkout's tracked files, so that no earlier build's ``*.egg-info/SOURCES.txt`` leaks into it,
and compared with ``git ls-files``: it must hold the whole test suite with its data, the
documentation site's sources and the project files, so that its tests and ``mkdocs build``
run from it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHIPPED_FOLDERS = ("tests", "docs", ".ci")
SHIPPED_FILES = {
    "CHANGELOG.md",
    "CITATION.cff",
    "CONTRIBUTING.md",
    "LICENSE",
    "README.md",
    "mkdocs.yml",
    "pyproject.toml",
}


def _tracked(*paths: str) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", *(paths or ["."])],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    return {p for p in out.split("\0") if p}


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> tarfile.TarFile:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout (the sdist is compared with git ls-files)")
    pytest.importorskip("build")
    tree = tmp_path_factory.mktemp("checkout")
    for name in _tracked():
        if (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name)
    # what running the tests and building the docs leave behind must not ship
    for folder in ("tests", "docs/hooks"):
        (tree / folder / "__pycache__").mkdir()
        (tree / folder / "__pycache__" / "module.cpython-311.pyc").write_bytes(b"")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), "."],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = out.glob("sentvec-*.tar.gz")
    return tarfile.open(path)


def _members(sdist: tarfile.TarFile) -> set[str]:
    return {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile() and "/" in m.name}


@pytest.mark.slow
def test_sdist_ships_tests_docs_and_project_files(sdist):
    names = _members(sdist)
    shipped = {n for n in names if n.split("/", 1)[0] in SHIPPED_FOLDERS}
    assert shipped == _tracked(*SHIPPED_FOLDERS)
    assert SHIPPED_FILES <= names
    assert {"tests/conftest.py", "tests/_helpers.py"} <= names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


@pytest.mark.slow
def test_sdist_metadata(sdist):
    (info,) = [
        m for m in sdist.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
    ]
    meta = Parser().parsestr(sdist.extractfile(info).read().decode("utf-8"))
    import sentvec

    assert meta["Version"] == sentvec.__version__
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Author"] == "sentvec developers"
    classifiers = meta.get_all("Classifier")
    for python in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {python}" in classifiers
    assert "Topic :: Scientific/Engineering :: Artificial Intelligence" in classifiers
    assert "Topic :: Text Processing :: Linguistic" in classifiers
    assert meta["Keywords"]
