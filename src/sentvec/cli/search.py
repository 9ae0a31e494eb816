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
import hashlib
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from sentvec.cli._args import MODEL_HELP, check_output_path, plain_text, positive_int
from sentvec.search import _CONFIG as _INDEX_CONFIG
from sentvec.search import _FAISS, _VECTORS

_FINGERPRINT = "fingerprint.json"
#: The files of a search index directory (SemanticSearch.save) plus the CLI's fingerprint.
_INDEX_FILES = frozenset({_FINGERPRINT, _INDEX_CONFIG, _VECTORS, _FAISS})
_CHUNK_LINES = 8192


def register(subparsers: Any) -> None:
    """Add the ``search`` sub-command."""
    p = subparsers.add_parser(
        "search",
        help="semantic search over the lines of a text file (index built once, reused)",
        description=plain_text(__doc__.split("\n\n")[1] + "\n\n" + __doc__.split("\n\n")[2].split("Examples::")[0].rstrip()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    p.add_argument("--corpus", required=True, metavar="FILE", help="UTF-8 text, one sentence per line")
    q = p.add_mutually_exclusive_group(required=True)
    q.add_argument("--query", action="append", metavar="TEXT", help="a query (repeatable)")
    q.add_argument("--queries", metavar="FILE", help="a file of queries, one per line (blank lines skipped)")
    p.add_argument("-k", type=positive_int, default=10, help="results per query (default 10)")
    p.add_argument("--index", default=None, metavar="DIR",
                   help="index directory (default: <corpus>.sentvec-index)")
    p.add_argument("--backend", choices=("exact", "faiss"), default="exact",
                   help="exact = numpy; faiss = faiss IndexFlatIP (both exact; default exact)")
    p.add_argument("--metric", choices=("cosine", "dot"), default="cosine")
    p.add_argument("--rebuild", action="store_true", help="rebuild the index even if it is current")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="passed to the encoder (default: the encoder's own)")
    p.add_argument("--device", default=None, help="torch device for transformer models")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint(corpus: Path, model_arg: str, encoder: Any, metric: str, backend: str) -> dict[str, Any]:
    """What an index depends on; equal dicts mean the index can be reused."""
    from sentvec.cache import fingerprint_path
    from sentvec.encoders.base import describe_encoder
    from sentvec.search import _FORMAT, _VERSION

    desc = json.loads(json.dumps(describe_encoder(encoder), default=str))
    files = {}
    for cand in (model_arg, desc.get("model_path"), desc.get("source")):
        if cand and Path(str(cand)).expanduser().exists():
            files[str(Path(str(cand)).expanduser().resolve())] = fingerprint_path(str(cand))
    return {"index_format": [_FORMAT, _VERSION], "corpus": str(corpus.resolve()),
            "corpus_size": corpus.stat().st_size, "corpus_sha256": _sha256_file(corpus),
            "model_arg": model_arg, "model": desc, "model_files": files,
            "metric": metric, "backend": backend}


def _open_or_build(args: argparse.Namespace, encoder: Any, corpus: Path) -> tuple[Any, bool, int]:
    from sentvec._io import atomic_write_json, check_replaceable_directory, read_json_object
    from sentvec.encode_files import iter_line_chunks
    from sentvec.search import SemanticSearch

    index_dir = Path(args.index) if args.index else corpus.with_name(corpus.name + ".sentvec-index")
    fp = fingerprint(corpus, args.model, encoder, args.metric, args.backend)
    fp_path = index_dir / _FINGERPRINT
    if index_dir.exists() and not args.rebuild and fp_path.is_file():
        try:
            current = read_json_object(fp_path) == fp
            if current:
                return SemanticSearch.load(index_dir, encoder=encoder, mmap=True), False, 0
        except (ValueError, OSError) as exc:  # a damaged index is rebuilt, never trusted
            warnings.warn(f"index {str(index_dir)!r} is unreadable ({exc}); rebuilding it",
                          UserWarning, stacklevel=2)
    if index_dir.is_dir() and fp_path.is_file() and not (index_dir / _INDEX_CONFIG).is_file():
        names = {f.name for f in index_dir.iterdir()}
        if names <= _INDEX_FILES:  # a damaged index written here: only our files, cleared
            for name in names:
                (index_dir / name).unlink()
    # the rule SemanticSearch.save applies (a foreign directory is refused), before encoding
    check_replaceable_directory(index_dir, marker=_INDEX_CONFIG, kind="a sentvec search index")
    save = True
    try:
        check_output_path(index_dir, what="index directory", kind="whole-dir")
    except PermissionError as exc:
        if args.index:  # asked for: fail before the corpus is encoded
            raise
        # the default place, next to a read-only corpus: search all the same
        warnings.warn(f"{exc}; searching without saving the index (pass --index DIR to keep "
                      "it for the next search)", UserWarning, stacklevel=2)
        save = False
    t0 = time.perf_counter()
    index = SemanticSearch(metric=args.metric, backend=args.backend, encoder=encoder)
    n = 0
    for lines in iter_line_chunks(corpus, _CHUNK_LINES):
        index.add_texts(lines, batch_size=args.batch_size)
        n += len(lines)
    if n == 0:
        raise ValueError(f"corpus {str(corpus)!r} has no lines")
    if save:
        index.save(index_dir)  # replaces the directory (and any old fingerprint) atomically
        atomic_write_json(fp_path, fp)  # written last: an index without it is rebuilt
    print(f"built index of {n} lines in {time.perf_counter() - t0:.1f} s: "
          f"{index_dir if save else '(in memory, not saved)'}", file=sys.stderr)
    return index, True, n


def _lines_at(corpus: Path, wanted: set[int]) -> dict[int, str]:
    from sentvec.encode_files import iter_line_chunks

    out, first = {}, 0
    for lines in iter_line_chunks(corpus, _CHUNK_LINES):
        for i in [w for w in wanted if first <= w < first + len(lines)]:
            out[i] = lines[i - first]
        first += len(lines)
        if len(out) == len(wanted):
            break
    return out


def run(args: argparse.Namespace) -> int:
    """Build or reuse the index, search, print results; return 0."""
    from sentvec.pipeline import load_encoder

    corpus = Path(args.corpus)
    if not corpus.is_file():
        raise FileNotFoundError(f"corpus file not found: {str(corpus)!r}")
    if args.queries:
        from sentvec._io import read_text_lines

        qpath = Path(args.queries)
        queries = [q.strip() for q in read_text_lines(qpath, what="queries") if q.strip()]
        if not queries:
            raise ValueError(f"--queries {str(qpath)!r} holds no non-blank line")
    else:
        queries = list(args.query)
    encoder = load_encoder(args.model, device=args.device)
    index, built, _ = _open_or_build(args, encoder, corpus)
    if not built:
        print(f"reusing index ({index.ntotal} lines)", file=sys.stderr)
    t0 = time.perf_counter()
    scores, ids = index.search_texts(queries, args.k, batch_size=args.batch_size)
    dt = time.perf_counter() - t0
    texts = _lines_at(corpus, {int(i) for i in ids.ravel() if i >= 0})
    results = [{"query": q, "results": [
        {"rank": r + 1, "score": float(s), "line": int(i) + 1, "text": texts[int(i)]}
        for r, (s, i) in enumerate(zip(srow, irow)) if i >= 0]}
        for q, srow, irow in zip(queries, scores, ids)]
    if args.json:
        print(json.dumps({"model": args.model, "corpus": os.fspath(corpus), "k": args.k,
                          "metric": args.metric, "backend": args.backend, "queries": results},
                         ensure_ascii=False, indent=2))
    else:
        for block in results:
            print(f"query: {block['query']}")
            for hit in block["results"]:
                print(f"{hit['rank']:>4}  {hit['score']:8.4f}  line {hit['line']:>8}  {hit['text']}")
            print()
    print(f"searched {len(queries)} queries in {dt * 1000:.1f} ms", file=sys.stderr)
    return 0
