"""Bad inputs, broken pipes, interruption and concurrent use.

Each test reproduces a failure once seen (docs/RELIABILITY.md lists them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main

REF = Path(__file__).parent / "data" / "sent2vec-reference"
MODEL = str(REF / "tiny-bigram.bin")
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_embed_reads_dev_null_as_empty_input(tmp_path, capsys):
    out = tmp_path / "v.npy"
    assert main(["embed", MODEL, "-i", os.devnull, "-o", str(out)]) == 0
    assert np.load(out).shape == (0, 16)
    assert "0 lines -> 0 vectors" in capsys.readouterr().err


def test_embed_reads_a_pipe(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sentvec",
            "embed",
            MODEL,
            "-i",
            "/dev/stdin",
            "-o",
            str(tmp_path / "v.npy"),
        ],
        input=b"the city\nof london\n",
        capture_output=True,
        env=_env(),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "v.npy").shape == (2, 16)


def test_encode_refuses_a_pipe_with_a_reason(tmp_path, capsys):
    rc = main(["encode", "--model", MODEL, "--input", os.devnull, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "not a regular file" in err and "not found" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["embed", "encode", "tokenize"])
def test_symlink_loop_is_a_clear_error(tmp_path, capsys, command):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    argv = {
        "embed": ["embed", MODEL, "-i", str(a), "-o", str(tmp_path / "v.npy")],
        "encode": ["encode", "--model", MODEL, "--input", str(a), "--output", str(tmp_path / "o")],
        "tokenize": ["tokenize", "-i", str(a), "-o", str(tmp_path / "t.txt")],
    }[command]
    assert main(argv) == 2
    assert "symbolic-link loop" in capsys.readouterr().err


def test_tokenize_into_closed_pipe_exits_quietly(tmp_path):
    text = tmp_path / "in.txt"
    text.write_text("Hello, World!\n" * 200_000, encoding="utf-8")
    p = subprocess.Popen(
        f"{sys.executable} -m sentvec tokenize -i {text} | head -1",
        shell=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        executable="/bin/bash",
    )
    out, err = p.communicate(timeout=120)
    assert out == b"hello , world !\n"
    assert b"error" not in err.lower() and b"Traceback" not in err
    # the exit status of sentvec itself, not of head
    r = subprocess.run(
        f"{sys.executable} -m sentvec tokenize -i {text} | head -1 >/dev/null; "
        "echo ${PIPESTATUS[0]}",
        shell=True,
        capture_output=True,
        env=_env(),
        executable="/bin/bash",
        timeout=120,
    )
    assert r.stdout.strip() in (b"0", b"141")


def test_embed_npz_is_an_array_and_binary_suffixes_refused(tmp_path, capsys):
    out = tmp_path / "v.npz"
    assert main(["embed", MODEL, "-i", str(REF / "sentences.txt"), "-o", str(out)]) == 0
    with np.load(out) as z:
        emb = z["embeddings"]
    np.testing.assert_allclose(emb, np.load(REF / "tiny-bigram.vectors.npy"), atol=1e-5)
    assert (
        main(["embed", MODEL, "-i", str(REF / "sentences.txt"), "-o", str(tmp_path / "v.pt")]) == 2
    )
    assert "not .pt" in capsys.readouterr().err and not (tmp_path / "v.pt").exists()


def test_edited_index_vectors_are_rebuilt_not_reused(tmp_path, capsys):
    """Reversing the rows of embeddings.npy gave 'reusing index'."""
    corpus = tmp_path / "corpus.txt"
    lines = (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()[:60]
    lines = [x for x in lines if x.strip()]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = tmp_path / "idx"
    args = [
        "search",
        "--model",
        MODEL,
        "--corpus",
        str(corpus),
        "--index",
        str(index),
        "-k",
        "1",
        "--query",
        lines[5],
        "--json",
    ]
    assert main(args) == 0
    import json

    first = capsys.readouterr()
    assert json.loads(first.out)["queries"][0]["results"][0]["line"] == 6
    vec = index / "embeddings.npy"
    X = np.load(vec)
    np.save(vec, X[::-1].copy())
    with pytest.warns(UserWarning, match="do not match the checksums"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "reusing index" not in out.err and f"built index of {len(lines)} lines" in out.err
    assert json.loads(out.out)["queries"][0]["results"][0]["line"] == 6
    np.testing.assert_array_equal(np.load(vec), X)  # rebuilt in corpus order
    assert main(args) == 0
    assert "reusing index" in capsys.readouterr().err


def _no_model(*args, **kwargs):
    raise AssertionError("the model was loaded before the output path was checked")


@pytest.mark.parametrize("where", ["missing", "file"])
def test_eval_sts_json_path_checked_before_any_work(tmp_path, capsys, monkeypatch, where):
    """--json failed only after the evaluation ([Errno 17] File exists) and
    missing parent folders were created silently."""
    import sentvec.encoders

    monkeypatch.setattr(sentvec.encoders, "load_encoder", _no_model)
    (tmp_path / "file").write_text("x", encoding="utf-8")
    target = tmp_path / where / "r.json"
    assert main(["eval-sts", "--model", MODEL, "--json", str(target)]) == 2
    err = capsys.readouterr().err
    assert (
        "does not exist; create it first" if where == "missing" else "is not a directory"
    ) in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["tokenize", "-i", os.devnull, "-o", "{m}/t.txt"],
        ["embed", MODEL, "-i", os.devnull, "-o", "{m}/v.npy"],
        ["train-sent2vec", "-input", str(REF / "train-sample.txt"), "-output", "{m}/x.bin"],
        [
            "train-sent2vec",
            "-input",
            str(REF / "train-sample.txt"),
            "-output",
            "x.bin",
            "--report",
            "{m}/r.json",
        ],
        ["convert", MODEL, "{m}/m.bin"],
        ["encode", "--model", MODEL, "--input", str(REF / "sentences.txt"), "--output", "{m}/o"],
        [
            "search",
            "--model",
            MODEL,
            "--corpus",
            str(REF / "sentences.txt"),
            "--index",
            "{m}/i",
            "--query",
            "the city",
        ],
        ["report", "--out", "{m}/R.md"],
        ["layers", "--model", "minilm", "--out", "{m}/sub"],
        ["whiten-sweep", "--model", "minilm", "--out", "{m}/sub"],
    ],
)
def test_every_command_refuses_missing_output_folders(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    m = tmp_path / "missing" / "deeper"
    argv = [a.replace("{m}", str(m)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "does not exist; create it first" in err, err
    assert not (tmp_path / "missing").exists() and not (tmp_path / "x.bin").exists()


_HOLD = (
    "import sys, time; from sentvec._io import DirectoryLock; "
    "l = DirectoryLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(60)"
)


def _holder(directory):
    p = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(directory)], stdout=subprocess.PIPE, env=_env()
    )
    assert p.stdout.readline().strip() == b"locked"
    return p


def test_second_encode_writer_is_refused_naming_the_holder(tmp_path, capsys):
    """Two encode runs into one folder both exited 0 with mixed shards."""
    import socket

    from sentvec.encode_files import load_embeddings

    out = tmp_path / "out"
    out.mkdir()
    base = [
        "encode",
        "--model",
        MODEL,
        "--input",
        str(REF / "sentences.txt"),
        "--output",
        str(out),
        "--quiet",
    ]
    p = _holder(out)
    try:
        assert main(base + ["--overwrite"]) == 2
        err = capsys.readouterr().err
        assert f"pid {p.pid} on host {socket.gethostname()}" in err and "being written" in err
        assert not (out / "manifest.json").exists()
    finally:
        p.kill()
        p.wait()
    # the holder died (kill -9): its lock file is left behind but stale, and taken over
    assert (out / ".sentvec.lock").exists()
    assert main(base) == 0
    assert load_embeddings(out).shape == (490, 16) and not (out / ".sentvec.lock").exists()


def test_lock_is_exclusive_in_one_process_too(tmp_path):
    from sentvec._io import DirectoryLock
    from sentvec.exceptions import DirectoryLockedError

    with DirectoryLock(tmp_path):
        with pytest.raises(DirectoryLockedError, match=f"pid {os.getpid()}"):
            DirectoryLock(tmp_path).acquire()
    with DirectoryLock(tmp_path):  # released: free again
        pass


@pytest.mark.parametrize("command", ["encode", "embed", "train-sent2vec"])
def test_progress_records_off_a_terminal(tmp_path, capsys, monkeypatch, command):
    """With stderr redirected, long commands printed nothing for minutes."""
    text = str(REF / "sentences.txt")
    argv = {
        "encode": [
            "encode",
            "--model",
            MODEL,
            "--input",
            text,
            "--output",
            str(tmp_path / "o"),
            "--shard-size",
            "100",
        ],
        "embed": ["embed", MODEL, "-i", text, "-o", str(tmp_path / "v.npy"), "--batch-size", "100"],
        "train-sent2vec": [
            "train-sent2vec",
            "-input",
            str(REF / "train-sample.txt"),
            "-output",
            str(tmp_path / "m.bin"),
            "-dim",
            "8",
            "-epoch",
            "1",
            "-bucket",
            "1000",
            "-thread",
            "1",
        ],
    }[command]
    unit = {"encode": "line/s", "embed": "line/s", "train-sent2vec": "tok/s"}[command]
    monkeypatch.setenv("SENTVEC_PROGRESS_INTERVAL", "0")
    assert main(argv) == 0
    records = [x for x in capsys.readouterr().err.splitlines() if unit in x]
    assert records and all(x.startswith("sentvec: ") and "\r" not in x for x in records)
    if command != "embed":  # a known total: done/total, percentage and ETA ("<")
        assert any("100%" in x for x in records) and all("<" in x for x in records)
    assert main(argv + ["--no-progress"]) == 0
    assert unit not in capsys.readouterr().err
    monkeypatch.setenv("SENTVEC_PROGRESS_INTERVAL", "30")  # a run shorter than one interval
    assert main(argv) == 0
    assert unit not in capsys.readouterr().err


def test_sigterm_cleans_the_trainer_temp_folder(tmp_path):
    """kill -TERM of train-sent2vec left sentvec-s2v-*/tokens.int32 behind."""
    import signal
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**_env(), "TMPDIR": str(tmp)}
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sentvec",
            "train-sent2vec",
            "-input",
            str(REF / "train-sample.txt"),
            "-output",
            str(tmp_path / "m.bin"),
            "-dim",
            "50",
            "-epoch",
            "1000",
            "-bucket",
            "1000",
            "-thread",
            "1",
            "--no-progress",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not list(tmp.glob("sentvec-s2v-*/tokens.int32")) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = list(tmp.glob("sentvec-s2v-*"))
    assert found and found[0].name.startswith(f"sentvec-s2v-{p.pid}-")
    time.sleep(0.5)  # into the training loop
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert b"terminated" in err and b"Traceback" not in err
    assert not list(tmp.iterdir()) and not (tmp_path / "m.bin").exists()


def test_stale_temp_folders_of_dead_runs_are_removed(tmp_path):
    from sentvec.sent2vec.corpus import convert_corpus

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f"sentvec-s2v-{dead.pid}-abc"
        busy = tmp_path / f"sentvec-s2v-{live.pid}-def"
        other = tmp_path / "sentvec-s2v-xyz"  # no pid: an older version's, left alone
        for d in (stale, busy, other):
            d.mkdir()
            (d / "tokens.int32").write_bytes(b"\0" * 16)
        with convert_corpus(
            ["a b c", "b c d"], ["a", "b", "c", "d"], -1, directory=tmp_path
        ) as ids:
            assert ids.n_sentences == 2
            assert ids.directory.name.startswith(f"sentvec-s2v-{os.getpid()}-")
        assert not stale.exists() and busy.exists() and other.exists()
    finally:
        live.kill()
        live.wait()


def test_training_that_cannot_fit_is_refused_before_reading_the_corpus(
    tmp_path, capsys, monkeypatch
):
    """-dim 700 -bucket 2e9 read the corpus, then died with numpy's
    '_ArrayMemoryError: Unable to allocate 5.09 TiB' and a traceback."""
    from sentvec.sent2vec.dictionary import Dictionary

    def no_read(*a, **k):
        raise AssertionError("the corpus was read")

    monkeypatch.delenv("SENTVEC_MAX_MEMORY", raising=False)
    import shutil
    from collections import namedtuple

    # a disk large enough for the model (free space is checked before training too)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(2**60, 0, 2**60))
    with monkeypatch.context() as m:
        m.setattr(Dictionary, "from_corpus", no_read)
        assert (
            main(
                [
                    "train-sent2vec",
                    "-input",
                    str(REF / "train-sample.txt"),
                    "-output",
                    str(tmp_path / "x.bin"),
                    "-dim",
                    "700",
                    "-bucket",
                    "2000000000",
                    "-epoch",
                    "1",
                ]
            )
            == 2
        )
    err = capsys.readouterr().err
    assert "5.09 TiB" in err and "bucket 2,000,000,000" in err and "dim 700" in err
    assert "Traceback" not in err and not (tmp_path / "x.bin").exists()


def test_max_memory_checked_again_with_the_real_vocabulary(tmp_path):
    from sentvec.exceptions import InsufficientMemoryError
    from sentvec.sent2vec import Sent2VecTrainer

    kw = dict(dim=100, bucket=1000, thread=1, epoch=1, tmp_dir=tmp_path)
    floor, _ = Sent2VecTrainer(**kw).memory_estimate(0)
    tr = Sent2VecTrainer(**kw, max_memory=floor + 1000)
    with pytest.raises(InsufficientMemoryError, match=r"^training needs about .*nwords [1-9]"):
        tr.fit(REF / "train-sample.txt")
    assert not list(tmp_path.iterdir())  # refused before the id conversion
    need, _ = tr.memory_estimate(1234, 10)
    assert need == (1234 + 1000) * 100 * 4 + 1234 * 100 * 4 + 4 * 10**7 + 1234 * 200 + 80
    with pytest.raises(ValueError, match="memory size"):
        Sent2VecTrainer(max_memory="lots")


def test_in_memory_load_guarded_but_mmap_is_not(monkeypatch):
    from sentvec.exceptions import InsufficientMemoryError
    from sentvec.sent2vec import Sent2Vec

    monkeypatch.setenv("SENTVEC_MAX_MEMORY", "1K")
    with pytest.raises(InsufficientMemoryError, match=r"mmap=None.*limit 1.00 KiB"):
        Sent2Vec.load(MODEL, mmap=None)
    assert Sent2Vec.load(MODEL).dim == 16  # memory-mapped (default): not refused
    monkeypatch.setenv("SENTVEC_MAX_MEMORY", "1G")
    assert Sent2Vec.load(MODEL, mmap=None).dim == 16


@pytest.mark.parametrize("flag", ["--abtt-components", "--whitening-k"])
def test_report_refuses_non_positive_components(flag, capsys):
    from sentvec.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["report", flag, "0"])
    assert exc.value.code == 2
    assert "expected an integer >= 1" in capsys.readouterr().err
