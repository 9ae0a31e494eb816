"""Cost of the all-pairs layer search relative to evaluating one configuration.

Measured in the same run, each command in a fresh process with its own empty cache directory
(cold cache), alternating the two commands ``--repeat`` times:

* peer:   ``sentvec eval-sts --model M --layers 1,-1 --whiten year --json ...``
          (one configuration: one forward pass + one scoring);
* search: ``sentvec layers --model M --max-combination 0``
          (one forward pass keeping every hidden state + every pair (i, j), i <= j, scored
          without and with per-year whitening: 2 x K(K+1)/2 scorings).

Prints both wall times, their ratio (target <= 1.1) and the layer run's own split (vectors /
pair scoring), then the per-call cost of ``score_sts`` (none / year) on the cached vectors of the
last run. Usage::

    python bench/layer_search.py [--model minilm] [--repeat 1] [--tasks STS12,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(cmd: list[str], cache: Path) -> float:
    env = dict(os.environ, SENTVEC_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return wall


def _score_costs(model: str, tasks: list[str] | None, cache: Path, repeat: int = 3) -> str:
    os.environ["SENTVEC_CACHE"] = str(cache)
    from sentvec.cache import VectorCache
    from sentvec.evaluation.layers import CombinationScorer, pooled_layer_vectors
    from sentvec.evaluation.sts import load_sts, unique_sentences
    from sentvec.pipeline import load_encoder

    enc = load_encoder(model)
    task_list = load_sts(tasks)
    sents = unique_sentences(task_list)
    vecs, hit, _ = pooled_layer_vectors(enc, sents, pooling="mean", cache=VectorCache(cache),
                                        text_variant=task_list[0].variant,
                                        show_progress_bar=False)
    out = []
    for w in ("none", "year"):
        for n_jobs in (1, None):
            sc = CombinationScorer(vecs["mean"], task_list, sents, n_jobs=n_jobs)
            combos = [(1, 6), (0, 6), (2, 5), (1, 2, 6)][:repeat + 1]
            t0 = time.perf_counter()
            sc.score_many(combos, w)
            per = (time.perf_counter() - t0) / len(combos)
            out.append(f"score_sts whitening={w:<4} n_jobs={sc.n_jobs}: {per:.3f} s per "
                       f"combination (mean of {len(combos)})")
    return "\n".join(out) + ("" if hit else "\n(note: vectors were recomputed)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--whiten", default="year", choices=("none", "year"),
                    help="whitening of the eval-sts peer (default year)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--tasks", default=None, help="comma-separated STS tasks (default all)")
    args = ap.parse_args()
    py = [sys.executable, "-m", "sentvec"]
    task_args = ["--tasks", args.tasks] if args.tasks else []
    peers, searches, splits = [], [], []
    with tempfile.TemporaryDirectory(prefix="sentvec-bench-") as tmp:
        root = Path(tmp)
        last_cache = root
        for r in range(args.repeat):
            peer_cache, search_cache = root / f"peer{r}", root / f"search{r}"
            peers.append(_run(py + ["eval-sts", "--model", args.model, "--layers", "1,-1",
                                    "--whiten", args.whiten, "--json",
                                    str(root / f"peer{r}.json"), *task_args], peer_cache))
            out = root / f"layers{r}"
            searches.append(_run(py + ["layers", "--model", args.model, "--max-combination",
                                       "0", "--out", str(out), "--quiet", *task_args],
                                 search_cache))
            data = json.loads(next(out.glob("*-layers.json")).read_text())
            splits.append(data["timings"])
            last_cache = search_cache
            print(f"run {r + 1}: eval-sts {peers[-1]:.1f} s, layers (all pairs) "
                  f"{searches[-1]:.1f} s, ratio {searches[-1] / peers[-1]:.2f}", flush=True)
        t = splits[-1]
        n_pairs = len(data["pairs"])
        print(f"\nmodel {args.model}: {data['n_hidden_states']} hidden states, "
              f"{data['n_sentences']} sentences, {n_pairs} pair scorings (none + year)")
        print(f"eval-sts --layers 1,-1 --whiten {args.whiten}: median "
              f"{statistics.median(peers):.1f} s")
        print(f"layers --max-combination 0:               median "
              f"{statistics.median(searches):.1f} s (last run: vectors {t['forward_s']:.1f} s, "
              f"pair scoring {t['pairs_s']:.1f} s)")
        print(f"RATIO search / one configuration = "
              f"{statistics.median(searches) / statistics.median(peers):.2f} (target <= 1.10)")
        print(_score_costs(args.model, args.tasks.split(",") if args.tasks else None, last_cache))


if __name__ == "__main__":
    main()
