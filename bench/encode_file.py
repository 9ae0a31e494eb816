"""Large-file encoding: peak memory, and resume after SIGKILL without recomputation.

Input: the first ``--n-lines`` (200,000) lines of the Moses-tokenised, lower-cased Wikipedia
corpus (``enwiki-2015-sentences-1M.tok.lower.txt.xz``), written to a work directory. Encoder: a
Sent2Vec model (default: the official reference ``tests/data/sent2vec-reference/tiny-bigram.bin``;
MiniLM is far too slow for 200k lines on 2 CPUs). Every run is a separate process (this script
re-invoked with ``--child``), so peak RSS (``VmHWM``) is per run:

1. reference: uninterrupted run with ``--shard-size`` lines per shard;
2. memory: the same with shards 4x larger and with one shard holding the whole file, to show that
   peak memory grows with the shard size, not with the file (the peer measured in this run);
3. kill: a run is SIGKILLed once half of its shards are recorded in the manifest; the re-run must
   reuse exactly those shards (not rewrite them) and encode only the rest, and the final
   vectors must equal the reference run's (``np.array_equal``).

Usage::

    python bench/encode_file.py [--model PATH] [--n-lines 200000] [--shard-size 10000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return -1


def child(args: argparse.Namespace) -> int:
    """One encode_file run; prints a JSON line with timings and memory."""
    from sentvec.encode_files import encode_file
    from sentvec.encoders import load_encoder

    encoder = load_encoder(args.model)
    encoder.encode(["warm up the kernels"])
    rss_loaded = _status_kb("VmRSS")
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = encode_file(
            encoder,
            args.input,
            args.child,
            shard_size=args.shard_size,
            batch_size=args.batch_size,
            show_progress_bar=False,
        )
    print(
        json.dumps(
            {
                "wall": time.perf_counter() - t,
                "rss_loaded_kb": rss_loaded,
                "peak_rss_kb": _status_kb("VmHWM"),
                "n_shards": m.n_shards,
                "encoded": m.runs[-1].n_shards_encoded,
                "reused": m.runs[-1].n_shards_reused,
                "dim": m.dim,
                "n_lines": m.n_lines,
                "n_zero": m.n_zero,
            }
        )
    )
    return 0


def child_cmd(args, out: Path, shard_size: int) -> list[str]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        str(out),
        "--input",
        str(args.input),
        "--model",
        args.model,
        "--shard-size",
        str(shard_size),
    ]
    return cmd + (["--batch-size", str(args.batch_size)] if args.batch_size else [])


def run_child(args, out: Path, shard_size: int) -> dict:
    res = subprocess.run(
        child_cmd(args, out, shard_size), capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "tests/data/sent2vec-reference/tiny-bigram.bin"))
    p.add_argument("--n-lines", type=int, default=200_000)
    p.add_argument("--shard-size", type=int, default=10_000)
    p.add_argument("--batch-size", type=int, default=None, help="default: the encoder's own")
    p.add_argument("--workdir", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--input", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)

    import numpy as np

    from sentvec.encode_files import load_embeddings, read_manifest

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="sentvec-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    args.input = work / "input.txt"
    with (
        lzma.open(CORPUS, "rt", encoding="utf-8") as src,
        open(args.input, "w", encoding="utf-8") as dst,
    ):
        for i, line in enumerate(src):
            if i == args.n_lines:
                break
            dst.write(line)
    size_mb = args.input.stat().st_size / 2**20
    print(
        f"input: {args.n_lines} lines, {size_mb:.1f} MiB; model {args.model}; "
        f"batch size {args.batch_size or 'encoder default'}"
    )

    ref = run_child(args, work / "ref", args.shard_size)
    out_mb = ref["n_lines"] * ref["dim"] * 4 / 2**20
    print(
        f"\n1. reference run: {ref['n_shards']} shards of {args.shard_size} lines, dim {ref['dim']}, "
        f"{ref['wall']:.1f} s ({ref['n_lines'] / ref['wall']:.0f} lines/s); output {out_mb:.1f} MiB; "
        f"{ref['n_zero']} zero vectors"
    )

    print("\n2. peak RSS by shard size (each a fresh process; 'after load' = model loaded)")
    rows = [(args.shard_size, ref)]
    for ss in (args.shard_size * 4, args.n_lines):
        rows.append((ss, run_child(args, work / f"mem-{ss}", ss)))
    for ss, r in rows:
        grow = (r["peak_rss_kb"] - r["rss_loaded_kb"]) / 1024
        print(
            f"   shard {ss:>7} lines: peak RSS {r['peak_rss_kb'] / 1024:7.1f} MiB, after load "
            f"{r['rss_loaded_kb'] / 1024:7.1f} MiB, growth {grow:6.1f} MiB"
        )
    g_small = rows[0][1]["peak_rss_kb"] - rows[0][1]["rss_loaded_kb"]
    g_full = rows[-1][1]["peak_rss_kb"] - rows[-1][1]["rss_loaded_kb"]
    print(
        f"   growth ratio whole-file shard / {args.shard_size}-line shards: "
        f"{g_full / max(g_small, 1):.1f}x"
    )

    print("\n3. SIGKILL halfway, then resume")
    out = work / "killed"
    proc = subprocess.Popen(
        child_cmd(args, out, args.shard_size), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    half = ref["n_shards"] // 2
    while proc.poll() is None:
        try:
            if len(read_manifest(out).shards) >= half:
                proc.send_signal(signal.SIGKILL)
                break
        except (FileNotFoundError, ValueError, json.JSONDecodeError):
            pass
        time.sleep(0.01)
    proc.wait()
    killed = proc.returncode == -signal.SIGKILL
    m = read_manifest(out)
    done = len(m.shards)
    stamps = {r.file: os.stat(out / r.file).st_mtime_ns for r in m.shards}
    print(
        f"   killed={killed} (return code {proc.returncode}); manifest records {done} of "
        f"{m.n_shards} shards; {len(list(out.glob('shard-*.npy')))} shard files on disk"
    )
    res = run_child(args, out, args.shard_size)
    untouched = all(os.stat(out / f).st_mtime_ns == t for f, t in stamps.items())
    same = np.array_equal(load_embeddings(out), load_embeddings(work / "ref"))
    print(
        f"   re-run: {res['reused']} shards reused, {res['encoded']} encoded "
        f"({res['wall']:.1f} s); reused == recorded at kill: {res['reused'] == done}; "
        f"reused shard files untouched: {untouched}"
    )
    print(f"   output equals the uninterrupted run (np.array_equal): {same}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    ok = (
        killed
        and res["reused"] == done
        and res["encoded"] == m.n_shards - done
        and same
        and untouched
    )
    print(f"\nresult: {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
