"""The documentation runs as written.

* Every fenced ``python`` and shell (``bash``, ``sh``, ``shell``, ``console``) block of README.md
  and of each docs page that declares itself runnable (an HTML comment starting
  ``<!-- runnable`` on its first line) is executed, the blocks of one page in document order,
  the Python blocks in one namespace, as a reader pasting them would. A shell block holds
  ``sentvec`` commands (``\\`` continues a line; ``#`` starts a comment); each runs through
  ``sentvec.cli.main`` and must exit with 0.
* Any other block says why it is not run, in an HTML comment on the line before it:
  ``<!-- not-run: REASON -->`` (it needs data a user does not have, a network, a running server,
  or it stands for the reader's own files). A block that installs (``pip install``) is what
  CI's ``.ci/run`` runs; it is not run here.
* A long block may run on small stand-in data: ``<!-- test-with: OLD => NEW; OLD2 => NEW2 -->``
  on the line before it replaces text in the block before it runs; the command's shape (its
  sub-command and options) stays the reader's.

Every page runs from a scratch directory like a clone's root: it holds the clone's ``tests/``
and ``src/`` folders and its ``.gitignore`` (the pages' paths are relative to a clone), offline,
and the README must leave no file there that ``git status`` would list as new. For speed, the
``minilm`` alias resolves to a 2-layer slice of MiniLM (the ``tiny_minilm_dir`` fixture) here:
same tokenizer, same hidden size, same code paths; everything else is as written.

The API reference pages are generated from ``sentvec.__all__`` (``docs/hooks/api_reference.py``);
a test checks that they name every public name.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

import sentvec

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
RUNNABLE = "<!-- runnable"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SHELL = frozenset({"bash", "sh", "shell", "console"})
_NOT_RUN = re.compile(r"^<!-- not-run: (?P<why>.+?) -->$")
_TEST_WITH = re.compile(r"^<!-- test-with: (?P<subs>.+?) -->$")


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced block of a Markdown page and the marker on the line before it, if any."""

    page: Path
    line: int
    language: str
    body: str
    not_run: str | None
    substitutions: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    def runnable_text(self) -> str:
        text = self.body
        for old, new in self.substitutions:
            assert old in text, f"{self.name}: test-with text {old!r} is not in the block"
            text = text.replace(old, new)
        return text


def page_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order, with their markers."""
    text = path.read_text("utf-8")
    blocks = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        not_run = _NOT_RUN.match(before)
        test_with = _TEST_WITH.match(before)
        subs: tuple[tuple[str, str], ...] = ()
        if test_with:
            pairs = [part.split(" => ") for part in test_with["subs"].split("; ")]
            assert all(len(p) == 2 for p in pairs), f"{path}: bad test-with {before!r}"
            subs = tuple((a, b) for a, b in pairs)
        blocks.append(
            Block(
                page=path,
                line=text.count("\n", 0, m.start()) + 1,
                language=m.group(1),
                body=m.group(2),
                not_run=not_run["why"] if not_run else None,
                substitutions=subs,
            )
        )
    return blocks


def fenced_blocks(path: Path, language: str) -> list[str]:
    """The bodies of the ``language`` fenced blocks of a Markdown file, in order."""
    return [b.body for b in page_blocks(path) if b.language == language]


def doc_pages() -> list[Path]:
    return [README, *sorted((REPO / "docs").rglob("*.md"))]


def runnable_pages() -> list[Path]:
    pages = [README]
    for page in sorted((REPO / "docs").rglob("*.md")):
        lines = page.read_text("utf-8").splitlines()
        if lines and lines[0].startswith(RUNNABLE):
            pages.append(page)
    return pages


def is_install(block: Block) -> bool:
    return block.language in SHELL and "pip install" in block.body


def shell_commands(text: str) -> list[str]:
    """The command lines of a shell block: continuations joined, blank and comment lines out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [
        ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]


