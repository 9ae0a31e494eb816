"""Outputs that are inputs, FIFOs and devices given as models or inputs, and temporary files
left by killed writers, through the command line (docs/RELIABILITY.md lists each)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sentvec.cli import main

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODEL = REF / "tiny-bigram.bin"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture
def files(tmp_path):
    """A corpus c.txt (with a symbolic link l.txt and a hard link h.txt to it), a model m.bin and a
    folder d holding a copy of both."""
    shutil.copy(REF / "sentences.txt", tmp_path / "c.txt")
    (tmp_path / "l.txt").symlink_to(tmp_path / "c.txt")
    os.link(tmp_path / "c.txt", tmp_path / "h.txt")
    shutil.copy(MODEL, tmp_path / "m.bin")
    (tmp_path / "d").mkdir()
    shutil.copy(MODEL, tmp_path / "d" / "m.bin")
    shutil.copy(REF / "sentences.txt", tmp_path / "d" / "c.txt")
    return tmp_path


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# each: argv ({t} = the folder of `files`), then a word of the input the message names
SAME_FILE_CASES = [
    (
        ["train-sent2vec", "-input", "{t}/c.txt", "-output", "{t}/c.txt", "--format", "bin"],
        "-input",
    ),
    (["train-sent2vec", "-input", "{t}/m.bin", "-output", "{t}/m.bin"], "-input"),
    (["train-sent2vec", "-input", "{t}/d/c.txt", "-output", "{t}/d"], "holds -input"),
    (["train-sent2vec", "-input", "{t}/c.txt", "-output", "x", "--report", "{t}/l.txt"], "-input"),
    (["embed", "{t}/m.bin", "-i", "{t}/c.txt", "-o", "{t}/c.txt"], "--input"),
    (["embed", "{t}/m.bin", "-i", "{t}/c.txt", "-o", "{t}/l.txt"], "--input"),
    (["tokenize", "-i", "{t}/c.txt", "-o", "{t}/c.txt"], "--input"),
    (["tokenize", "-i", "{t}/l.txt", "-o", "{t}/h.txt"], "--input"),
    (["convert", "{t}/m.bin", "{t}/m.bin"], "source"),
    (["convert", "{t}/d/m.bin", "{t}/d"], "holds source"),
    (
        ["encode", "--model", "{t}/m.bin", "--input", "{t}/d/c.txt", "--output", "{t}/o"]
        + ["--fit-whitening", "{t}/d"],
        "holds --input",
    ),
    (["encode", "--model", "{t}/d", "--input", "{t}/c.txt", "--output", "{t}/d"], "--model"),
    (
        ["search", "--model", "{t}/m.bin", "--corpus", "{t}/d/c.txt", "--index", "{t}/d"]
        + ["--query", "x"],
        "holds --corpus",
    ),
    (["export", "--model", "{t}/d/m.bin", "--output", "{t}/d"], "holds --model"),
    (["eval-sts", "--model", "{t}/m.bin", "--json", "{t}/m.bin"], "--model"),
    (["eval-transfer", "--model", "{t}/m.bin", "--json", "{t}/m.bin"], "--model"),
    (["layers", "--model", "{t}/d", "--out", "{t}/d"], "--model"),
    (["whiten-sweep", "--model", "{t}/d", "--out", "{t}/d"], "--model"),
    (["report", "--sent2vec", "{t}/m.bin", "--out", "{t}/m.bin"], "--sent2vec"),
    (["report", "--models", "{t}/d", "--out", "{t}/h.txt", "--token-corpus", "{t}/c.txt"], "--"),
]


@pytest.mark.parametrize(
    "argv, named", SAME_FILE_CASES, ids=[f"{c[0][0]}-{i}" for i, c in enumerate(SAME_FILE_CASES)]
)
def test_an_output_that_is_an_input_is_refused_before_any_work(
    files, capsys, monkeypatch, argv, named
):
    """`train-sent2vec -input x -output x`, `embed -i f -o f` and `tokenize -i f -o f`
    replaced the input with the results (rc 0). Every command that reads and writes files now
    refuses, before loading anything, an output that is an input (also through a symbolic or
    hard link, or a directory replaced whole that holds the input)."""
    import sentvec.encoders
    import sentvec.sent2vec.model

    def no_work(*a, **k):
        raise AssertionError("work started before the output was checked against the inputs")

    monkeypatch.setattr(sentvec.encoders, "load_encoder", no_work)
    monkeypatch.setattr(sentvec.sent2vec.model.Sent2Vec, "load", no_work)
    monkeypatch.chdir(files)
    before = _snapshot(files)
    assert main([a.replace("{t}", str(files)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "would destroy the input" in err and named in err, err
    assert _snapshot(files) == before


def test_distinct_outputs_and_stdio_still_pass(files, capsys):
    """The check refuses only real collisions: another file, and /dev/stdin -> /dev/stdout
    (on a terminal both are the same device), go through."""
    from sentvec._io import check_outputs_not_inputs

    check_outputs_not_inputs({"o": "/dev/stdout"}, {"i": "/dev/stdin"})
    check_outputs_not_inputs({"o": files / "new.txt", "p": None, "q": "-"}, {"i": files / "c.txt"})
    check_outputs_not_inputs({"o": files / "d"}, {"i": files / "d" / "c.txt"})  # receives files
    assert main(["tokenize", "-i", str(files / "c.txt"), "-o", str(files / "t.txt")]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["embed", "{fifo}", "-i", "{t}/c.txt", "-o", "{t}/v.npy"],
        ["embed", "/dev/null", "-i", "{t}/c.txt", "-o", "{t}/v.npy"],
        ["convert", "{fifo}", "{t}/x.bin"],
        ["eval-sts", "--model", "{fifo}", "--tasks", "sts12"],
        ["encode", "--model", "{fifo}", "--input", "{t}/c.txt", "--output", "{t}/o"],
        ["search", "--model", "/dev/zero", "--corpus", "{t}/c.txt", "--query", "x"],
        ["encode", "--model", "{t}/m.bin", "--input", "{fifo}", "--output", "{t}/o"],
        ["train-sent2vec", "-input", "{fifo}", "-output", "{t}/x.bin"],
    ],
    ids=lambda a: " ".join(a[:3]).replace("{", "").replace("}", ""),
)
def test_a_fifo_or_device_is_named_for_what_it_is(files, capsys, argv):
    """A FIFO or a device as a model said "not found" / "missing" (and `convert` of a
    FIFO blocked reading it). Now the message says what it is."""
    fifo = files / "fifo"
    os.mkfifo(fifo)
    argv = [a.replace("{fifo}", str(fifo)).replace("{t}", str(files)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    kind = "a character device" if "/dev/" in " ".join(argv) else "a FIFO (named pipe)"
    assert kind in err and "not found" not in err, err


def _kill9_writer(target: Path) -> None:
    """A process that opens an atomic write of ``target``, writes, then dies by SIGKILL."""
    code = (
        "import os, signal, sys; from sentvec._io import atomic_open; "
        "cm = atomic_open(sys.argv[1], 'wb'); f = cm.__enter__(); f.write(b'x' * 4096); f.flush(); "
        "os.kill(os.getpid(), signal.SIGKILL)"
    )
    r = subprocess.run([sys.executable, "-c", code, str(target)], env=_env(), timeout=60)
    assert r.returncode == -9


def test_temp_files_of_killed_writers_are_removed_by_the_next_write(tmp_path, capsys):
    """`kill -9` during `convert` left hidden `.NAME.<rand>.tmp` files that no later run
    removed. Temporary names carry the writer's pid, start time and host; the next write in the folder
    removes those of dead processes, never a live one's or names it did not make."""
    from sentvec._io import host_tag

    out = tmp_path / "out"
    out.mkdir()
    _kill9_writer(out / "m.bin")
    (first,) = out.iterdir()
    assert first.name.startswith(".m.bin.sentvec-") and first.name.endswith(".tmp")
    _kill9_writer(out / "other.npy")  # its first write in the folder removes the first's file
    (second,) = out.iterdir()
    assert second.name.startswith(".other.npy.sentvec-")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        busy = out / f".m.bin.sentvec-{live.pid}-{host_tag()}-abcdefgh.tmp"
        elsewhere = out / ".m.bin.sentvec-1-00000000-abcdefgh.tmp"  # another host's
        older = out / ".m.bin.k3j4h5g6.tmp"  # an older version's name: writer unknown
        for p in (busy, elsewhere, older):
            p.write_bytes(b"y")
        argv = ["embed", str(MODEL), "-i", str(REF / "sentences.txt"), "-o", str(out / "v.npy")]
        assert main(argv) == 0
        names = sorted(p.name for p in out.iterdir())
        assert names == sorted(["v.npy", busy.name, elsewhere.name, older.name]), names
    finally:
        live.kill()
        live.wait()


def test_kill9_during_convert_leaves_nothing_after_the_next_convert(tmp_path, capsys):
    """Through the CLI: a `convert` killed with SIGKILL while writing, then a second
    `convert` into the same folder: only the model directory remains."""
    import signal
    import time

    out = tmp_path / "out"
    out.mkdir()
    code = (
        "import os, signal, sys\n"
        "import numpy as np\n"
        "orig = np.save\n"
        "def save(fh, arr, **k):\n"
        "    orig(fh, arr, **k); fh.flush(); os.kill(os.getpid(), signal.SIGKILL)\n"
        "np.save = save\n"
        "from sentvec.cli import main\n"
        "main(['convert', sys.argv[1], sys.argv[2]])\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(MODEL), str(out / "model")], env=_env(), timeout=120
    )
    assert r.returncode == -signal.SIGKILL
    assert any(".sentvec-" in p.name for p in out.iterdir())  # the dead run's leftovers
    t0 = time.monotonic()
    assert main(["convert", str(MODEL), str(out / "model")]) == 0
    assert time.monotonic() - t0 < 30
    assert sorted(p.name for p in out.iterdir()) == ["model"]
