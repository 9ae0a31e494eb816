"""Encoding on a Dask cluster: lines/s with 1 and 2 one-thread workers, and scheduler overhead.

Each run starts its own ``distributed.LocalCluster`` (:func:`sentvec.cluster.local_client`,
127.0.0.1 only, no dashboard) of 1 or 2 single-threaded worker processes (``threads_per_worker=1``;
the tasks pin torch and the Sent2Vec kernel to one thread, and Dask's nanny sets OMP/MKL/OpenBLAS
to one thread), warms the fresh workers with one small untimed partition each (imports, numba
caches), times one encoding and closes the cluster: only one cluster is up at a time, so the
2-worker run does not share the cores with the idle workers, nannies and scheduler of the other
(an idle 2-worker cluster burns about 13 % of a core). Each model is encoded ``--repeats`` times
with each worker count, alternating which goes first, into a fresh output directory
(``resume=False``) with :func:`sentvec.cluster.encode_file_distributed`; the figures are medians:

* ``wall lines/s``: lines / wall time of the whole call (model set-up on the workers, probe,
  line scan, all partitions, manifest);
* ``steady lines/s``: lines of the partitions finished after the first one / time from the first
  partition finished to the last (the rate a long run converges to);
* ``partition s``: median seconds one task spends on one partition (the cost model's unit);
* ``worker CPU ms/line``: CPU seconds (user + system) of the worker processes during the run
  per line, and ``CPU share``: that CPU time / (workers x wall), the fraction of a core each
  worker got; a worker that is slower with 2 workers either needs more CPU per line (cache,
  memory, page faults) or got a smaller share of its core (other processes);
* the scaling ratio ``2 workers / 1 worker`` of both rates.

Scheduler overhead: ``--overhead-tasks`` empty tasks submitted at once (per-task wall = total /
tasks), and the median round trip of one empty task submitted and awaited alone, both on a
2-worker cluster of their own.

The load average (``os.getloadavg``) is recorded before and after every run: on a shared
machine the ratio measured while other jobs run is lower than on a quiet one.

Inputs: the first ``--s2v-lines`` lines of the Moses-tokenised, lower-cased Wikipedia corpus
(``enwiki-2015-sentences-1M.tok.lower.txt.xz``) for Sent2Vec (``--s2v-model``, default the
official reference ``tests/data/sent2vec-reference/tiny-bigram.bin``), and of the raw corpus
(``enwiki-2015-sentences-1M.txt.xz``) for MiniLM, written once to ``--workdir``.

Usage::

    python bench/dask_encode.py                          # 1M Sent2Vec lines, 20,000 MiniLM lines, 3 repeats
    python bench/dask_encode.py --s2v-lines 200000 --minilm-lines 1000 --repeats 3   # quick
    python bench/dask_encode.py --models minilm --json results.json
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus")
S2V_MODEL = ROOT / "tests" / "data" / "sent2vec-reference" / "tiny-bigram.bin"


def _first_lines(src: Path, dst: Path, n: int) -> Path:
    """Write the first ``n`` lines of the xz file ``src`` to ``dst`` (once)."""
    if dst.is_file() and sum(1 for _ in dst.open("rb")) == n:
        return dst
    tmp = dst.with_suffix(".tmp")
    with lzma.open(src, "rb") as fin, tmp.open("wb") as fout:
        for i, line in enumerate(fin):
            if i == n:
                break
            fout.write(line)
        else:
            if i + 1 < n:
                raise SystemExit(f"{src} has only {i + 1} lines, asked for {n}")
    tmp.replace(dst)
    return dst


def _noop(x):
    return x


def scheduler_overhead(client, n_tasks: int, n_round_trips: int) -> dict:
    """Per-task cost of empty tasks: amortised over a burst, and one task's round trip."""
    client.gather(client.map(_noop, range(50), pure=False))  # warm the function cache
    t = time.perf_counter()
    client.gather(client.map(_noop, range(n_tasks), pure=False))
    burst = time.perf_counter() - t
    trips = []
    for i in range(n_round_trips):
        t = time.perf_counter()
        client.submit(_noop, i, pure=False).result()
        trips.append(time.perf_counter() - t)
    return {
        "burst_tasks": n_tasks,
        "burst_s": burst,
        "per_task_ms": 1e3 * burst / n_tasks,
        "round_trip_ms_median": 1e3 * statistics.median(trips),
    }


def _cpu_seconds(procs) -> float:
    """User + system CPU seconds of the processes ``procs`` (psutil.Process objects)."""
    return sum(sum(p.cpu_times()[:2]) for p in procs)


