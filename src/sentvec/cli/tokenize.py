"""``sentvec tokenize``: the text preparation a Sent2Vec model applies, as a stream filter.

The defaults are the reference-corpus recipe (Moses-tokenized, lower-cased): official ``.bin``
models expect input prepared so.
"""

from __future__ import annotations

import argparse
import functools
import sys
from contextlib import ExitStack
from typing import IO, Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec._text_lines import TextLineReader as _LineReader
from sentvec.cli._args import ERRORS

TOKENIZERS = ("moses", "whitespace")


def register(subparsers: Any) -> None:
    """Add the ``tokenize`` sub-command."""
    t = subparsers.add_parser(
        "tokenize",
        help="Moses-tokenize and lower-case text (the reference corpus recipe)",
        description="Stream lines through the text preparation a Sent2Vec model applies; the "
        "defaults are the reference-corpus recipe (Moses, lower-cased).",
    )
    t.add_argument("--input", "-i", default="-", help="text file (default: stdin)")
    t.add_argument("--output", "-o", default="-", help="text file (default: stdout)")
    t.add_argument(
        "--tokenizer",
        choices=TOKENIZERS,
        default="moses",
        help="moses: sacremoses' English Moses rules (default); whitespace: split on spaces",
    )
    t.add_argument(
        "--lowercase",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="lower-case after tokenizing (default: yes)",
    )
    t.add_argument(
        "--errors",
        choices=ERRORS,
        default="strict",
        help="what to do with lines that are not valid UTF-8 (default: strict)",
    )
    t.set_defaults(func=_run_tokenize)


#: Bytes of text read and tokenized per batch (whole lines).
BATCH_BYTES = 1 << 22


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # lone surrogates not made by surrogateescape: kept as they are
        return text.encode("utf-8", "surrogatepass")


def _decode_line(reader: _LineReader, first: int, raw: bytes, i: int) -> str:
    """Line ``i`` of a block whose first line is ``first``, decoded as the reader decodes."""
    return reader.decode_line(raw, first + i)


def _run_tokenize(args: argparse.Namespace) -> int:
    from sentvec._io import atomic_open
    from sentvec.sent2vec.preprocessing import Preprocessing

    check_outputs_not_inputs({"--output": args.output}, {"--input": args.input})
    prep = Preprocessing(lowercase=bool(args.lowercase), tokenizer=args.tokenizer)
    if args.output != "-":
        check_output_path(args.output, what="output")
    reader = _LineReader(args.input, args.errors)
    n = n_fallback = 0
    with ExitStack() as stack:
        if args.output == "-":
            sys.stdout.flush()
            out: IO[bytes] = sys.stdout.buffer
        else:
            out = stack.enter_context(atomic_open(args.output, "wb"))
        if args.tokenizer == "moses":
            from sentvec.sent2vec.moses import MosesTokenizer

            moses = MosesTokenizer(lowercase=bool(args.lowercase))
            moses.load()  # a first run compiles the kernels, saying so on stderr
            for body, first in reader.blocks(BATCH_BYTES):  # bytes in, bytes out
                decode = functools.partial(_decode_line, reader, first)
                out.write(moses.tokenize_utf8(body, decode))
                n += body.count(b"\n") + 1
            n_fallback = moses.n_fallback
        else:
            for line in reader:
                out.write(_encode(prep.prepare(line) + "\n"))
                n += 1
        out.flush()
    lines = "1 line" if n == 1 else f"{n} lines"
    msg = f"sentvec tokenize: {lines} ({args.tokenizer}, lowercase={bool(args.lowercase)})"
    if n_fallback:
        msg += f"; {n_fallback} tokenized by sacremoses itself (the compiled rules' fallback)"
    if reader.n_bad:
        msg += f"; lines not valid UTF-8: {reader.n_bad} (--errors {args.errors})"
    print(msg, file=sys.stderr)
    return 0
