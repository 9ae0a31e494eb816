"""The first-run compile helpers of ``sentvec._jit``: the notice, the cache probe and the compile
child (issue 21)."""

from __future__ import annotations

import importlib.util
import subprocess
import time

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


def test_compiling_notice_off_a_terminal_says_what_it_does(capsys):
    with _jit.compiling_notice(show=True, after=0.0):
        time.sleep(0.2)
    err = capsys.readouterr().err
    assert f"sentvec: {_jit.COMPILING_NOTICE}\n" in err
    assert "sentvec: kernels compiled in" in err
    with _jit.compiling_notice(show=True, after=5.0):  # fast (cached): no notice
        pass
    assert capsys.readouterr().err == ""


def test_no_compile_child_when_python_cannot_start(monkeypatch):
    def fail(*a, **k):
        raise OSError("no such interpreter")

    monkeypatch.setattr(subprocess, "Popen", fail)
    assert _jit.compile_in_child("pass") is None
