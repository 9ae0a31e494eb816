"""Run folders (sentvec._tempdirs): what a killed run leaves is removed by the next run, never
a live run's folder; the corpus pass child of ``distill`` uses them and returns no pickle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from sentvec._io import host_tag
from sentvec._tempdirs import (
    make_run_dir,
    owner_alive,
    process_start_time,
    remove_dead_run_dirs,
)

linux_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(pid)


@linux_proc
def test_process_start_time_is_field_22_of_proc_stat():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        assert process_start_time(p.pid) == int(fields[19])
        assert owner_alive(p.pid, int(fields[19]))
        # the same pid with another start time is a new process: the owner is dead
        assert not owner_alive(p.pid, int(fields[19]) + 1)
    finally:
        p.kill()
        p.wait()
    assert process_start_time(p.pid) is None
    assert not owner_alive(p.pid, 0)


@linux_proc
def test_only_the_folders_of_dead_owners_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = process_start_time(live.pid)
        here = host_tag()
        other_host = "0" * 8 if here != "0" * 8 else "1" * 8
        names = {
            "dead": f"sentvec-distill-{dead.pid}-123-{here}-abc_123",
            "reused": f"sentvec-serve-{live.pid}-{start + 1}-{here}-k2j4",  # pid given anew
            "dead_old_s2v": f"sentvec-s2v-{dead.pid}-x8y",  # an earlier version's, pid only
            "live": f"sentvec-serve-{live.pid}-{start}-{here}-abcd",
            "unknown_start": f"sentvec-s2v-{live.pid}-0-{here}-abcd",  # made without /proc
            "other_host": f"sentvec-distill-{dead.pid}-123-{other_host}-abcd",
            "mine": f"sentvec-distill-{os.getpid()}-1-{here}-abcd",
            "no_owner": "sentvec-distill-q1w2e3",  # an earlier version's: owner unknown
            "unrelated": f"other-{dead.pid}-123-{here}-abcd",
        }
        for name in names.values():
            (tmp_path / name).mkdir()
            (tmp_path / name / "payload").write_bytes(b"\0" * 64)
        as_file = tmp_path / f"sentvec-distill-{dead.pid}-5-{here}-file"
        as_file.write_bytes(b"x")  # not a folder: left alone
        removed = remove_dead_run_dirs(tmp_path)
        gone = {"dead", "reused", "dead_old_s2v"}
        assert sorted(removed) == sorted(tmp_path / names[k] for k in gone)
        for key, name in names.items():
            assert (tmp_path / name).exists() == (key not in gone), key
        assert as_file.exists()
    finally:
        live.kill()
        live.wait()


def test_make_run_dir_names_its_owner_and_sweeps_first(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    left = tmp_path / f"sentvec-serve-{dead.pid}-7-{host_tag()}-zz9"
    left.mkdir()
    made = make_run_dir("distill", tmp_path)
    assert made.is_dir() and made.parent == tmp_path
    assert not left.exists()
    start = process_start_time(os.getpid()) or 0
    assert made.name.startswith(f"sentvec-distill-{os.getpid()}-{start}-{host_tag()}-")
    assert remove_dead_run_dirs(tmp_path) == [] and made.is_dir()  # its owner runs
    with pytest.raises(ValueError, match="lower-case letters and digits"):
        make_run_dir("bad-name", tmp_path)


_KILLED_DISTILL = """
import sys, time
from sentvec.distill.corpus import CorpusPassProcess
child = CorpusPassProcess.start(sys.argv[1], sys.argv[2],
    {"max_sentences": None, "sample_sentences": 10, "keep_lines": False},
    {"n_words": 0, "n_bigrams": 0})
print(child.directory, child.process.pid, flush=True)
time.sleep(120)
"""


@linux_proc
def test_a_killed_distills_corpus_folder_is_removed_by_the_next_run(
    minilm_path, tmp_path, monkeypatch
):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"the cat sat on the mat .\n" * 2_000_000)  # a pass of seconds
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", _KILLED_DISTILL, str(minilm_path), str(corpus)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        directory, child_pid = parent.stdout.readline().split()
        assert Path(directory).parent == tmp and (Path(directory) / "request.json").is_file()
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        # the corpus pass child sees its parent gone (end of its stdin) and stops at once:
        # it writes no result into the folder
        assert _wait_gone(int(child_pid)), "the corpus pass outlived its killed parent"
        assert Path(directory).is_dir()  # nothing could run in the killed parent
        assert sorted(p.name for p in Path(directory).iterdir()) == ["request.json"]
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        nxt = make_run_dir("distill")  # the next run (distill, serve or training)
        assert not Path(directory).exists()
        assert [p.name for p in tmp.iterdir()] == [nxt.name]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_the_corpus_pass_result_is_never_unpickled(tmp_path):
    """The parent reads the child's result with formats that cannot run code: a result file
    holding a pickle (of an object that would run code on loading) is refused, not run."""
    from sentvec.distill.corpus import CorpusPassProcess

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    import pickle

    (tmp_path / "result.pickle").write_bytes(pickle.dumps({"vocabulary": Payload()}))
    np.savez(tmp_path / "result.npz", keep=np.array([Payload()], dtype=object))
    (tmp_path / "result.json").write_text(json.dumps({"tokens": []}), encoding="utf-8")
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    child = CorpusPassProcess(str(tmp_path), done)
    assert child.result(([], np.zeros(0, bool), {}, None)) is None
    assert not marker.exists()


@linux_proc
def test_atomic_writers_temporaries_are_judged_by_pid_and_start_time(tmp_path):
    """The temporary files of ``make_temp`` follow the run folders' rule: a live process that
    was given a dead writer's pid does not keep the writer's files."""
    from sentvec._io import make_temp, remove_stale_temps

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = process_start_time(live.pid)
        here = host_tag()
        names = {
            "reused": f".m.bin.sentvec-{live.pid}-{start + 1}-{here}-abcdefgh.tmp",
            "dead": f".m.bin.sentvec-{dead.pid}-{start}-{here}-abcdefgh.old",
            "dead_pid_only": f".m.bin.sentvec-{dead.pid}-{here}-abcdefgh.tmp",  # earlier names
            "live": f".m.bin.sentvec-{live.pid}-{start}-{here}-abcdefgh.tmp",
            "live_pid_only": f".m.bin.sentvec-{live.pid}-{here}-abcdefgh.tmp",
            "unknown": ".m.bin.k3j4h5g6.tmp",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"y")
        (tmp_path / names["dead"]).unlink()
        (tmp_path / names["dead"]).mkdir()  # a temporary directory of a directory write
        removed = remove_stale_temps(tmp_path)
        gone = {"reused", "dead", "dead_pid_only"}
        assert sorted(removed) == sorted(tmp_path / names[k] for k in gone)
        for key, name in names.items():
            assert (tmp_path / name).exists() == (key not in gone), key
    finally:
        live.kill()
        live.wait()
    fd, path = make_temp(tmp_path / "new.npy")
    os.close(fd)
    own = process_start_time(os.getpid())
    assert Path(path).name.startswith(f".new.npy.sentvec-{os.getpid()}-{own}-{host_tag()}-")
    assert remove_stale_temps(tmp_path) == []  # this process's own file stays
