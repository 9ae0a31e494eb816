"""Search backends, same run: faiss ``IndexFlatIP`` vs sentvec's exact numpy backend.

Corpus: the first ``--n-corpus`` (100,000) lines of the Moses-tokenised, lower-cased Wikipedia
corpus ``enwiki-2015-sentences-1M.tok.lower.txt.xz`` (read with lzma); queries: the next
``--n-queries`` (1,000) lines, held out. Both are encoded once with a Sent2Vec model (default: the
official reference ``tests/data/sent2vec-reference/tiny-bigram.bin``, 16-d; ``--model`` takes any
sentvec model, e.g. a trained 100-d directory). Then, for each backend and metric:

* build time (``add`` of all corpus vectors), batch query time for all queries at once, and the
  median single-query latency over 200 queries one at a time;
* agreement: recall@10 of faiss against exact (mean |top-10 faiss ∩ top-10 exact| / 10), rows with
  identical id lists, and whether every differing id is explained by a float near-tie
  (|score difference to the exact 10th score| <= 1e-5);
* the exact backend against a float64 numpy ``argsort`` oracle on 100 queries.

Usage::

    python bench/search.py [--model PATH] [--n-corpus 100000] [--n-queries 1000] [--k 10] [--threads N]
"""

from __future__ import annotations

import argparse
import lzma
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")


def read_lines(path: Path, n: int) -> list[str]:
    out = []
    with lzma.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(line.rstrip("\n"))
            if len(out) == n:
                break
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "tests/data/sent2vec-reference/tiny-bigram.bin"))
    p.add_argument("--corpus", default=str(CORPUS))
    p.add_argument("--n-corpus", type=int, default=100_000)
    p.add_argument("--n-queries", type=int, default=1000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="limit BLAS (numpy) and OpenMP (faiss) threads alike (default: libraries' own)",
    )
    args = p.parse_args(argv)
    if args.threads:
        import faiss
        from threadpoolctl import threadpool_limits

        faiss.omp_set_num_threads(args.threads)
        threadpool_limits(args.threads)

    from sentvec.encoders import load_encoder
    from sentvec.search import SemanticSearch

    lines = read_lines(Path(args.corpus), args.n_corpus + args.n_queries)
    docs, queries = lines[: args.n_corpus], lines[args.n_corpus :]
    encoder = load_encoder(args.model)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X = encoder.encode(docs)
        Q = encoder.encode(queries)
    print(
        f"model: {args.model} (dim {X.shape[1]}); corpus {len(docs)} lines, {len(queries)} "
        f"held-out queries; encoded in {time.perf_counter() - t0:.1f} s"
    )
    for w in caught:
        print(f"  encoder warning: {w.message}")
    k = args.k
    for metric in ("cosine", "dot"):
        res = {}
        print(f"\nmetric={metric}, k={k}")
        for backend in ("exact", "faiss"):
            index = SemanticSearch(metric=metric, backend=backend)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                index.add(X)
                build = time.perf_counter() - t
                index.search(Q[:10], k)  # warm-up
                t = time.perf_counter()
                scores, ids = index.search(Q, k)
                batch = time.perf_counter() - t
                single = []
                for q in Q[:200]:
                    t = time.perf_counter()
                    index.search(q[None, :], k)
                    single.append(time.perf_counter() - t)
            res[backend] = (scores, ids, build, batch, statistics.median(single))
            print(
                f"  {backend:5s}: build {build * 1e3:8.1f} ms | {len(Q)} queries in one call "
                f"{batch * 1e3:8.1f} ms ({batch / len(Q) * 1e6:7.1f} us/query) | single-query "
                f"median {statistics.median(single) * 1e3:7.2f} ms"
            )
        (se, ie, be, qe, le), (sf, if_, bf, qf, lf) = res["exact"], res["faiss"]
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(ie, if_, strict=True)])
        same_rows = int((ie == if_).all(axis=1).sum())
        diff_rows = np.flatnonzero(~(ie == if_).all(axis=1))
        explained = all(
            np.all(np.abs(sf[r][~np.isin(if_[r], ie[r])] - se[r, -1]) <= 1e-5)
            and np.allclose(np.sort(sf[r]), np.sort(se[r]), atol=1e-5)
            for r in diff_rows
        )
        print(
            f"  faiss vs exact: recall@{k} = {recall:.4f}; identical id lists {same_rows}/{len(Q)}; "
            f"differences all float near-ties: {explained}"
        )
        print(
            f"  ratio faiss/exact: build {bf / be:.2f}x, batch query {qf / qe:.2f}x, "
            f"single query {lf / le:.2f}x"
        )
        # exact backend vs float64 argsort oracle on 100 queries
        Xo, Qo = X.astype(np.float64), Q[:100].astype(np.float64)
        if metric == "cosine":
            Xo = Xo / np.maximum(np.linalg.norm(Xo, axis=1, keepdims=True), 1e-300)
            Qo = Qo / np.maximum(np.linalg.norm(Qo, axis=1, keepdims=True), 1e-300)
        S = Qo @ Xo.T
        top = np.argsort(-S, axis=1, kind="stable")[:, :k]
        rec_o = np.mean([len(set(a) & set(b)) / k for a, b in zip(top, ie[:100], strict=True)])
        print(
            f"  exact vs float64 argsort oracle (100 queries): recall@{k} = {rec_o:.4f}, "
            f"max |score diff| = {np.abs(np.take_along_axis(S, top, 1) - se[:100]).max():.2e}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