@pytest.fixture
def scratch(tmp_path, monkeypatch, tiny_minilm_dir):
    """A working directory like a clone's root, with ``minilm`` as the 2-layer slice."""
    from sentvec.encoders import models

    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "tests").symlink_to(REPO / "tests")
    (clone / "src").symlink_to(REPO / "src")
    shutil.copy(REPO / ".gitignore", clone / ".gitignore")
    monkeypatch.chdir(clone)
    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache"))  # outside, as ~/.cache is
    monkeypatch.setattr(models, "minilm_path", lambda: Path(tiny_minilm_dir))
    return clone


def untracked_not_ignored(clone: Path) -> list[str]:
    """What ``git status`` in a clone would list as new files after the examples ran."""
    subprocess.run(["git", "init", "-q", str(clone)], check=True, capture_output=True)
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # tests/, src/ and .gitignore are tracked files of a real clone
    return [
        line[3:]
        for line in out.splitlines()
        if line.startswith("?? ") and line[3:] not in ("tests", "src", ".gitignore")
    ]


def test_some_pages_are_runnable():
    names = [p.name for p in runnable_pages()]
    assert names[0] == "README.md" and "getting-started.md" in names and "distill.md" in names
    assert all(fenced_blocks(p, "python") for p in runnable_pages()[:2])


def test_every_block_is_run_or_says_why():
    """A reader may paste any block: each one is run by this file, or says why it is not."""
    runnable = set(runnable_pages())
    unexplained = []
    for page in doc_pages():
        for block in page_blocks(page):
            if block.language not in SHELL | {"python"} or block.not_run or is_install(block):
                continue
            if page not in runnable:
                unexplained.append(f"{block.name}: on a page that is not runnable")
                continue
            if block.language in SHELL:
                for cmd in shell_commands(block.runnable_text()):
                    if shlex.split(cmd, comments=True)[0] != "sentvec":
                        unexplained.append(f"{block.name}: {cmd!r} is not a sentvec command")
    assert not unexplained, "run these blocks or mark them <!-- not-run: why -->:\n" + "\n".join(
        unexplained
    )


def test_markers_name_a_reason_and_stand_before_a_block():
    for page in doc_pages():
        lines = page.read_text("utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.startswith(("<!-- not-run", "<!-- test-with")):
                assert _NOT_RUN.match(line) or _TEST_WITH.match(line), (page, i + 1, line)
                assert i + 1 < len(lines) and lines[i + 1].startswith("```"), (page, i + 1)


#: Words that narrate how the software was made rather than what it does; that history
#: belongs in CHANGELOG.md only. Raw records (``docs/results/*.log``, ``.json``) are not pages.
PROCESS_WORDS = re.compile(
    r"\bissues? #?\d+|\bsittings?\b|(?<![.\w])sessions?\b|\bthe brief\b|\bbreak-it\b"
    r"|\bhostile pass\b|\bthis branch\b",
    re.I,
)


def test_pages_teach_without_the_history_of_their_making():
    pages = [*doc_pages(), REPO / "CONTRIBUTING.md"]
    found = [
        f"{page.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m[0]!r}"
        for page in pages
        for text in [page.read_text("utf-8")]
        for m in PROCESS_WORDS.finditer(text)
    ]
    assert not found, "say what the software does, not how it was made:\n" + "\n".join(found)


#: The same in source and tests, where "session" is a technical word (an ONNX Runtime session,
#: a pytest fixture's scope): issue numbers, numbered rows of a work list, the team's passes.
CODE_PROCESS_WORDS = re.compile(
    r"\bissues? ?#?\d+|\bissue_?\d+|\b(?:first|second|third|fourth|fifth) session\b"
    r"|\bsittings?\b|\bbreak-it\b|\bhostile pass\b|\bthe team\b|\bthe brief\b|\bthis branch\b"
    r"|\b[Rr]ows? \d+(?:-\d+)?(?::|, the)",
    re.I,
)
#: Test files are named after what they cover.
PROCESS_FILE_NAMES = re.compile(r"issue|hardening|session|break_?it|hostile", re.I)


def test_code_and_tests_say_what_they_do_not_how_they_were_made():
    files = [*sorted((REPO / "src").rglob("*.py")), *sorted((REPO / "tests").rglob("*.py"))]
    found = [
        f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m[0]!r}"
        for path in files
        if path != Path(__file__).resolve()  # the patterns themselves
        for text in [path.read_text("utf-8")]
        for m in CODE_PROCESS_WORDS.finditer(text)
    ]
    found += [
        str(path.relative_to(REPO))
        for path in files
        if PROCESS_FILE_NAMES.search(path.name) or PROCESS_FILE_NAMES.search(path.parent.name)
    ]
    assert not found, "say what the code does and name tests after it:\n" + "\n".join(found)


