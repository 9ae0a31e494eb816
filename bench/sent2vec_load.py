"""Loading a published-size Sent2Vec ``.bin``: memory-mapped vs read into memory, same run.

Writes once (cached in ``--cache-dir``, default ``$TMPDIR/sentvec-bench-s2v-load``) a synthetic
official-format ``.bin`` of the published models' shape: 1 M words, 2 M buckets, dim 600
(input matrix (1 M + 2 M + 1) x 600 float32 = 7.2 GB, output matrix 1 M x 600 = 2.4 GB). The
header and dictionary come from sentvec's ``write_bin`` (the official layout); the matrices are
streamed after them (a random 64 MiB block, scaled per chunk). The vocabulary is the words of
the first ``--sentences`` lines of the tokenized reference corpus
(``/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz``) by count, padded with
distinct made-up words to 1 M, so that encoding those sentences touches realistic rows.

Each measurement runs in a fresh child process (``--child``), reporting on stdout:

* ``load``: seconds for ``Sent2Vec.load`` (imports and Numba's one-time set-up in a process,
  which encoding needs anyway, done before the clock starts; their times are reported apart),
  then RSS and ``/proc/self/smaps_rollup`` (Pss, shared and private pages);
* ``encode``: seconds to encode the sentences and the same memory figures after.

* ``table_s``: seconds for the word-id hash table that the first ``encode`` needs (built from
  the dictionary, or already read from the dictionary index): ``load_s + table_s`` is what a
  command waits for before it encodes.

Cases: mmap (``inference_only=True``, as ``sentvec embed`` loads) without a dictionary index
(the first load: it reads the ``.bin``'s entries and writes ``MODEL.bin.sentvec-index``; the
index is deleted before each run) with a warm page cache (x3) and a cold one (the file's pages
dropped with ``posix_fadvise(DONTNEED)``, x2); with the index, warm (x3) and cold (model and index
pages dropped, x2); today's in-memory load (``mmap=None``, the whole file) once, only when
MemAvailable leaves 3 GB spare (else the inference-only in-memory load, else none: the JSON says
which); two mmap processes encoding at once, their smaps read by the parent while both are
alive; and the whole ``sentvec embed`` command (a fresh interpreter, ``--embed-lines`` lines
to a ``.npy``, 1 thread) with and without the index, alternating (``--embed-runs`` each).

Usage::

    python bench/sent2vec_load.py [--cache-dir DIR] [--sentences 100000] [--threads 1]
                                  [--embed-lines 1000] [--embed-runs 3]
                                  [--json docs/results/sent2vec-load.json] [--delete]
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from itertools import islice
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")
SMAPS_KEYS = (
    "Rss",
    "Pss",
    "Shared_Clean",
    "Shared_Dirty",
    "Private_Clean",
    "Private_Dirty",
    "Anonymous",
)


# ---------------------------------------------------------------------------- memory figures
def memory(pid: int | str = "self") -> dict[str, float]:
    """MB figures of a process: VmRSS, VmHWM and the smaps_rollup fields of SMAPS_KEYS."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(rest.split()[0]) / 1024
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        if key in SMAPS_KEYS:
            out[key] = int(rest.split()[0]) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def mem_available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def drop_page_cache(path: Path) -> None:
    """Evict the file's clean pages from the page cache (no root needed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- the synthetic file
def read_sentences(n: int) -> list[str]:
    with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in islice(fh, n)]


def build_vocabulary(sentences: list[str], nwords: int) -> tuple[list[str], np.ndarray]:
    counts = Counter(t for s in sentences for t in s.split())
    counts.pop("</s>", None)
    real = [w for w, _ in counts.most_common(nwords - 2)]
    words = ["<PLACEHOLDER>", "</s>"] + real
    seen = set(words)
    cnt = [0, len(sentences)] + [counts[w] for w in real]
    i = 0
    while len(words) < nwords:  # made-up words of realistic length, count 1
        w = f"{real[i % len(real)]}{i}"
        i += 1
        if w not in seen:
            seen.add(w)
            words.append(w)
            cnt.append(1)
    return words, np.asarray(cnt, dtype=np.int64)


def write_synthetic(path: Path, sentences: list[str], nwords: int, bucket: int, dim: int) -> None:
    from sentvec._io import atomic_open
    from sentvec.sent2vec.binfile import write_bin
    from sentvec.sent2vec.dictionary import Dictionary

    words, counts = build_vocabulary(sentences, nwords)
    d = Dictionary(words, counts, ntokens=int(counts.sum()), bucket=bucket, word_ngrams=2)
    rows_in = nwords + bucket + 1
    small = path.with_name(path.name + ".header")
    write_bin(
        small,
        args={"epoch": 9, "minCount": 8, "t": 5e-6},
        dictionary=d,
        input_matrix=np.zeros((rows_in, 1), np.float32),
        output_matrix=np.zeros((nwords, 1), np.float32),
    )
    raw = small.read_bytes()
    small.unlink()
    head_len = len(raw) - (nwords * 4 + 16 + 1) - (rows_in * 4 + 16)
    head = bytearray(raw[:head_len])
    struct.pack_into("<i", head, 8, dim)  # args: dim is the first field after the signature
    rng = np.random.default_rng(0)
    block_rows = (64 << 20) // (4 * dim)
    block = ((rng.random((block_rows, dim), dtype=np.float32) - 0.5) / dim).astype("<f4")
    with atomic_open(path, "wb") as fh:
        fh.write(bytes(head))
        for rows, flag in ((rows_in, None), (nwords, b"\x00")):
            if flag is not None:
                fh.write(flag)  # qout
            fh.write(struct.pack("<qq", rows, dim))
            for k, start in enumerate(range(0, rows, block_rows)):
                n = min(block_rows, rows - start)
                fh.write((block[:n] * np.float32(1 + 1e-3 * k)).tobytes())


# ---------------------------------------------------------------------------- child process
def child(spec: dict) -> None:
    t0 = time.perf_counter()
    import sentvec.sent2vec._binscan  # noqa: F401  (Numba; also imported by encoding)
    import sentvec.sent2vec._infer  # noqa: F401
    from sentvec.sent2vec.model import Sent2Vec

    t_import = time.perf_counter() - t0
    # Numba's one-time set-up in a process (about 1 s; encoding needs it anyway), timed apart
    t0 = time.perf_counter()
    sentvec.sent2vec._infer.build_table(np.zeros(1, np.uint8), np.zeros(2, np.int64), -1)
    t_numba = time.perf_counter() - t0
    report: dict = {
        "case": spec["case"],
        "import_s": round(t_import, 3),
        "numba_init_s": round(t_numba, 3),
    }
    t0 = time.perf_counter()
    model = Sent2Vec.load(spec["model"], mmap=spec["mmap"], inference_only=spec["inference_only"])
    report["load_s"] = round(time.perf_counter() - t0, 3)
    report["after_load_mb"] = memory()
    t0 = time.perf_counter()
    model._lookup_table()  # what the first encode needs; from the index when there is one
    report["table_s"] = round(time.perf_counter() - t0, 3)
    if spec.get("sentences"):
        sents = Path(spec["sentences"]).read_text(encoding="utf-8").split("\n")[:-1]
        if spec.get("barrier"):
            print("ready", flush=True)
            sys.stdin.readline()
        t0 = time.perf_counter()
        emb, stats = model.encode_with_stats(sents, num_threads=spec["threads"])
        report["encode_s"] = round(time.perf_counter() - t0, 3)
        report["n_sentences"] = stats.n_sentences
        report["n_zero"] = stats.n_zero
        report["vectors_sha256"] = __import__("hashlib").sha256(emb.tobytes()).hexdigest()
        report["after_encode_mb"] = memory()
    print(json.dumps(report), flush=True)
    if spec.get("barrier"):
        sys.stdin.readline()  # stay alive until the parent has read our smaps


def _env() -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": path}


def run_child(spec: dict) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=_env())
    return json.loads(out.stdout.strip().splitlines()[-1])


def index_files(model: Path) -> list[Path]:
    from sentvec.sent2vec import _sidecar

    return [p for p in _sidecar.candidates(model) if p.exists()]


def delete_index(model: Path) -> None:
    for p in index_files(model):
        p.unlink()


_EMBED_NO_INDEX = (
    "import sys; from sentvec.sent2vec import _sidecar; "
    "_sidecar.MIN_WORDS = 1 << 62; from sentvec.cli import console_main; "
    "sys.argv[0] = 'sentvec'; sys.exit(console_main())"
)


def run_embed(model: Path, lines: Path, out: Path, *, index: bool) -> dict:
    """Wall seconds of a whole ``sentvec embed`` command (a fresh interpreter)."""
    args = ["embed", str(model), "-i", str(lines), "-o", str(out), "--threads", "1"]
    cmd = (
        [sys.executable, "-m", "sentvec", *args]
        if index
        else [sys.executable, "-c", _EMBED_NO_INDEX, *args]
    )
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=_env())
    wall = time.perf_counter() - t0
    digest = __import__("hashlib").sha256(np.load(out).tobytes()).hexdigest()
    return {
        "case": f"sentvec embed command, {'index' if index else 'no index'}",
        "wall_s": round(wall, 3),
        "vectors_sha256": digest,
    }


def run_two(spec: dict) -> dict:
    """Two processes load, then encode at the same moment; smaps read while both live."""
    spec = {**spec, "barrier": True, "case": "one of 2 processes"}
    cmd = [sys.executable, __file__, "--child", json.dumps(spec)]
    procs = [
        subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
        for _ in range(2)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    reports = [json.loads(p.stdout.readline()) for p in procs]
    wall = time.perf_counter() - t0
    live = [memory(p.pid) for p in procs]
    for p in procs:
        p.stdin.write("exit\n")
        p.stdin.flush()
        p.wait(timeout=60)
    total = {k: round(sum(m.get(k, 0) for m in live), 1) for k in live[0]}
    return {
        "case": "2 processes, mmap",
        "wall_s": round(wall, 3),
        "per_process": reports,
        "live_mb": live,
        "total_mb": total,
        "load_average": load_average(),
    }


# ---------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "sentvec-bench-s2v-load"
    )
    ap.add_argument("--words", type=int, default=1_000_000)
    ap.add_argument("--bucket", type=int, default=2_000_000)
    ap.add_argument("--dim", type=int, default=600)
    ap.add_argument("--sentences", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=1, help="encode threads per process")
    ap.add_argument(
        "--embed-lines",
        type=int,
        default=1000,
        help="lines given to the timed `sentvec embed` commands",
    )
    ap.add_argument(
        "--embed-runs",
        type=int,
        default=3,
        help="`sentvec embed` commands with and without the index (each)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--no-in-memory", action="store_true", help="skip the in-memory load")
    ap.add_argument("--delete", action="store_true", help="delete the synthetic file at the end")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(json.loads(args.child))
        return
    sys.path.insert(0, str(ROOT / "src"))
    cache = args.cache_dir
    cache.mkdir(parents=True, exist_ok=True)
    name = f"synthetic-{args.words}w-{args.bucket}b-{args.dim}d-{args.sentences}s"
    model = cache / f"{name}.bin"
    sent_file = cache / f"sentences-{args.sentences}.txt"
    expect = 4 * args.dim * (2 * args.words + args.bucket + 1)
    if not sent_file.exists():
        sents = read_sentences(args.sentences)
        sent_file.write_text("".join(s + "\n" for s in sents), encoding="utf-8")
    if not model.exists():
        free = shutil.disk_usage(cache).free
        if free < expect + (1 << 30):
            sys.exit(
                f"{cache}: {free / 1e9:.1f} GB free, the synthetic model needs "
                f"{expect / 1e9:.1f} GB (+1 GB spare); pick another --cache-dir"
            )
        print(f"writing {model} ({expect / 1e9:.1f} GB of matrices) ...", file=sys.stderr)
        t0 = time.perf_counter()
        sents = sent_file.read_text(encoding="utf-8").split("\n")[:-1]
        write_synthetic(model, sents, args.words, args.bucket, args.dim)
        print(f"  written in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    size = model.stat().st_size
    results: dict = {
        "model": {
            "path": str(model),
            "bytes": size,
            "nwords": args.words,
            "bucket": args.bucket,
            "dim": args.dim,
        },
        "sentences": args.sentences,
        "threads": args.threads,
        "runs": [],
    }

    def record(r: dict) -> dict:
        r.setdefault("load_average", load_average())
        results["runs"].append(r)
        print(json.dumps(r), file=sys.stderr)
        return r

    base = {"model": str(model), "mmap": "r", "inference_only": True, "threads": args.threads}
    for i in range(3):  # warm page cache (the file was just written or read)
        delete_index(model)
        record(run_child({**base, "case": f"mmap load, no index, warm cache #{i + 1}"}))
    for i in range(2):
        delete_index(model)
        drop_page_cache(model)
        record(run_child({**base, "case": f"mmap load, no index, cold cache #{i + 1}"}))
    results["index_files"] = {str(p): p.stat().st_size for p in index_files(model)}
    for i in range(3):
        record(run_child({**base, "case": f"mmap load, index, warm cache #{i + 1}"}))
    for i in range(2):
        for f in [model, *index_files(model)]:
            drop_page_cache(f)
        record(run_child({**base, "case": f"mmap load, index, cold cache #{i + 1}"}))
    if args.embed_runs:
        embed_in = cache / f"sentences-{args.embed_lines}.txt"
        with open(sent_file, encoding="utf-8") as fh:
            embed_in.write_text("".join(islice(fh, args.embed_lines)), encoding="utf-8")
        out = cache / "embed-out.npy"
        run_embed(model, embed_in, out, index=True)  # (re)writes the index; not timed
        for i in range(args.embed_runs):
            for index in (False, True):
                r = record(run_embed(model, embed_in, out, index=index))
                r["case"] += f" #{i + 1}"
        out.unlink()
        results["embed_lines"] = args.embed_lines
    drop_page_cache(model)
    record(
        run_child({**base, "case": "mmap load + encode, cold cache", "sentences": str(sent_file)})
    )
    record(
        run_child({**base, "case": "mmap load + encode, warm cache", "sentences": str(sent_file)})
    )
    record(run_two({**base, "sentences": str(sent_file)}))
    if not args.no_in_memory:
        avail = mem_available_gb()
        inf_bytes = 4 * args.dim * (args.words + args.bucket + 1)
        if avail >= size / 2**30 + 3:
            spec = {
                **base,
                "mmap": None,
                "inference_only": False,
                "case": "in-memory load (mmap=None, whole file) + encode",
            }
        elif avail >= inf_bytes / 2**30 + 3:
            spec = {
                **base,
                "mmap": None,
                "case": "in-memory load (mmap=None, inference_only: input matrix only) + encode",
            }
        else:
            spec = None
            results["in_memory_skipped"] = f"MemAvailable {avail:.1f} GB is too little"
        if spec is not None:
            drop_page_cache(model)
            record(
                run_child(
                    {**spec, "sentences": str(sent_file), "mem_available_gb": round(avail, 1)}
                )
            )
    hashes = {
        r["vectors_sha256"]
        for r in results["runs"]
        if "vectors_sha256" in r and not r["case"].startswith("sentvec embed")
    }
    hashes |= {p["vectors_sha256"] for r in results["runs"] for p in r.get("per_process", [])}
    results["all_vectors_identical"] = len(hashes) == 1

    def median(prefix: str, key: str = "load_s") -> float | None:
        vals = [r[key] for r in results["runs"] if r["case"].startswith(prefix)]
        return round(statistics.median(vals), 3) if vals else None

    summary: dict = {}
    for kind in ("no index", "index"):
        for cache_state in ("warm", "cold"):
            prefix = f"mmap load, {kind}, {cache_state} cache"
            key = f"mmap_{kind.replace(' ', '_')}_{cache_state}"
            summary[f"{key}_load_median_s"] = median(prefix)
            summary[f"{key}_table_median_s"] = median(prefix, "table_s")
    summary["embed_no_index_median_s"] = median("sentvec embed command, no index", "wall_s")
    summary["embed_index_median_s"] = median("sentvec embed command, index", "wall_s")
    embeds = {r["vectors_sha256"] for r in results["runs"] if r["case"].startswith("sentvec embed")}
    summary["embed_vectors_identical"] = len(embeds) <= 1
    results["summary"] = summary
    print(json.dumps(results["summary"]), file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if args.delete:
        model.unlink()
        sent_file.unlink()


if __name__ == "__main__":
    main()
