"""``sentvec embed``: one Sent2Vec vector per input line.

``embed`` writes exactly one vector per input line, always: empty and unknown-word lines give zero
rows, counted on stderr. Input must be UTF-8; ``--errors`` chooses what a line that is not does:
``strict`` (default) stops with an error naming the line number, ``replace`` substitutes U+FFFD,
``surrogateescape`` keeps the raw bytes (they can then match non-UTF-8 vocabulary entries, as in
the official binary, which works on bytes); the last two report how many lines were affected.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import numpy as np

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec._text_lines import TextLineReader as _LineReader
from sentvec.cli._args import ERRORS, add_progress_option, positive_int, progress


def register(subparsers: Any) -> None:
    """Add the ``embed`` sub-command."""
    p = subparsers.add_parser(
        "embed",
        help="embed each line of a text file with a Sent2Vec model",
        description="One Sent2Vec vector per input line (official .bin or sentvec directory). "
        "Empty or unknown-word lines give zero rows, counted on stderr.",
    )
    p.add_argument("model", help="official sent2vec .bin file or sentvec model directory")
    p.add_argument(
        "--input", "-i", default="-", help="text file, one sentence per line (default: stdin)"
    )
    p.add_argument(
        "--output",
        "-o",
        default="-",
        help="OUT.npy (float32 array, written atomically), OUT.npz (the same array "
        "under the key 'embeddings'), or a text file with one vector per line "
        "like 'fasttext print-sentence-vectors' (default: stdout); other binary "
        "suffixes (.pt, .pkl, .h5, ...) are refused",
    )
    p.add_argument(
        "--batch-size", type=positive_int, default=16384, help="lines per batch (default 16384)"
    )
    p.add_argument(
        "--threads", type=positive_int, default=None, help="kernel threads (default: all CPUs)"
    )
    p.add_argument("--normalize", action="store_true", help="scale vectors to unit L2 norm")
    p.add_argument(
        "--errors",
        choices=ERRORS,
        default="strict",
        help="what to do with lines that are not valid UTF-8 (default: strict)",
    )
    p.add_argument(
        "--mmap",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="memory-map the model's input matrix (default: yes; pages are shared "
        "with other processes); --no-mmap reads it into memory. The output "
        "matrix is never loaded",
    )
    add_progress_option(p)
    p.set_defaults(func=_run_embed)


#: Output suffixes that would be mistaken for a binary format if text were written there.
_REFUSED_SUFFIXES = (
    ".pt",
    ".pth",
    ".pkl",
    ".pickle",
    ".h5",
    ".hdf5",
    ".parquet",
    ".arrow",
    ".bin",
    ".safetensors",
    ".mat",
    ".feather",
)


def _check_output(output: str) -> None:
    """An output file must be writable (and not an existing directory) before any reading."""
    if output != "-":
        suffix = Path(output).suffix.lower()
        if suffix in _REFUSED_SUFFIXES:
            raise ValueError(
                f"--output {output!r}: embed writes .npy, .npz or text (one vector "
                f"per line), not {suffix}; choose one of those"
            )
        check_output_path(output, what="output")


def _batches(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _stdout_bytes() -> IO[bytes]:
    """Standard output as a binary stream (text written before it is flushed first)."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        return buffer

    class _Text:  # a text-only stdout (e.g. io.StringIO): the bytes are ASCII
        @staticmethod
        def write(data: Any) -> None:
            sys.stdout.write(bytes(data).decode("ascii"))

    return _Text()  # type: ignore[return-value]


def _run_embed(args: argparse.Namespace) -> int:
    from sentvec._io import atomic_open, atomic_save_npy
    from sentvec._validation import check_positive_int
    from sentvec._vector_text import write_rows
    from sentvec.sent2vec.model import Sent2Vec

    batch_size = check_positive_int("--batch-size", args.batch_size)
    threads = None if args.threads is None else check_positive_int("--threads", args.threads)
    check_outputs_not_inputs(
        {"--output": args.output}, {"model": args.model, "--input": args.input}
    )
    _check_output(args.output)
    try:
        model = Sent2Vec.load(args.model, mmap="r" if args.mmap else None, inference_only=True)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{exc}; `sentvec embed` takes Sent2Vec models (.bin or directory); for transformer "
            "models such as 'minilm' use `sentvec encode --model M`"
        ) from None
    reader = _LineReader(args.input, args.errors)
    suffix = "" if args.output == "-" else Path(args.output).suffix.lower()
    out_is_npy = suffix in (".npy", ".npz")
    totals = np.zeros(5, dtype=np.int64)  # lines, zero, empty, eos tokens, non-finite
    chunks: list[np.ndarray] = []

    def embed(batch: list[str]) -> np.ndarray:
        emb, st = model.encode_with_stats(
            batch, batch_size=batch_size, normalize=args.normalize, num_threads=threads
        )
        totals[:] += (st.n_sentences, st.n_zero, st.n_empty, st.n_eos_tokens, st.n_nonfinite)
        return emb

    with ExitStack() as stack:
        if out_is_npy:
            text_out = None
        elif args.output == "-":
            text_out = _stdout_bytes()
        else:
            text_out = stack.enter_context(atomic_open(args.output, "wb"))
        from sentvec._progress import progress_bar

        bar = stack.enter_context(progress_bar(show=progress(args), unit="line", desc="embed"))
        for batch in _batches(iter(reader), batch_size):
            emb = embed(batch)
            bar.update(len(batch))
            if text_out is None:
                chunks.append(emb)
            else:
                write_rows(text_out, emb)
        if out_is_npy:
            result = (
                np.concatenate(chunks) if chunks else np.zeros((0, model.dim), dtype=np.float32)
            )
            if suffix == ".npz":
                with atomic_open(args.output, "wb") as fh:
                    np.savez(fh, embeddings=result)
            else:
                atomic_save_npy(args.output, result)
        elif args.output == "-":
            getattr(text_out, "flush", lambda: None)()
    n, n_zero, n_empty, n_eos, n_nonfinite = (int(x) for x in totals)
    msg = (
        f"sentvec embed: {n} lines -> {n} vectors of dim {model.dim}; {n_zero} zero vectors "
        f"({n_empty} empty or whitespace-only lines, {n_zero - n_empty} with no known word)"
    )
    if n_eos:
        msg += f"; ignored {n_eos} literal '</s>' tokens"
    if n_nonfinite:
        msg += f"; WARNING: {n_nonfinite} vectors hold NaN or infinity (non-finite model weights)"
    if reader.n_bad:
        msg += f"; lines not valid UTF-8: {reader.n_bad} (--errors {args.errors})"
    print(msg, file=sys.stderr)
    return 0