_CODE_SPAN_WITH_ESCAPED_PIPE = re.compile(r"`[^`\n]*\\\|[^`\n]*`")


def test_table_cells_write_a_pipe_in_code_as_an_entity():
    """Python-Markdown's tables keep the backslash of ``\\|`` inside a code span, so the built
    page would show it: a pipe in a table cell's code is ``<code>a &#124; b</code>``."""
    found = [
        f"{page.relative_to(REPO)}: {line.strip()[:80]}"
        for page in doc_pages()
        for line in page.read_text("utf-8").splitlines()
        if line.lstrip().startswith("|") and _CODE_SPAN_WITH_ESCAPED_PIPE.search(line)
    ]
    assert not found, "\n".join(found)


def run_page(page: Path, capsys) -> dict:
    """Run the blocks of ``page`` in order (Python in one namespace, shell commands through
    ``sentvec.cli.main``); returns the Python namespace."""
    from sentvec.cli import main

    namespace: dict = {"__name__": "__docs__"}
    for block in page_blocks(page):
        if block.not_run or is_install(block):
            continue
        if block.language == "python":
            exec(compile(block.runnable_text(), block.name, "exec"), namespace)
        elif block.language in SHELL:
            for cmd in shell_commands(block.runnable_text()):
                rc = main(shlex.split(cmd, comments=True)[1:])
                assert rc == 0, (block.name, cmd, capsys.readouterr().err[-2000:])
    return namespace


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_runs_as_written(page, scratch, capsys):
    namespace = run_page(page, capsys)
    out = capsys.readouterr().out
    if page == README:  # what the README's comments promise
        assert "(3, 384) float32" in out
        assert "[[0]]" in out
        assert namespace["V"].shape == (2, 16)
        assert set(namespace["res"].task_scores) == {"STS16"}
        assert (scratch / "s2v.bin").is_file() and (scratch / "s2v-dir").is_dir()
        assert (scratch / "vectors.npy").is_file() and (
            scratch / "vecs" / "manifest.json"
        ).is_file()
        assert (scratch / "minilm-st" / "modules.json").is_file()
        assert (scratch / "minilm-static" / "model.safetensors").is_file()
        assert (scratch / "s2v.bin").stat().st_size < 2**21  # a small model (-bucket)
        assert untracked_not_ignored(scratch) == []  # a clone stays clean (.gitignore covers it)
    if page.name == "distill.md":
        assert "(2, 256) float32" in out


def _tour_lines() -> list[str]:
    text = README.read_text("utf-8")
    section = text[text.index("## Command line in 10 lines") :]
    block = fenced_blocks_in(section, "bash")[0]
    return [ln for ln in block.splitlines() if ln.strip()]


def fenced_blocks_in(text: str, language: str) -> list[str]:
    return [m.group(2) for m in _FENCE.finditer(text) if m.group(1) == language]


def test_cli_tour_is_ten_sentvec_commands():
    lines = _tour_lines()
    assert len(lines) == 10
    assert all(shlex.split(ln, comments=True)[0] == "sentvec" for ln in lines)


_OUTPUT_OPTION = re.compile(r"(?:^|\s)(?:-o|-output|--output|--out|--json)\s+(\S+)")


def test_readme_commands_write_where_gitignore_covers():
    """Every output a README command names is ignored by git in a clone."""
    outputs = []
    for block in fenced_blocks(README, "bash"):
        for line in block.splitlines():
            outputs += _OUTPUT_OPTION.findall(line.split("#", 1)[0])
    assert {"s2v.bin", "minilm-st", "minilm-static"} <= set(outputs)
    for path in outputs:
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path], cwd=REPO, check=False
        )
        assert ignored.returncode == 0, f"{path} is not covered by .gitignore"


