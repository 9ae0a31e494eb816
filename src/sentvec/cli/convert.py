"""``sentvec convert``: an official sent2vec ``.bin`` file to a sentvec model directory, or back.

The source is memory-mapped, so converting a model of many GB needs little memory: its pages
are read once, through the page cache, while the destination is written (atomically: under a
temporary name, then renamed into place). A ``.bin`` -> directory -> ``.bin`` round trip gives
the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``convert`` sub-command."""
    p = subparsers.add_parser(
        "convert",
        help="convert a Sent2Vec model between the official .bin and a directory",
        description="MODEL.bin OUT_DIR writes a sentvec model directory (config.json, "
        "vocab.json, .npy matrices, memory-mapped on load); MODEL_DIR OUT.bin writes "
        "an official .bin file readable by the sent2vec binary.",
    )
    p.add_argument("source", help="official sent2vec .bin file or sentvec model directory")
    p.add_argument(
        "destination",
        help="directory to write (from a .bin) or .bin file to write (from a directory)",
    )
    p.add_argument(
        "--inference-only",
        action="store_true",
        help="(.bin -> directory) leave out the output matrix, which only training "
        "and writing a .bin need; the directory then loads inference-only",
    )
    p.set_defaults(func=_run_convert)


def _run_convert(args: argparse.Namespace) -> int:
    from sentvec._path_checks import check_model_path, check_output_path, check_outputs_not_inputs
    from sentvec.sent2vec.binfile import is_bin_file
    from sentvec.sent2vec.model import Sent2Vec
    from sentvec.sent2vec.model_dir import check_save_target, is_model_dir

    src, dst = Path(args.source), Path(args.destination)
    check_model_path(src, what="source")
    check_outputs_not_inputs(
        {"destination": dst},
        {"source": src},
        replaced_dirs=() if src.is_dir() else ("destination",),
    )
    if not src.exists():
        raise FileNotFoundError(f"model not found: {str(src)!r}")
    if src.is_dir():
        if not is_model_dir(src):
            raise ValueError(
                f"{str(src)!r} is not a sentvec Sent2Vec model directory (no "
                "config.json of that format)"
            )
        if args.inference_only:
            raise ValueError(
                "--inference-only applies to .bin -> directory; a .bin file always "
                "holds the output matrix"
            )
        check_output_path(dst, what="destination")
        model = Sent2Vec.load(src, mmap="r")
        written = model.save_bin(dst)
        what = "official .bin"
    elif is_bin_file(src):
        check_output_path(dst, what="destination", kind="whole-dir")
        check_save_target(dst)
        model = Sent2Vec.load(src, mmap="r", inference_only=args.inference_only)
        written = model.save(dst)
        what = "model directory" + (
            " (inference-only: no output matrix)" if args.inference_only else ""
        )
    else:
        raise ValueError(
            f"{str(src)!r} is neither an official sent2vec .bin file (wrong magic "
            "number) nor a sentvec model directory"
        )
    print(
        f"sentvec convert: {src} -> {written} ({what}; {model.nwords} words, dim {model.dim})",
        file=sys.stderr,
    )
    return 0
