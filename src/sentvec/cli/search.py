"""``sentvec search``: semantic search over the lines of a text file.

The corpus (one sentence per line) is encoded once into an index directory (default
``<corpus>.sentvec-index``) together with ``fingerprint.json``: a SHA-256 over the corpus bytes,
the model (its description and the size/mtime of its files), metric and backend. Later runs with
the same fingerprint reuse the index; any change of corpus, model, metric or backend rebuilds it,
so a stale index is never used. Results: rank, score, 1-based line number and the line's text.

Examples::

    sentvec search --model minilm --corpus wiki.txt --query "Who painted the Mona Lisa?"
    sentvec search --model model.bin --corpus wiki.tok.txt --queries q.txt -k 5 --json
    sentvec search --model minilm --corpus wiki.txt --query "volcano" --backend faiss --metric dot
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from sentvec.cli._args import (
    MODEL_HELP,
    add_device_options,
    add_progress_option,
    device_options,
    plain_text,
    positive_int,
    progress,
)


def register(subparsers: Any) -> None:
    """Add the ``search`` sub-command."""
    p = subparsers.add_parser(
        "search",
        help="semantic search over the lines of a text file (index built once, reused)",
        description=plain_text(
            __doc__.split("\n\n")[1]
            + "\n\n"
            + __doc__.split("\n\n")[2].split("Examples::")[0].rstrip()
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    p.add_argument(
        "--corpus", required=True, metavar="FILE", help="UTF-8 text, one sentence per line"
    )
    q = p.add_mutually_exclusive_group(required=True)
    q.add_argument("--query", action="append", metavar="TEXT", help="a query (repeatable)")
    q.add_argument(
        "--queries", metavar="FILE", help="a file of queries, one per line (blank lines skipped)"
    )
    p.add_argument(
        "-k",
        type=positive_int,
        default=10,
        help="results per query (default 10; at most the lines of the corpus)",
    )
    p.add_argument(
        "--index",
        default=None,
        metavar="DIR",
        help="index directory (default: <corpus>.sentvec-index)",
    )
    p.add_argument(
        "--backend",
        choices=("exact", "faiss"),
        default="exact",
        help="exact = numpy; faiss = faiss IndexFlatIP (both exact; default exact)",
    )
    p.add_argument(
        "--metric",
        choices=("cosine", "dot"),
        default="cosine",
        help="score of a corpus line: cosine similarity (default) or dot product",
    )
    p.add_argument("--rebuild", action="store_true", help="rebuild the index even if it is current")
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="passed to the encoder (default: the encoder's own)",
    )
    add_device_options(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    add_progress_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build or reuse the index, search, print results; return 0."""
    from sentvec._path_checks import check_input_file, check_outputs_not_inputs
    from sentvec.encoders import load_encoder
    from sentvec.search import corpus_lines_at, open_corpus_index

    check_outputs_not_inputs(
        {"--index": args.index},
        {"--corpus": args.corpus, "--queries": args.queries, "--model": args.model},
        replaced_dirs=("--index",),
    )
    corpus = check_input_file(args.corpus, what="corpus", regular=True)
    if args.queries:
        from sentvec._text_lines import read_text_lines

        qpath = Path(args.queries)
        queries = [q.strip() for q in read_text_lines(qpath, what="queries") if q.strip()]
        if not queries:
            raise ValueError(f"--queries {str(qpath)!r} holds no non-blank line")
    else:
        queries = list(args.query)
    encoder = load_encoder(args.model, **device_options(args))
    t0 = time.perf_counter()
    found = open_corpus_index(
        corpus,
        encoder,
        model_arg=args.model,
        index_dir=args.index,
        metric=args.metric,
        backend=args.backend,
        rebuild=args.rebuild,
        batch_size=args.batch_size,
        show_progress_bar=progress(args),
    )
    index = found.index
    if found.built:
        print(
            f"built index of {found.n_lines} lines in {time.perf_counter() - t0:.1f} s: "
            f"{found.directory if found.saved else '(in memory, not saved)'}",
            file=sys.stderr,
        )
    else:
        print(f"reusing index ({index.ntotal} lines)", file=sys.stderr)
    k = min(args.k, max(index.ntotal, 1))
    if k < args.k:
        print(
            f"-k {args.k} is more than the {index.ntotal} lines of the index: "
            f"returning all {index.ntotal}, ranked",
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    scores, ids = index.search_texts(queries, k, batch_size=args.batch_size)
    dt = time.perf_counter() - t0
    texts = corpus_lines_at(corpus, {int(i) for i in ids.ravel() if i >= 0})
    results: list[dict[str, Any]] = [
        {
            "query": q,
            "results": [
                {"rank": r + 1, "score": float(s), "line": int(i) + 1, "text": texts[int(i)]}
                for r, (s, i) in enumerate(zip(srow, irow, strict=True))
                if i >= 0
            ],
        }
        for q, srow, irow in zip(queries, scores, ids, strict=True)
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "model": args.model,
                    "corpus": os.fspath(corpus),
                    "k": k,
                    "metric": args.metric,
                    "backend": args.backend,
                    "queries": results,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        for block in results:
            print(f"query: {block['query']}")
            for hit in block["results"]:
                print(
                    f"{hit['rank']:>4}  {hit['score']:8.4f}  line {hit['line']:>8}  {hit['text']}"
                )
            print()
    n = len(queries)
    print(f"searched {n} {'query' if n == 1 else 'queries'} in {dt * 1000:.1f} ms", file=sys.stderr)
    return 0
