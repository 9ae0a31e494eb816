"""The whole ``sentvec encode --model minilm`` command against a SentenceTransformer script.

Input: the first ``--lines`` (20,000) raw lines of the Wikipedia corpus
(``enwiki-2015-sentences-1M.txt.xz``), written once to a work file. Both sides are whole fresh
processes, alternating which goes first on each repeat:

* ``sentvec encode --model minilm --input FILE --output DIR --quiet`` (its defaults: ``auto``
  precision, which is bfloat16 on a CPU that multiplies it in hardware), a new output
  directory each run;
* the script users write: ``SentenceTransformer(<minilm directory>).encode(lines)`` with its
  defaults (float32, batch 32) and ``np.save``.

Prints each run's wall time with the 1-minute load average at its start, the medians and their
ratio. ``--stages`` also times, in one fresh process, where the command's time goes: import,
model load, tokenization, the forward passes, writing.

Usage::

    python bench/encode_command.py [--lines 20000] [--repeats 3] [--stages] [--extra ARGS]
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz")

PEER = """
import sys
import numpy as np
from sentence_transformers import SentenceTransformer
from sentvec.encoders.models import minilm_path

lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
model = SentenceTransformer(str(minilm_path()), device="cpu")
np.save(sys.argv[2], model.encode(lines))
"""

STAGES = """
import sys, time
t0 = time.perf_counter()
import numpy as np
import torch
import sentvec
from sentvec.encoders import load_encoder
t1 = time.perf_counter()
enc = load_encoder("minilm", precision=sys.argv[2])
t2 = time.perf_counter()
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
enc._tokenize(lines)
t3 = time.perf_counter()
X = enc.encode(lines)
t4 = time.perf_counter()
np.save(sys.argv[3], X)
t5 = time.perf_counter()
print(f"import {t1 - t0:.2f} s, load {t2 - t1:.2f} s, tokenize {t3 - t2:.2f} s, "
      f"encode (tokenize + forward + pooling) {t4 - t3:.2f} s, write {t5 - t4:.2f} s "
      f"[{enc.precision}, {torch.get_num_threads()} threads]")
"""


def load1() -> float:
    return os.getloadavg()[0]


def timed(argv: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stages", action="store_true", help="also time the command's stages")
    ap.add_argument("--extra", default="", help="more `sentvec encode` options, one string")
    ap.add_argument("--skip-peer", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        text = tmp / "lines.txt"
        with lzma.open(CORPUS, "rt", encoding="utf-8") as src, text.open("w") as dst:
            for i, line in enumerate(src):
                if i == args.lines:
                    break
                dst.write(line)
        ours = [py, "-m", "sentvec", "encode", "--model", "minilm", "--input", str(text)]
        ours += ["--quiet", *args.extra.split()]
        sides = {"sentvec encode": ours, "SentenceTransformer script": [py, "-c", PEER, str(text)]}
        if args.skip_peer:
            del sides["SentenceTransformer script"]
        walls: dict[str, list[float]] = {k: [] for k in sides}
        for r in range(args.repeats):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for name in order:
                out = tmp / f"out-{r}"
                shutil.rmtree(out, ignore_errors=True)
                argv = sides[name] + (["--output", str(out)] if name == "sentvec encode" else [])
                if name != "sentvec encode":
                    argv = argv + [str(tmp / "st.npy")]
                start = load1()
                walls[name].append(timed(argv, env))
                print(f"{name:28s} run {r + 1}: {walls[name][-1]:7.1f} s (load {start:.1f})")
                sys.stdout.flush()
        med = {k: statistics.median(v) for k, v in walls.items()}
        print(", ".join(f"{k} median {v:.1f} s" for k, v in med.items()))
        if len(med) == 2:
            ratio = med["SentenceTransformer script"] / med["sentvec encode"]
            print(f"ratio (script / command): {ratio:.2f}x on {args.lines} lines")
        if args.stages:
            for precision in ("auto", "float32"):
                argv = [py, "-c", STAGES, str(text), precision, str(tmp / "stages.npy")]
                proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
                print(f"stages ({precision}, load {load1():.1f}): {proc.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
