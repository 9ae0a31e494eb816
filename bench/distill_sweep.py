"""Dev sweep for ``sentvec distill``'s defaults: corpus lines counted and whitened, SIF's a.

Selection set ("dev"): STS-B dev + SICK trial (``bench/distill.py``'s ``sts_of(.., "dev")``);
the 7 test sets are scored too and reported, never used to choose. Teacher rows (MiniLM, last
layer, mean of ``[CLS] pieces [SEP]``) are computed once per piece sequence; each configuration
then runs the library's own steps (``plan_rows``, ``fit_rows``) and is scored as float16 rows.
Counts "N lines" are the model's own token counts (teacher vocabulary + corpus words) of the
first N lines, the lines mapped to the corpus words with ``retokenize`` as ``distill`` does.

Usage::

    python bench/distill_sweep.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz \\
        --out docs/results/distill-sweep.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from distill import sts_of  # noqa: E402

# (counted lines, whitening lines, SIF a, corpus words)
CONFIGS = [
    (100_000, 100_000, 5e-3, 2000),  # the defaults
    (100_000, 100_000, 3e-3, 2000),
    (100_000, 100_000, 1e-2, 2000),
    (1_000_000, 100_000, 3e-3, 2000),
    (1_000_000, 100_000, 5e-3, 2000),
    (1_000_000, 100_000, 1e-2, 2000),
    (1_000_000, 100_000, 2e-2, 2000),
    (200_000, 200_000, 5e-3, 2000),
    (300_000, 300_000, 5e-3, 2000),
    (1_000_000, 300_000, 5e-3, 2000),
    (1_000_000, 300_000, 1e-2, 2000),
    (1_000_000, 1_000_000, 5e-3, 2000),
    (1_000_000, 1_000_000, 1e-2, 2000),
    (1_000_000, 100_000, 5e-3, 5000),
    (1_000_000, 100_000, 1e-2, 5000),
    (200_000, 200_000, 3e-3, 2000),
    (200_000, 200_000, 1e-2, 2000),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--configs", default=None, help="indices into CONFIGS, e.g. 15,16 (default all)")
    args = p.parse_args(argv)
    configs = (
        CONFIGS if args.configs is None else [CONFIGS[int(i)] for i in args.configs.split(",")]
    )

    from sentvec import TransformerEncoder
    from sentvec.distill_corpus import count_corpus_tokens, teacher_vocabulary
    from sentvec.distill_vocabulary import plan_rows, retokenize
    from sentvec.distillation import (
        DistilledModel,
        fit_rows,
        token_rows,
    )

    enc = TransformerEncoder.from_pretrained("minilm", layers=(-1,), device="cpu")
    tok = enc.tokenizer
    tokens, keep, tok_json, _ = teacher_vocabulary(tok)
    n_all = max(max(c[0], c[1]) for c in configs)
    t0 = time.perf_counter()
    stats = count_corpus_tokens(
        tok, args.corpus, max_sentences=n_all, sample_sentences=n_all, keep_lines=True
    )
    print(f"read {stats.n_sentences} lines: {time.perf_counter() - t0:.0f} s", flush=True)
    cache: dict[tuple, np.ndarray] = {}
    counted_cache: dict[tuple, list[np.ndarray]] = {}
    table = []
    for n_count, n_white, a, n_words in configs:
        sample, lines = stats.sample[:n_white], stats.lines[:n_white]
        plan = plan_rows(
            tok_json, tokens, keep, sample, lines, n_words=n_words, unk_id=tok.unk_token_id
        )
        need = [tuple(plan.pieces[i]) for i in np.flatnonzero(plan.keep)]
        new = [q for q in dict.fromkeys(need) if q not in cache]
        if new:
            R = token_rows(enc, [list(q) for q in new], show_progress_bar=False)
            cache.update(zip(new, R, strict=True))
        rows = np.zeros((len(plan.pieces), enc.hidden_size), np.float32)
        rows[np.flatnonzero(plan.keep)] = [cache[q] for q in need]
        key = (n_count, n_white, n_words)
        if n_count == n_white:
            counted = plan.sample
        elif key in counted_cache:
            counted = counted_cache[key]
        else:  # the first n_count lines in the model's own tokens
            from tokenizers import Tokenizer

            new_tok = Tokenizer.from_str(json.dumps(plan.tokenizer_json))
            counted = counted_cache[key] = retokenize(
                stats.sample[:n_count], tokens, new_tok, stats.lines[:n_count],
                unk_id=tok.unk_token_id,
            )  # fmt: skip
        counts = np.bincount(np.concatenate(counted), minlength=plan.n_tokens)[: plan.n_tokens]
        emb, _ = fit_rows(
            rows, plan.keep, dim=args.dim, weighting="sif", whiten="corpus",
            counts=counts, sample=plan.sample, sif_a=a,
        )  # fmt: skip
        model = DistilledModel(emb, json.dumps(plan.tokenizer_json), {}).to_encoder(dtype="float16")
        dev, dev_tasks = sts_of(model, "dev")
        avg, tasks = sts_of(model)
        row = {
            "counted_lines": n_count,
            "whitening_lines": n_white,
            "sif_a": a,
            "corpus_words": n_words,
            "dev": dev,
            "dev_tasks": dev_tasks,
            "test": avg,
            "tasks": tasks,
        }
        table.append(row)
        print(
            f"counts {n_count:>9,} whiten {n_white:>9,} a {a:g} words {n_words}: "
            f"dev {dev:6.2f}  test {avg:6.2f}",
            flush=True,
        )
        args.out.write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