def one_run(
    client, model: str, path: Path, out: Path, shard: int, n_lines: int, end_line: int | None = None
) -> dict:
    import psutil

    from sentvec.cluster import encode_file_distributed

    shutil.rmtree(out, ignore_errors=True)
    done_at: list[tuple[float, int]] = []
    workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
    load0 = os.getloadavg()[0]
    cpu0 = _cpu_seconds(workers)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = encode_file_distributed(
            model,
            path,
            out,
            client,
            shard_size=shard,
            resume=False,
            show_progress_bar=False,
            end_line=end_line,
            on_partition_done=lambda p: done_at.append(
                (time.perf_counter(), p.end_line - p.start_line)
            ),
        )
    wall = time.perf_counter() - t
    cpu = _cpu_seconds(workers) - cpu0
    steady = None
    if len(done_at) > 2:
        span = done_at[-1][0] - done_at[0][0]
        steady = sum(n for _, n in done_at[1:]) / span if span > 0 else None
    shutil.rmtree(out, ignore_errors=True)
    return {
        "wall_s": wall,
        "wall_lines_per_s": n_lines / wall,
        "steady_lines_per_s": steady,
        "partition_s_median": statistics.median(p.seconds for p in r.partitions),
        "partition_lines": shard,
        "n_partitions": len(r.partitions),
        "workers_used": len({p.pid for p in r.partitions}),
        "worker_cpu_ms_per_line": 1e3 * cpu / n_lines,
        "cpu_share": cpu / (len(workers) * wall),
        "load_before": load0,
        "load_after": os.getloadavg()[0],
    }


def bench_model(
    name: str, model: str, path: Path, shard: int, n_lines: int, repeats: int, workdir: Path
) -> dict:
    from sentvec.cluster import local_client

    counts = (1, 2)
    runs: dict[int, list[dict]] = {n: [] for n in counts}
    warm = min(shard, 100)
    for rep in range(repeats):
        order = counts if rep % 2 == 0 else counts[::-1]
        for n in order:
            out = workdir / f"out-{name}-{n}w"
            with local_client(n, dashboard_address=None) as c:
                # one untimed small partition per worker: imports (torch, numba caches)
                one_run(c, model, path, out, warm, n * warm, end_line=n * warm)
                r = one_run(c, model, path, out, shard, n_lines)
            runs[n].append(r)
            print(
                f"  {name} {n} worker(s) run {rep + 1}: {r['wall_lines_per_s']:.1f} lines/s "
                f"wall, {r['steady_lines_per_s'] or float('nan'):.1f} steady, "
                f"{r['partition_s_median']:.3f} s/partition, "
                f"{r['worker_cpu_ms_per_line']:.2f} worker CPU ms/line, CPU share "
                f"{r['cpu_share']:.2f} (load {r['load_before']:.1f})",
                file=sys.stderr,
                flush=True,
            )
    med = {
        n: {
            k: statistics.median(x[k] for x in rs if x[k] is not None)
            for k in (
                "wall_lines_per_s",
                "steady_lines_per_s",
                "partition_s_median",
                "worker_cpu_ms_per_line",
                "cpu_share",
                "load_before",
            )
        }
        for n, rs in runs.items()
    }
    return {
        "model": model,
        "n_lines": n_lines,
        "partition_lines": shard,
        "repeats": repeats,
        "median": med,
        "runs": runs,
        "ratio_2_over_1_wall": med[2]["wall_lines_per_s"] / med[1]["wall_lines_per_s"],
        "ratio_2_over_1_steady": med[2]["steady_lines_per_s"] / med[1]["steady_lines_per_s"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="sent2vec,minilm", help="comma list: sent2vec, minilm")
    ap.add_argument("--s2v-model", default=str(S2V_MODEL))
    ap.add_argument("--s2v-lines", type=int, default=1_000_000)
    ap.add_argument("--s2v-partition", type=int, default=50_000)
    ap.add_argument("--minilm-lines", type=int, default=20_000)
    ap.add_argument("--minilm-partition", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--overhead-tasks", type=int, default=2000, help="0 skips the measure")
    ap.add_argument("--workdir", default="/tmp/sentvec-dask-bench")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    from sentvec.cluster import local_client

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    inputs = {}
    if "sent2vec" in models:
        inputs["sent2vec"] = (
            args.s2v_model,
            _first_lines(
                CORPUS / "enwiki-2015-sentences-1M.tok.lower.txt.xz",
                workdir / f"tok-{args.s2v_lines}.txt",
                args.s2v_lines,
            ),
            args.s2v_partition,
            args.s2v_lines,
        )
    if "minilm" in models:
        inputs["minilm"] = (
            "minilm",
            _first_lines(
                CORPUS / "enwiki-2015-sentences-1M.txt.xz",
                workdir / f"raw-{args.minilm_lines}.txt",
                args.minilm_lines,
            ),
            args.minilm_partition,
            args.minilm_lines,
        )
    result = {"cpus": os.cpu_count(), "load_start": os.getloadavg()}
    if args.overhead_tasks:
        with local_client(2, dashboard_address=None) as c2:
            result["scheduler_overhead"] = scheduler_overhead(c2, args.overhead_tasks, 200)
        print(f"scheduler overhead: {result['scheduler_overhead']}", file=sys.stderr)
    for name, (model, path, shard, n) in inputs.items():
        result[name] = bench_model(name, model, path, shard, n, args.repeats, workdir)
        r = result[name]
        print(
            f"{name}: {n} lines, partitions of {shard}: 1 worker "
            f"{r['median'][1]['wall_lines_per_s']:.1f} lines/s wall "
            f"({r['median'][1]['steady_lines_per_s']:.1f} steady), 2 workers "
            f"{r['median'][2]['wall_lines_per_s']:.1f} ({r['median'][2]['steady_lines_per_s']:.1f}); "
            f"ratio {r['ratio_2_over_1_wall']:.2f} wall, {r['ratio_2_over_1_steady']:.2f} "
            f"steady",
            file=sys.stderr,
            flush=True,
        )
    result["load_end"] = os.getloadavg()
    text = json.dumps(result, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
