"""``sentvec distill``: a static (Model2Vec-format) model from a transformer.

Every vocabulary token (with --vocabulary corpus:N also the most frequent corpus words the
vocabulary splits) goes through the teacher alone; its row is the average of the mean over
[CLS] t [SEP] and the [CLS] output, each scaled to unit norm first. The rows are whitened on
corpus sentences (WhiteningBERT Eq. 1, k = --dim), weighted by SIF from corpus counts and
written as a Model2Vec directory that model2vec, sentence-transformers' StaticEmbedding and
sentvec load (with --bigrams: sentvec's own bigram format). The distill record (teacher, corpus, counts, settings, wall
time) goes into distill.json and the model card.

Examples::

    sentvec distill --model minilm --dim 256 --corpus enwiki-2015-sentences-1M.txt.xz --output minilm-static
    sentvec distill --model minilm --pooling mean --weighting zipf --sif-a 1e-4 --whiten none --vocabulary teacher --output m2v-like
    sentvec distill --model minilm --corpus wiki.txt --bigrams 1000 --output minilm-bigrams
    sentvec distill --model mpnet --layers 1,-1 --weighting sif --corpus wiki.txt --output mpnet-static
"""

from __future__ import annotations

import argparse
from typing import Any

from sentvec.cli._args import (
    add_progress_option,
    float_range,
    int_at_least,
    layer_list,
    plain_text,
    positive_int,
    progress,
)

nonnegative_int = int_at_least(0)


def register(subparsers: Any) -> None:
    """Add the ``distill`` sub-command."""
    from sentvec.distill import (
        DEFAULT_BIGRAM_WEIGHT,
        DEFAULT_BIGRAMS,
        DEFAULT_DIM,
        DEFAULT_MAX_SENTENCES,
        DEFAULT_ROW_POOLING,
        DEFAULT_VOCABULARY,
        DEFAULT_WEIGHTING,
        DEFAULT_WHITENING_SENTENCES,
        ROW_POOLINGS,
        STORED_DTYPES,
        WEIGHTINGS,
        WHITEN_MODES,
    )
    from sentvec.encoders.base import PRECISIONS, TRANSFORMER_BACKENDS

    p = subparsers.add_parser(
        "distill",
        help="distill a static Model2Vec-format model from a transformer",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help="teacher: alias (minilm, mpnet) or directory")
    p.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="directory to write (new, empty, or an earlier distill output, replaced whole)",
    )
    p.add_argument(
        "--corpus",
        default=None,
        metavar="FILE",
        help="sentences, one per line (.xz/.gz/.bz2 read as is) for the whitening and the "
        "counts; never evaluation text (default: the packaged 10k Wikipedia sample)",
    )
    p.add_argument(
        "--dim",
        type=positive_int,
        default=DEFAULT_DIM,
        help=f"output dimension (default {DEFAULT_DIM})",
    )
    p.add_argument(
        "--weighting",
        choices=WEIGHTINGS,
        default=DEFAULT_WEIGHTING,
        help=f"token weights: sif / usif from corpus counts, zipf from the rank as Model2Vec, "
        f"none (default {DEFAULT_WEIGHTING})",
    )
    p.add_argument(
        "--whiten",
        choices=WHITEN_MODES,
        default="corpus",
        help="corpus: WhiteningBERT's whitening fitted on the corpus (k = --dim); none: "
        "Model2Vec's PCA to --dim (default corpus)",
    )
    p.add_argument(
        "--vocabulary",
        default=DEFAULT_VOCABULARY,
        metavar="teacher|corpus[:N]",
        help="rows: the teacher's vocabulary, plus with corpus[:N] a row for each of the N "
        f"most frequent corpus words it splits (default {DEFAULT_VOCABULARY})",
    )
    p.add_argument(
        "--bigrams",
        type=nonnegative_int,
        default=DEFAULT_BIGRAMS,
        metavar="N",
        help="rows for the N most frequent corpus bigrams, averaged in as Sent2Vec does; the "
        f"model is then written in sentvec's bigram format (default {DEFAULT_BIGRAMS})",
    )
    p.add_argument(
        "--bigram-weight",
        type=float_range(0.0, 100.0),
        default=DEFAULT_BIGRAM_WEIGHT,
        help=f"factor on the bigram rows' weights (default {DEFAULT_BIGRAM_WEIGHT})",
    )
    p.add_argument(
        "--pooling",
        choices=ROW_POOLINGS,
        default=DEFAULT_ROW_POOLING,
        help=f"token-row pooling (default {DEFAULT_ROW_POOLING}: the average of the mean over "
        "[CLS] t [SEP], Model2Vec's rows, and the [CLS] output, each scaled to unit norm; "
        "mean_cls: the same without the scaling; chosen on dev)",
    )
    p.add_argument(
        "--layers",
        type=layer_list,
        default=(-1,),
        metavar="I,J,...",
        help="hidden states averaged for the token rows (default -1; write --layers=-1)",
    )
    p.add_argument(
        "--sif-a",
        type=float_range(0.0, 1.0, low_inclusive=False),
        default=None,
        help="SIF's a for sif (5e-3) or zipf (3e-4)",
    )
    p.add_argument(
        "--max-sentences",
        type=positive_int,
        default=DEFAULT_MAX_SENTENCES,
        help=f"corpus lines counted for sif / usif (default {DEFAULT_MAX_SENTENCES})",
    )
    p.add_argument(
        "--whitening-sentences",
        type=positive_int,
        default=DEFAULT_WHITENING_SENTENCES,
        help=f"first corpus lines the whitening is fitted on (default {DEFAULT_WHITENING_SENTENCES})",
    )
    p.add_argument(
        "--dtype",
        choices=STORED_DTYPES,
        default="float16",
        help="stored rows (default float16, as Model2Vec stores them)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="teacher forward pass: auto is bfloat16 where the device has it in hardware "
        "(AMX / AVX512-BF16 CPUs, most GPUs), float32 elsewhere and with --backend onnx",
    )
    p.add_argument(
        "--backend",
        choices=TRANSFORMER_BACKENDS,
        default="torch",
        help="teacher forward pass: torch, or onnx (ONNX Runtime on the CPU, float32; the "
        "onnx extra) (default torch)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=512,
        help="token sequences per teacher forward pass (default 512)",
    )
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    add_progress_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``sentvec distill``; returns the exit code."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentvec.distill import DistillConfig, distill

    config = DistillConfig(
        model=args.model,
        output=args.output,
        corpus=args.corpus,
        dim=args.dim,
        weighting=args.weighting,
        whiten=args.whiten,
        vocabulary=args.vocabulary,
        bigrams=args.bigrams,
        bigram_weight=args.bigram_weight,
        pooling=args.pooling,
        layers=args.layers,
        max_sentences=args.max_sentences,
        whitening_sentences=args.whitening_sentences,
        sif_a=args.sif_a,
        batch_size=args.batch_size,
        device=args.device,
        backend=args.backend,
        precision=args.precision,
        dtype=args.dtype,
        show_progress_bar=progress(args),
    )
    result = distill(config)
    rec = result.record
    t = rec["wall_time_s"]
    print(
        f"wrote {args.output}: {rec['rows']} rows x {result.embeddings.shape[1]} ({args.dtype}), "
        f"weighting {args.weighting}, whiten {args.whiten}, layers {list(args.layers)}, "
        f"{rec['corpus_words']} corpus words, {rec['bigram_rows']} bigrams; "
        f"{t['total_s']:.1f} s (teacher {t['teacher_forward_s']:.1f} s, "
        f"{rec['settings']['precision']})"
    )
    return 0
