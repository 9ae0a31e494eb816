"""The first-run compile helpers of ``sentvec._jit``: the notice, the cache probe and the compile
child."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sentvec import _jit


def _module(tmp_path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_is_cached_reads_numbas_index_per_signature(tmp_path):
    mod = _module(
        tmp_path,
        "jit_probe_mod",
        "from numba import njit\n\n"
        "@njit(cache=True)\ndef f(x):\n    return x + 1\n\n"
        "@njit\ndef g(x):\n    return x + 1\n",
    )
    assert not _jit.is_cached(mod.f, (1,))  # a new module: nothing on disk yet
    assert mod.f(1) == 2
    assert _jit.is_cached(mod.f, (1,))  # compiled and saved by numba
    assert not _jit.is_cached(mod.f, (1.5,))  # another signature is not
    # no on-disk cache at all: "unknown", so a caller compiles in-process as usual
    assert _jit.is_cached(mod.g, (1,))


@pytest.mark.parametrize("value, expected", [("0", False), ("1", True)])
def test_spare_core_can_be_forced(monkeypatch, value, expected):
    monkeypatch.setenv("SENTVEC_COMPILE_CHILD", value)
    assert _jit.spare_core() is expected


def test_spare_core_guess_needs_two_cpus_and_a_free_one(monkeypatch):
    monkeypatch.delenv("SENTVEC_COMPILE_CHILD", raising=False)
    monkeypatch.setattr(_jit.os, "sched_getaffinity", lambda pid: {0})
    assert _jit.spare_core() is False
    monkeypatch.setattr(_jit.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(_jit.os, "getloadavg", lambda: (1.6, 1.0, 1.0))
    assert _jit.spare_core() is False  # both cores busy
    monkeypatch.setattr(_jit.os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    assert _jit.spare_core() is True  # one busy core (a command run just before this one)
    monkeypatch.setattr(_jit.os, "getloadavg", lambda: (0.2, 1.0, 1.0))
    assert _jit.spare_core() is True


def test_compile_child_runs_code_with_this_sentvec_and_can_be_stopped(tmp_path):
    out = tmp_path / "where.txt"
    child = _jit.compile_in_child(
        f"import sentvec, pathlib; pathlib.Path({str(out)!r}).write_text(sentvec.__file__)"
    )
    _jit.finish_child(child)
    assert child.returncode == 0
    import sentvec

    assert out.read_text() == sentvec.__file__
    slow = _jit.compile_in_child("import time; time.sleep(60)")
    t = time.monotonic()
    _jit.finish_child(slow, kill=True)
    assert slow.returncode is not None and time.monotonic() - t < 10
    _jit.finish_child(None)  # no child: nothing to do


@pytest.fixture
def notice_not_shown(monkeypatch):
    """This process as if it had not shown the compiling notice yet."""
    monkeypatch.setattr(_jit, "_shown", threading.Event())


def test_compiling_notice_off_a_terminal_says_so_once(capsys, notice_not_shown):
    with _jit.compiling_notice(show=False, after=0.0):  # --no-progress: logged only
        time.sleep(0.2)
    with _jit.compiling_notice(after=5.0):  # fast (cached): no notice
        pass
    assert capsys.readouterr().err == ""
    with _jit.compiling_notice(after=0.0, expected=9.6):
        time.sleep(0.2)
    err = capsys.readouterr().err
    assert err == "sentvec: compiling kernels, once per install: ~10 s\n"
    with _jit.compiling_notice(after=0.0):  # a second slow step of the same command
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_load_kernel_compiles_once_under_the_notice(monkeypatch, capsys, notice_not_shown):
    import numba

    @numba.njit
    def plus_one(x):
        return x + 1

    monkeypatch.setattr(_jit, "NOTICE_AFTER", 0.0)
    _jit.load_kernel(plus_one, (1,))
    assert capsys.readouterr().err == f"sentvec: {_jit.COMPILING_NOTICE}\n"
    _jit.load_kernel(plus_one, (2,))  # compiled for int64 already: silent
    assert capsys.readouterr().err == "" and plus_one(1) == 2


def test_first_tokenize_with_an_empty_numba_cache_says_it_compiles(tmp_path):
    """``sentvec tokenize`` with its stderr piped (not a terminal) and an empty numba cache:
    the first thing it writes is the notice, two seconds into compiling the Moses kernels
    (about 10 s). The test stops the process there, so it costs about 3 s."""
    import threading

    src = Path(sys.modules["sentvec"].__file__).parents[1]
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
        "SENTVEC_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH")) if p),
    }
    (tmp_path / "in.txt").write_text("Hello, world!\n", encoding="utf-8")
    argv = [sys.executable, "-m", "sentvec", "tokenize", "-i", str(tmp_path / "in.txt")]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    guard = threading.Timer(300, proc.kill)  # bounds the wait if nothing is ever written
    guard.start()
    try:
        first_line = proc.stderr.readline().decode()
    finally:
        guard.cancel()
        proc.kill()
        proc.wait()
        proc.stderr.close()
    assert first_line.startswith(f"sentvec: {_jit.COMPILING_NOTICE}: ~"), first_line


def test_no_compile_child_when_python_cannot_start(monkeypatch):
    def fail(*a, **k):
        raise OSError("no such interpreter")

    monkeypatch.setattr(subprocess, "Popen", fail)
    assert _jit.compile_in_child("pass") is None
