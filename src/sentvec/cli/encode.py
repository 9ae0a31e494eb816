"""``sentvec encode``: encode every line of a (large) text file into resumable ``.npy`` shards.

One float32 vector per input line (empty lines included, counted), written in shards of
``--shard-size`` lines with a ``manifest.json``; peak memory is about one shard. Re-running the
same command resumes: finished shards are kept, only missing ones are encoded. A changed input
file, model or whitening is refused unless ``--overwrite``. Read the result with
``sentvec.encode_files.load_embeddings(DIR)``.

Examples::

    sentvec encode --model minilm --input wiki.txt --output wiki-minilm
    sentvec encode --model model.bin --input wiki.tok.txt --output out --shard-size 50000
    sentvec encode --model minilm --input wiki.txt --output out --whitening whitening-dir
    sentvec encode --model minilm --input wiki.txt --output part-3 --start-line 3000000 --end-line 4000000
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sentvec.cli._args import MODEL_HELP, add_progress_option, int_at_least, plain_text, progress


def register(subparsers: Any) -> None:
    """Add the ``encode`` sub-command."""
    p = subparsers.add_parser(
        "encode",
        help="encode the lines of a large text file into resumable .npy shards",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help=MODEL_HELP)
    p.add_argument("--input", required=True, metavar="FILE", help="UTF-8 text, one sentence per line")
    p.add_argument("--output", required=True, metavar="DIR", help="directory for shards and manifest")
    p.add_argument("--shard-size", type=int_at_least(1), default=100_000, metavar="N",
                   help="lines per shard (default 100000)")
    p.add_argument("--batch-size", type=int_at_least(1), default=None,
                   help="passed to the encoder (default: the encoder's own)")
    p.add_argument("--whitening", default=None, metavar="DIR",
                   help="a saved Whitening (or pipeline with whitening) directory applied to every vector")
    p.add_argument("--start-line", type=int_at_least(0), default=0, help="first line, 0-based (default 0)")
    p.add_argument("--end-line", type=int_at_least(0), default=None, help="end line, exclusive (default: EOF)")
    p.add_argument("--no-resume", action="store_true", help="re-encode every shard")
    p.add_argument("--overwrite", action="store_true",
                   help="discard shards written with another model/whitening or from a changed input")
    p.add_argument("--device", default=None, help="torch device for transformer models")
    p.add_argument("--quiet", action="store_true", help="no progress display (= --no-progress)")
    add_progress_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Encode; print a one-line summary; return 0."""
    from sentvec.encode_files import encode_file
    from sentvec.encoders import load_encoder

    encoder = load_encoder(args.model, device=args.device)
    m = encode_file(encoder, args.input, args.output, shard_size=args.shard_size,
                    batch_size=args.batch_size, whitening=args.whitening,
                    resume=not args.no_resume, overwrite=args.overwrite,
                    start_line=args.start_line, end_line=args.end_line,
                    show_progress_bar=progress(args))
    run_ = m.runs[-1]
    print(f"{m.n_lines} lines [{m.start_line}, {m.end_line}) -> {m.n_shards} shards of dim "
          f"{m.dim} in {args.output} ({run_.n_shards_encoded} encoded, {run_.n_shards_reused} "
          f"reused; {m.n_empty} empty lines, {m.n_zero} zero vectors; {run_.wall_seconds:.1f} s)")
    if not m.complete:  # pragma: no cover - encode_file either completes or raises
        print("sentvec: warning: output incomplete", file=sys.stderr)
        return 1
    return 0