def test_readme_is_a_landing_page():
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 200
    # the CI runs the README's test command: .ci/run must hold the same line
    assert "python -m pytest -q -n 2 " in text
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    assert re.search(r"^python3? -m pytest -q -n 2$", ci, re.M)
    assert re.search(r'pip install (-q )?-e "\.\[dev\]"', ci)


def test_local_links_of_readme_resolve():
    text = README.read_text("utf-8")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (REPO / target).exists(), target


INSTALL_PAGES = [README, REPO / "CONTRIBUTING.md", REPO / "docs" / "getting-started.md"]
VENV_LINE = "python3 -m venv .venv && . .venv/bin/activate"


def test_install_instructions_agree():
    """One statement everywhere: Python 3.11-3.13, from a clone, in a fresh venv."""
    for page in INSTALL_PAGES:
        bash = "\n".join(fenced_blocks(page, "bash"))
        assert VENV_LINE in bash, page.name
        assert 'pip install -e ".[dev]"' in bash, page.name
    for page in (README, REPO / "docs" / "getting-started.md"):
        assert "Python 3.11, 3.12 or 3.13." in page.read_text("utf-8"), page.name
    # no page installs sentvec itself from a package index: every page installs from a clone
    pages = [README, REPO / "CONTRIBUTING.md", *(REPO / "docs").rglob("*.md")]
    from_index = re.compile(r"pip install\s+(?:-\S+\s+)*['\"]?sentvec\b")
    for page in pages:
        if "results" not in page.relative_to(REPO).parts:
            for block in fenced_blocks(page, "bash"):
                assert not from_index.search(block), (page.name, from_index.search(block)[0])
    # every extra of pyproject.toml is named on the getting-started page
    meta = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    text = (REPO / "docs" / "getting-started.md").read_text("utf-8")
    for extra in meta["project"]["optional-dependencies"]:
        assert f"`{extra}`" in text, extra


def _api_hook():
    spec = importlib.util.spec_from_file_location(
        "api_reference", REPO / "docs/hooks/api_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_names_every_public_name():
    hook = _api_hook()
    pages = {area: hook.api_reference_markdown(area) for area in hook.AREAS}
    placed = [path for path, _ in hook.public_names()]
    for name in sentvec.__all__:
        if name != "__version__":
            assert f"sentvec.{name}" in placed, name
    # each public object is documented where it is defined, on exactly one page, and every
    # page's marker names an area
    for path, module in hook.public_names():
        block = f"::: {module}.{path.rsplit('.', 1)[1]}\n"
        assert sum(block in page for page in pages.values()) == 1, path
    for page in sorted((REPO / "docs" / "api").glob("*.md")):
        for area in hook.MARKER.findall(page.read_text("utf-8")):
            assert area in hook.AREAS, (page.name, area)


def test_version_is_one_string():
    """``sentvec.__version__`` is the one source; the changelog and citation agree with it."""
    from packaging.version import Version

    meta = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert "version" not in meta["project"] and "version" in meta["project"]["dynamic"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sentvec.__version__"}
    version = Version(sentvec.__version__)
    changelog = (REPO / "CHANGELOG.md").read_text("utf-8")
    releases = re.findall(r"^## \[(\d[^\]]*)\] - (\d{4}-\d\d-\d\d)$", changelog, re.M)
    latest, date = releases[0]
    if version.is_devrelease:  # work after the latest release, listed under "Unreleased"
        assert "## [Unreleased]" in changelog and version > Version(latest)
    else:
        assert Version(latest) == version
    # the citation names the latest release and its date
    citation = (REPO / "CITATION.cff").read_text("utf-8")
    assert re.search(rf"^version: {re.escape(latest)}$", citation, re.M)
    assert f'date-released: "{date}"' in citation
    # every version heading is a link with its definition at the bottom
    for name in re.findall(r"^## \[([^\]]+)\]", changelog, re.M):
        assert re.search(rf"^\[{re.escape(name)}\]: \S+$", changelog, re.M), name
