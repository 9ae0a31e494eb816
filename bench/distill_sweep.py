"""Dev sweep for ``sentvec distill``'s defaults: corpus lines counted and whitened, SIF's a.

Selection set ("dev"): STS-B dev + SICK trial (``bench/distill.py``'s ``sts_of(.., "dev")``);
the 7 test sets are scored too and reported, never used to choose. Teacher rows (MiniLM, last
layer, mean of ``[CLS] pieces [SEP]``) are computed once per piece sequence; each configuration
then runs the library's own steps (``plan_rows``, ``fit_rows``) and is scored as float16 rows.
Counts "N lines" are the model's own token counts (teacher vocabulary + corpus words) of the
first N lines, the lines mapped to the corpus words with ``retokenize`` as ``distill`` does.

``--ideas``: tuning round 2's defaults (mean pooling, 200,000 lines counted and
whitened, SIF a = 5e-3, 2,000 corpus words) against changes to the rows and weights that the first sweeps did not try (``IDEAS``):
token-row pooling over the token's own positions or ``[CLS]`` only, rows divided by a power of
their norm before the whitening, SIF's ``p`` backed off to Model2Vec's Zipf prior, SIF's ``a``
per row type, Zipfian whitening (Yokoi et al. 2024) instead of the sentence-level whitening.
The teacher rows of each pooling come from one forward pass (the library's ``token_rows``
batching and precision), cached in ``--row-cache``.

``--ideas5``: tuning round 4, ``IDEAS5`` at tuning round 3's defaults (``mean_cls``
rows, uSIF, teacher vocabulary, the first 200,000 lines): spread lines, mean/``[CLS]`` mixing
weights, over-whitening, weighted whitening, All-but-the-top, uSIF's n, unit-norm poolings,
row norms, shrunk whitening (plan: ``docs/results/distill-sweep5-plan.md``). Only dev is
printed; the json has both.

Usage::

    python bench/distill_sweep.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz \\
        --out docs/results/distill-sweep.json
    python bench/distill_sweep.py --ideas --corpus ... --out docs/results/distill-sweep-ideas.json
    python bench/distill_sweep.py --ideas5 --corpus ... --out docs/results/distill-sweep5.json
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
    p.add_argument("--ideas", action="store_true", help="sweep IDEAS at the defaults instead")
    p.add_argument(
        "--ideas5", action="store_true", help="sweep IDEAS5 at the current defaults instead"
    )
    p.add_argument("--row-cache", type=Path, default=Path("/tmp/sentvec-distill-rows.npz"))
    p.add_argument("--contextual", type=int, default=10_000, help="lines for contextual rows")
    args = p.parse_args(argv)
    if args.ideas:
        return ideas(args)
    if args.ideas5:
        return ideas5(args)
    configs = (
        CONFIGS if args.configs is None else [CONFIGS[int(i)] for i in args.configs.split(",")]
    )

    from sentvec import TransformerEncoder
    from sentvec.distill import (
        DistilledModel,
        fit_rows,
        token_rows,
    )
    from sentvec.distill.corpus import count_corpus_tokens, teacher_vocabulary
    from sentvec.distill.vocabulary import plan_rows, retokenize

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


# name -> changes from the defaults: pooling ("mean": Model2Vec's mean over [CLS] t [SEP];
# "inner": over the token's own positions; "cls": the [CLS] output), norm_power (rows divided
# by ||r||^power before the whitening), weights ("sif"; ("backoff", c): p = max(p_count,
# c * p_zipf); ("per_type", a_words): SIF a for the corpus words' rows), whitening
# ("sentence": WhiteningBERT's on the corpus sentences' static vectors; "zipfian": Yokoi et
# al. 2024, the rows' covariance weighted by their corpus probability)
IDEAS: list[tuple[str, dict]] = [
    ("defaults", {}),
    ("pooling: mean over the token's own positions", {"pooling": "inner"}),
    ("pooling: [CLS] output", {"pooling": "cls"}),
    ("rows / ||r|| before whitening", {"norm_power": 1.0}),
    ("rows / ||r||^0.5 before whitening", {"norm_power": 0.5}),
    ("SIF p = max(p_count, p_zipf)", {"weights": ("backoff", 1.0)}),
    ("SIF p = max(p_count, 0.1 p_zipf)", {"weights": ("backoff", 0.1)}),
    ("SIF a = 2e-3 for corpus-word rows", {"weights": ("per_type", 2e-3)}),
    ("SIF a = 1e-2 for corpus-word rows", {"weights": ("per_type", 1e-2)}),
    ("Zipfian whitening of the rows, SIF a = 5e-3", {"whitening": "zipfian"}),
    ("Zipfian whitening of the rows, no weights", {"whitening": "zipfian", "weights": "none"}),
    # rows aggregated over corpus contexts (--contextual N lines), shrunk towards the
    # decontextualised row with prior weight m: (sum_ctx + m r) / (n + m)
    ("contextual rows, m = 0", {"contextual": 0.0}),
    ("contextual rows, m = 1", {"contextual": 1.0}),
    ("contextual rows, m = 10", {"contextual": 10.0}),
    ("pooling: average of the mean and [CLS] rows", {"pooling": "mean+cls"}),
    ("pooling: 0.75 mean + 0.25 [CLS] rows", {"pooling": "mean+cls:0.25"}),
    ("pooling: 0.25 mean + 0.75 [CLS] rows", {"pooling": "mean+cls:0.75"}),
    ("pooling: mean and [CLS] rows concatenated (768-d, whitened to k)", {"pooling": "mean|cls"}),
    # the weighting again with the mean+[CLS] rows (fit_rows as distill runs it)
    ("mean+[CLS] rows, SIF a = 3e-3", {"pooling": "mean+cls", "fit": ("sif", 3e-3)}),
    ("mean+[CLS] rows, SIF a = 1e-2", {"pooling": "mean+cls", "fit": ("sif", 1e-2)}),
    ("mean+[CLS] rows, uSIF", {"pooling": "mean+cls", "fit": ("usif", None)}),
    ("mean+[CLS] rows, Zipf a = 3e-4", {"pooling": "mean+cls", "fit": ("zipf", 3e-4)}),
]


def pooled_rows(encoder, token_ids, *, batch_size=512):
    """The teacher rows of each token sequence under three poolings of the last layer, in
    one forward pass with ``token_rows``'s framing, batching and precision: "mean" (over
    ``[CLS] ids [SEP]``, ``token_rows``'s), "inner" (over the ids' own positions), "cls"."""
    import torch

    from sentvec.distill.rows import _special_frame
    from sentvec.encoders import resolve_precision
    from sentvec.encoders.pooling import mean_pool

    use_bf16 = resolve_precision("auto", encoder.device) == "bfloat16"
    head, tail = _special_frame(encoder.tokenizer)
    assert len(head) == 1 and len(tail) == 1
    framed = [head + [int(i) for i in ids] + tail for ids in token_ids]
    lengths = np.fromiter((len(f) for f in framed), dtype=np.int64, count=len(framed))
    order = np.argsort(lengths, kind="stable")
    out = {m: np.empty((len(framed), encoder.hidden_size), np.float32) for m in POOLINGS}
    pad = encoder.tokenizer.pad_token_id or 0
    with (
        torch.inference_mode(),
        torch.autocast(torch.device(encoder.device).type, torch.bfloat16, enabled=use_bf16),
    ):
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            T = int(lengths[batch].max())
            ids = np.full((len(batch), T), pad, dtype=np.int64)
            mask = np.zeros((len(batch), T), dtype=np.int64)
            for r, j in enumerate(batch):
                ids[r, : lengths[j]] = framed[j]
                mask[r, : lengths[j]] = 1
            inner = mask.copy()
            inner[:, 0] = 0
            inner[np.arange(len(batch)), lengths[batch] - 1] = 0
            mask_t = torch.from_numpy(mask)
            res = encoder.model(
                input_ids=torch.from_numpy(ids), attention_mask=mask_t,
                output_hidden_states=True, return_dict=True,
            )  # fmt: skip
            h = res.hidden_states[-1].float()
            out["mean"][batch] = mean_pool(h, mask_t).numpy()
            out["inner"][batch] = mean_pool(h, torch.from_numpy(inner)).numpy()
            out["cls"][batch] = h[:, 0].numpy()
    return out


POOLINGS = ("mean", "inner", "cls")


def zipfian_whiten(rows, p, k):
    """Zipfian whitening (Yokoi et al., NeurIPS 2024, Alg. 1): mean and covariance of the
    rows weighted by their probability ``p``; returns ``(r - mu) U_k D_k^{-1/2}``."""
    R = rows.astype(np.float64)
    mu = p @ R
    C = (R - mu).T @ ((R - mu) * p[:, None])
    vals, vecs = np.linalg.eigh(C)
    vals, vecs = vals[::-1][:k], vecs[:, ::-1][:, :k]
    return ((R - mu) @ (vecs / np.sqrt(vals))).astype(np.float32)


def contextual_sums(encoder, teacher_ids, model_ids, pieces, V, n_rows, *, budget=16384):
    """Bommasani et al. (ACL 2020) / X2Static's aggregated rows: the teacher's last-layer
    output of each token occurrence in corpus lines, summed per model row (a corpus word: the
    mean over its pieces' positions), with the occurrence counts. Lines over 254 tokens and
    lines whose model ids do not cover their teacher ids piece for piece are skipped."""
    import torch

    from sentvec.distill.rows import _special_frame
    from sentvec.encoders import resolve_precision

    use_bf16 = resolve_precision("auto", encoder.device) == "bfloat16"
    head, tail = _special_frame(encoder.tokenizer)
    d = int(encoder.hidden_size)
    sums = np.zeros((n_rows, d), np.float64)
    n = np.zeros(n_rows, np.int64)
    spans = []  # per line: (row id, start, end) in the line's teacher positions
    use = []
    for i, (t, m) in enumerate(zip(teacher_ids, model_ids, strict=True)):
        if not 0 < len(t) <= 254:
            continue
        pos, sp = 0, []
        for r in m.tolist():
            L = 1 if r < V else len(pieces[r])
            sp.append((r, pos, pos + L))
            pos += L
        if pos == len(t):
            use.append(i)
            spans.append(sp)
    order = sorted(range(len(use)), key=lambda j: len(teacher_ids[use[j]]))
    pad = encoder.tokenizer.pad_token_id or 0
    start = 0
    with (
        torch.inference_mode(),
        torch.autocast(torch.device(encoder.device).type, torch.bfloat16, enabled=use_bf16),
    ):
        while start < len(order):
            T = len(teacher_ids[use[order[start]]]) + 2
            end = start + 1
            while end < len(order):
                T2 = len(teacher_ids[use[order[end]]]) + 2
                if T2 * (end - start + 1) > budget:
                    break
                T, end = T2, end + 1
            batch = order[start:end]
            ids = np.full((len(batch), T), pad, dtype=np.int64)
            mask = np.zeros((len(batch), T), dtype=np.int64)
            for r, j in enumerate(batch):
                f = head + teacher_ids[use[j]].tolist() + tail
                ids[r, : len(f)] = f
                mask[r, : len(f)] = 1
            res = encoder.model(
                input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                return_dict=True,
            )  # fmt: skip
            h = res.last_hidden_state.float().numpy()
            for r, j in enumerate(batch):
                hr = h[r, 1:]
                for row, a, b in spans[j]:
                    sums[row] += hr[a] if b == a + 1 else hr[a:b].mean(axis=0)
                    n[row] += 1
            start = end
    return sums, n, len(use)


def ideas(args) -> int:
    from sentvec import TransformerEncoder
    from sentvec.distill import (
        DEFAULT_LAYERS,
        DEFAULT_SIF_A,
        DistilledModel,
        fit_rows,
        token_rows,
        token_weights,
        whiten_token_rows,
        zipf_weights,
    )
    from sentvec.distill.corpus import (
        DEFAULT_WHITENING_SENTENCES,
        count_corpus_tokens,
        teacher_vocabulary,
    )
    from sentvec.distill.vocabulary import plan_rows
    from sentvec.encoders.sif import sif_weights

    n_lines = DEFAULT_WHITENING_SENTENCES
    n_words = 2000  # the defaults the sweep ran at (tuning round 2)
    a = DEFAULT_SIF_A
    enc = TransformerEncoder.from_pretrained("minilm", layers=DEFAULT_LAYERS, device="cpu")
    assert enc.pooling == "mean" and enc.layer_indices == (6,), enc.layer_indices
    tok = enc.tokenizer
    tokens, keep0, tok_json, _ = teacher_vocabulary(tok)
    V = len(tokens)
    t0 = time.perf_counter()
    stats = count_corpus_tokens(
        tok, args.corpus, max_sentences=n_lines, sample_sentences=n_lines, keep_lines=True
    )
    plan = plan_rows(
        tok_json, tokens, keep0, stats.sample, stats.lines, n_words=n_words,
        unk_id=tok.unk_token_id,
    )  # fmt: skip
    keep = plan.keep
    print(f"{stats.n_sentences} lines counted, planned: {time.perf_counter() - t0:.0f} s")
    ids = np.flatnonzero(keep)
    cached = np.load(args.row_cache) if args.row_cache.is_file() else None
    if cached is not None and np.array_equal(cached["ids"], ids):
        rows = {m: cached[m] for m in POOLINGS}
    else:
        t0 = time.perf_counter()
        # as distill: the teacher's own tokens in one call, then the corpus words
        parts = [ids[ids < V], ids[ids >= V]]
        got = [pooled_rows(enc, [plan.pieces[i] for i in part]) for part in parts]
        rows = {}
        for m in POOLINGS:
            rows[m] = np.zeros((len(plan.pieces), enc.hidden_size), np.float32)
            for part, g in zip(parts, got, strict=True):
                rows[m][part] = g[m]
        lib = np.zeros_like(rows["mean"])
        for part in parts:
            lib[part] = token_rows(enc, [plan.pieces[i] for i in part], show_progress_bar=False)
        diff = float(np.abs(lib - rows["mean"]).max())
        print(f"rows: {time.perf_counter() - t0:.0f} s; |mean - token_rows| max {diff:.2e}")
        assert diff < 1e-5, diff
        np.savez(args.row_cache, ids=ids, **rows)
    rows["mean+cls"] = (rows["mean"] + rows["cls"]) / 2
    rows["mean+cls:0.25"] = 0.75 * rows["mean"] + 0.25 * rows["cls"]
    rows["mean+cls:0.75"] = 0.25 * rows["mean"] + 0.75 * rows["cls"]
    rows["mean|cls"] = np.concatenate([rows["mean"], rows["cls"]], axis=1)
    counts = np.bincount(np.concatenate(plan.sample), minlength=plan.n_tokens)[: plan.n_tokens]
    c = np.where(keep, counts, 0).astype(np.float64)
    p_count = c / c.sum()
    p_zipf = np.zeros(len(keep))
    # zipf_weights(n, a) = a / (a + p): recover Model2Vec's rank prior p over the kept rows
    p_zipf[keep] = 1.0 / zipf_weights(int(keep.sum()), 1.0) - 1.0

    picked = IDEAS if args.configs is None else [IDEAS[int(i)] for i in args.configs.split(",")]
    if any("contextual" in cfg for _, cfg in picked):
        ctx_cache = args.row_cache.with_name(args.row_cache.stem + f"-ctx{args.contextual}.npz")
        if ctx_cache.is_file():
            z = np.load(ctx_cache)
            ctx_sum, ctx_n = z["sums"], z["n"]
        else:
            t0 = time.perf_counter()
            ctx_sum, ctx_n, used = contextual_sums(
                enc, stats.sample[: args.contextual], plan.sample[: args.contextual],
                plan.pieces, V, len(plan.pieces),
            )  # fmt: skip
            print(
                f"contextual rows: {used} lines, {int((ctx_n > 0).sum())} rows seen, "
                f"{time.perf_counter() - t0:.0f} s", flush=True,
            )  # fmt: skip
            np.savez(ctx_cache, sums=ctx_sum, n=ctx_n)
    table = []
    for name, cfg in picked:
        R = rows[cfg.get("pooling", "mean")].astype(np.float64)
        if "contextual" in cfg:
            m = cfg["contextual"]
            seen = (ctx_n > 0) & keep
            R[seen] = (ctx_sum[seen] + m * R[seen]) / (ctx_n[seen] + m)[:, None]
        power = cfg.get("norm_power", 0.0)
        if power:
            nrm = np.linalg.norm(R, axis=1, keepdims=True)
            R = np.divide(R, nrm**power, out=np.zeros_like(R), where=nrm > 0)
        wcfg = cfg.get("weights", "sif")
        if wcfg == "sif":
            w, _ = token_weights("sif", counts, keep, sif_a=a)
        elif wcfg == "none":
            w = keep.astype(np.float64)
        elif wcfg[0] == "backoff":
            w = np.where(keep, sif_weights(np.maximum(p_count, wcfg[1] * p_zipf), a), 0.0)
        else:  # per_type
            w, _ = token_weights("sif", counts, keep, sif_a=a)
            w[V:] = np.where(keep[V:], sif_weights(p_count[V:], wcfg[1]), 0.0)
        if "fit" in cfg:
            emb, _ = fit_rows(
                R, keep, dim=args.dim, weighting=cfg["fit"][0], whiten="corpus",
                counts=counts, sample=plan.sample, sif_a=cfg["fit"][1],
            )  # fmt: skip
            w, _ = token_weights(cfg["fit"][0], counts, keep, sif_a=cfg["fit"][1])
        elif cfg.get("whitening", "sentence") == "sentence":
            white, _ = whiten_token_rows(R, plan.sample, args.dim)
        else:
            white = zipfian_whiten(np.where(keep[:, None], R, 0.0), p_count, args.dim)
        if "fit" not in cfg:
            emb = (white * w[:, None]).astype(np.float32)
            emb[~keep] = 0.0
        if not cfg:  # the defaults: the library's own fit
            ref, _ = fit_rows(
                rows["mean"], keep, dim=args.dim, weighting="sif", whiten="corpus",
                counts=counts, sample=plan.sample, sif_a=a,
            )  # fmt: skip
            assert np.array_equal(ref, emb), float(np.abs(ref - emb).max())
        model = DistilledModel(emb, json.dumps(plan.tokenizer_json), {}).to_encoder(dtype="float16")
        dev, dev_tasks = sts_of(model, "dev")
        avg, tasks = sts_of(model)
        changed = int(np.sum(np.abs(w - token_weights("sif", counts, keep, sif_a=a)[0]) > 0.01))
        table.append(
            {"name": name, "config": {k: list(v) if isinstance(v, tuple) else v
                                      for k, v in cfg.items()},
             "dev": dev, "dev_tasks": dev_tasks, "test": avg, "tasks": tasks,
             "weights_changed_over_1pct": changed,
             "contextual_lines": args.contextual if "contextual" in cfg else None}
        )  # fmt: skip
        print(f"{name:<55} dev {dev:6.2f}  test {avg:6.2f}  (w changed: {changed})", flush=True)
        args.out.write_text(json.dumps(table, indent=2))
    return 0


# Tuning round 4 (docs/results/distill-sweep5-plan.md, fixed before the runs): changes
# from the current defaults (mean_cls rows of the last layer, uSIF n = 11, teacher vocabulary,
# the first 200,000 lines counted and whitened). Keys: "lines" ("spread": every 5th non-empty
# line of the first 1,000,000), "mix" (weight of the mean rows; the [CLS] rows get 1 - mix),
# "beta" (W = U_k D_k^-beta), "shrink" (W = U_k (D_k + s mean(D_k))^-1/2), "weighted_fit"
# (whitening fitted on the weighted sentence vectors, applied to the weighted rows), "abtt"
# (All-but-the-top: the token rows' mean and top D principal components removed before the
# whitening), "usif_n" (an int, or "mean_length"), "unit_each" (mean and [CLS] rows each
# scaled to unit norm before mixing), "norm_power" (uSIF's rows divided by ||r||^power instead
# of ||r||)
IDEAS5: list[tuple[str, dict]] = [
    ("defaults", {}),
    ("200,000 lines spread: every 5th of the first 1,000,000", {"lines": "spread"}),
    ("rows 0.6 mean + 0.4 [CLS]", {"mix": 0.6}),
    ("rows 0.4 mean + 0.6 [CLS]", {"mix": 0.4}),
    ("over-whitening beta = 0.55", {"beta": 0.55}),
    ("over-whitening beta = 0.6", {"beta": 0.6}),
    ("whitening fitted on the uSIF-weighted vectors", {"weighted_fit": True}),
    ("All-but-the-top D = 1 before the whitening", {"abtt": 1}),
    ("All-but-the-top D = 2 before the whitening", {"abtt": 2}),
    ("All-but-the-top D = 3 before the whitening", {"abtt": 3}),
    ("uSIF n = 8", {"usif_n": 8}),
    ("uSIF n = 15", {"usif_n": 15}),
    ("uSIF n = measured mean sentence length", {"usif_n": "mean_length"}),
    ("mean and [CLS] rows each unit norm before mixing", {"unit_each": True}),
    ("uSIF weights, rows not scaled to unit norm", {"norm_power": 0.0}),
    ("uSIF weights, rows divided by ||r||^0.5", {"norm_power": 0.5}),
    ("shrunk whitening (D_k + 0.1 mean(D_k))^-1/2", {"shrink": 0.1}),
]


def spread_lines(corpus: str, out: Path, *, step: int = 5, n: int = 200_000) -> None:
    """Every ``step``-th non-empty (stripped) line of ``corpus``, ``n`` of them, to ``out``."""
    from sentvec.sent2vec.dictionary import open_binary

    kept = 0
    with open_binary(Path(corpus)) as fh, out.open("w", encoding="utf-8") as dst:
        i = 0
        for raw in fh:
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            if i % step == 0:
                dst.write(line + "\n")
                kept += 1
                if kept >= n:
                    break
            i += 1


def whiten5(R, sample, k, *, beta=0.5, shrink=0.0):
    """``whiten_token_rows`` with ``W = U_k (D_k + shrink mean(D_k))^-beta`` (beta 0.5, shrink 0:
    Eq. 1)."""
    from sentvec.distill.reduction import _sentence_matrix
    from sentvec.whitening import Whitening

    S = _sentence_matrix(sample, R.shape[0])
    X = np.asarray(S @ R.astype(np.float32))
    w = Whitening(k, warn_singular=False).fit(X)
    D = w.explained_variance_ + shrink * w.explained_variance_.mean()
    W = w.components_.T * D**-beta
    return ((R.astype(np.float64) - w.mean_) @ W).astype(np.float32)


def ideas5(args) -> int:
    from sentvec import TransformerEncoder
    from sentvec.distill import (
        DEFAULT_LAYERS,
        DistilledModel,
        fit_rows,
        token_rows,
        token_weights,
        whiten_token_rows,
    )
    from sentvec.distill.corpus import (
        DEFAULT_WHITENING_SENTENCES,
        count_corpus_tokens,
        teacher_vocabulary,
    )
    from sentvec.distill.vocabulary import plan_rows

    n_lines = DEFAULT_WHITENING_SENTENCES
    enc = TransformerEncoder.from_pretrained("minilm", layers=DEFAULT_LAYERS, device="cpu")
    assert enc.layer_indices == (6,), enc.layer_indices
    tok = enc.tokenizer
    tokens, keep0, tok_json, _ = teacher_vocabulary(tok)
    V = len(tokens)

    def corpus_plan(path):
        stats = count_corpus_tokens(tok, path, max_sentences=n_lines, sample_sentences=n_lines)
        plan = plan_rows(tok_json, tokens, keep0, stats.sample, [], n_words=0,
                         unk_id=tok.unk_token_id)  # fmt: skip
        assert plan.n_tokens == V and not plan.words
        return stats.counts[:V].copy(), plan.sample, stats.n_sentences

    t0 = time.perf_counter()
    counts, sample, n_read = corpus_plan(args.corpus)
    keep = keep0
    print(f"{n_read} lines counted: {time.perf_counter() - t0:.0f} s", flush=True)
    ids = np.flatnonzero(keep)
    cache = args.row_cache.with_name(args.row_cache.stem + "-5.npz")
    if cache.is_file() and np.array_equal(np.load(cache)["ids"], ids):
        z = np.load(cache)
        lib, mean, cls = z["lib"], z["mean"], z["cls"]
    else:
        t0 = time.perf_counter()
        lib = np.zeros((V, enc.hidden_size), np.float32)
        lib[ids] = token_rows(enc, [[int(i)] for i in ids], pooling="mean_cls",
                              show_progress_bar=False)  # fmt: skip
        got = pooled_rows(enc, [[int(i)] for i in ids])
        mean = np.zeros_like(lib)
        cls = np.zeros_like(lib)
        mean[ids], cls[ids] = got["mean"], got["cls"]
        np.savez(cache, ids=ids, lib=lib, mean=mean, cls=cls)
        print(f"rows: {time.perf_counter() - t0:.0f} s", flush=True)
    diff = float(np.abs(lib - (mean + cls) / 2).max())
    print(f"|token_rows(mean_cls) - (mean + cls) / 2| max {diff:.2e}", flush=True)
    assert diff < 1e-5, diff

    picked = IDEAS5 if args.configs is None else [IDEAS5[int(i)] for i in args.configs.split(",")]
    spread = None
    table = []
    for name, cfg in picked:
        t0 = time.perf_counter()
        c, smp = counts, sample
        if cfg.get("lines") == "spread":
            if spread is None:
                tmp = Path("/tmp/sentvec-sweep5-spread.txt")
                spread_lines(args.corpus, tmp)
                spread = corpus_plan(tmp)[:2]
            c, smp = spread
        mix = cfg.get("mix", 0.5)
        if cfg.get("unit_each"):

            def unit(X):
                n = np.linalg.norm(X, axis=1, keepdims=True)
                return np.divide(X, n, out=np.zeros_like(X), where=n > 0)

            R = mix * unit(mean.astype(np.float64)) + (1 - mix) * unit(cls.astype(np.float64))
        elif mix == 0.5:
            R = lib.astype(np.float64)
        else:
            R = mix * mean.astype(np.float64) + (1 - mix) * cls.astype(np.float64)
        power = cfg.get("norm_power", 1.0)
        nrm = np.linalg.norm(R, axis=1, keepdims=True)
        R = np.divide(R, nrm**power, out=np.zeros_like(R), where=nrm > 0) if power else R
        D = cfg.get("abtt", 0)
        if D:  # Mu & Viswanath 2018, Alg. 1, over the kept rows (the vocabulary)
            mu = R[keep].mean(axis=0)
            Xc = R[keep] - mu
            _, vecs = np.linalg.eigh(Xc.T @ Xc)
            U = vecs[:, ::-1][:, :D]
            R = np.where(keep[:, None], (R - mu) - ((R - mu) @ U) @ U.T, 0.0)
        n_usif = cfg.get("usif_n", 11)
        if n_usif == "mean_length":
            n_usif = int(round(float(np.mean([len(s) for s in smp if len(s)]))))
        w, wparams = token_weights("usif", c, keep, usif_n=n_usif)
        if cfg.get("weighted_fit"):
            emb = whiten5(R * w[:, None], smp, args.dim)
        else:
            if "beta" in cfg or "shrink" in cfg:
                white = whiten5(R, smp, args.dim, beta=cfg.get("beta", 0.5),
                                shrink=cfg.get("shrink", 0.0))  # fmt: skip
            else:
                white, _ = whiten_token_rows(R, smp, args.dim)
            emb = (white * w[:, None]).astype(np.float32)
        emb[~keep] = 0.0
        if not cfg:  # the defaults: the library's own fit, and whiten5 at beta 0.5
            ref, _ = fit_rows(lib, keep, dim=args.dim, weighting="usif", whiten="corpus",
                              counts=counts, sample=sample)  # fmt: skip
            assert np.array_equal(ref, emb), float(np.abs(ref - emb).max())
            alt = (whiten5(R, smp, args.dim) * w[:, None]).astype(np.float32)
            alt[~keep] = 0.0
            rel = float(np.abs(alt - emb).max() / np.abs(emb).max())
            print(
                f"whiten5(beta=0.5) against whiten_token_rows: max rel diff {rel:.1e}", flush=True
            )
            assert rel < 1e-4, rel
        model = DistilledModel(emb, json.dumps(tok_json), {}).to_encoder(dtype="float16")
        dev, dev_tasks = sts_of(model, "dev")
        avg, tasks = sts_of(model)
        table.append(
            {"name": name, "config": cfg, "dev": dev, "dev_tasks": dev_tasks, "test": avg,
             "tasks": tasks, "usif": wparams}
        )  # fmt: skip
        # dev only on the terminal: the choice is made on dev (the test column is in the json)
        print(f"{name:<55} dev {dev:6.2f} {dev_tasks}  ({time.perf_counter() - t0:.0f} s)",
              flush=True)  # fmt: skip
        args.out.write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
