"""A missing optional dependency (an extra) is one error line naming the extra, exit code 2.

Each case runs the command line in a child process whose import system refuses the top-level
modules of one extra (a meta-path finder raising ``ModuleNotFoundError``, as when the extra is
not installed), and checks the whole output: nothing on stdout, one ``sentvec: error:`` line
naming ``pip install 'sentvec[EXTRA]'`` on stderr, before anything else is printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentvec._extras import EXTRAS, missing_extra_error, require_extra
from sentvec.exceptions import MissingExtraError

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "sent2vec-reference" / "tiny-bigram.bin"
SENTENCES = REPO / "tests" / "data" / "sent2vec-reference" / "sentences.txt"

# runs sentvec's console entry point with the modules named in $HIDE made unimportable
RUNNER = """
import importlib.abc, os, sys
HIDDEN = set(os.environ["HIDE"].split(","))
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
from sentvec.cli import console_main
sys.exit(console_main())
"""


def run_without(modules, argv, cwd):
    env = dict(os.environ, HIDE=",".join(modules), HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", RUNNER, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# (extra, modules hidden, command line): every command line that needs the extra
CASES = [
    ("serve", EXTRAS["serve"], ["serve", str(TINY), "--port", "0"]),
    ("serve", ["uvicorn"], ["serve", str(TINY), "--port", "0"]),
    ("static", EXTRAS["static"], ["eval-sts", "--model", "wordllama", "--tasks", "STS16"]),
    ("static", EXTRAS["static"], ["search", "--model", "wordllama-64", "--corpus", str(SENTENCES),
                                  "--query", "a cat"]),
    ("static", EXTRAS["static"], ["serve", "wordllama", "--port", "0"]),
    ("onnx", EXTRAS["onnx"], ["eval-sts", "--model", "minilm", "--model-backend", "onnx",
                              "--tasks", "STS16"]),
    ("onnx", ["onnx"], ["search", "--model", "minilm", "--model-backend", "onnx",
                        "--corpus", str(SENTENCES), "--query", "a cat"]),
    ("onnx", EXTRAS["onnx"], ["serve", "minilm", "--model-backend", "onnx", "--port", "0"]),
    ("dask", EXTRAS["dask"], ["encode", "--model", str(TINY), "--input", str(SENTENCES),
                              "--output", "vecs", "--dask-workers", "1"]),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "hidden", "argv"),
    CASES,
    ids=[f"{extra}-{'+'.join(h)}-{argv[0]}" for extra, h, argv in CASES],
)
def test_missing_extra_is_one_line_and_exit_2(extra, hidden, argv, tmp_path):
    proc = run_without(hidden, argv, tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("sentvec: error: ")
    assert f"pip install 'sentvec[{extra}]'" in lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written


@pytest.mark.slow
@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_every_command_parses_without_an_extra(extra, tmp_path):
    # the parser imports every sub-command's module: none may need an extra to load
    proc = run_without(EXTRAS[extra], ["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "serve" in proc.stdout and "eval-sts" in proc.stdout


def test_require_extra_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mteb" else real(name, *a)
    )
    with pytest.raises(MissingExtraError, match=r"pip install 'sentvec\[mteb\]'") as info:
        require_extra("mteb", "the MTEB adapter")
    assert info.value.extra == "mteb" and info.value.name == "mteb"
    assert isinstance(info.value, ImportError)
    require_extra("serve")  # installed here: no error


@pytest.mark.parametrize(("extra", "modules"), sorted(EXTRAS.items()))
def test_an_extras_module_not_found_maps_to_its_extra(extra, modules):
    for module in modules:
        err = missing_extra_error(ModuleNotFoundError("x", name=f"{module}.sub"))
        assert err is not None and err.extra == extra
        assert f"pip install 'sentvec[{extra}]'" in str(err)
    assert missing_extra_error(ModuleNotFoundError("x", name="numpy")) is None
