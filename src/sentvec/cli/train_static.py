"""``sentvec train-static``: a static model trained against a transformer teacher.

The rows start from ``sentvec distill``'s model of the teacher (or random); the teacher encodes
the first --max-sentences corpus sentences (mean-pooled layer 1 and last layer, stored as
resumable .npy shards in --features, reusable by later runs); the targets are the teacher's
last-layer vectors reduced to --dim by PCA (or whitened: WhiteningBERT Eq. 1); the rows are
trained by Adam so that the mean row of each sentence predicts its target. The output is a Model2Vec directory that model2vec,
sentence-transformers' StaticEmbedding and sentvec load.

Examples::

    sentvec train-static --model minilm --corpus enwiki-2015-sentences-1M.txt.xz --output minilm-trained
    sentvec train-static --model minilm --corpus wiki.txt --features wiki-minilm-features --loss mse --output m
    sentvec train-static --model minilm --corpus wiki.txt --features feats --dask-workers 2 --output m
"""

from __future__ import annotations

import argparse
from typing import Any

from sentvec.cli._args import (
    add_progress_option,
    dask_client,
    float_range,
    int_at_least,
    plain_text,
    positive_int,
    progress,
)


def register(subparsers: Any) -> None:
    """Add the ``train-static`` sub-command."""
    from sentvec.static_training.api import (
        DEFAULT_BATCH_SIZE,
        DEFAULT_DIM,
        DEFAULT_EPOCHS,
        DEFAULT_LEARNING_RATE,
        DEFAULT_LOSS,
        DEFAULT_MAX_SENTENCES,
        DEFAULT_REWEIGHTING,
        DEFAULT_TARGET,
        DEFAULT_TARGET_LAYERS,
        MIN_SENTENCES,
        REWEIGHTINGS,
        TARGET_LAYERS,
        TARGETS,
    )
    from sentvec.static_training.train import LOSSES

    p = subparsers.add_parser(
        "train-static",
        help="train a static Model2Vec-format model against a transformer teacher",
        description=plain_text(__doc__.split("\n\n")[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + __doc__.split("::\n\n")[1].rstrip(),
    )
    p.add_argument("--model", default="minilm", help="teacher: alias (minilm, mpnet) or directory")
    p.add_argument("--output", required=True, metavar="DIR", help="model directory to write")
    p.add_argument(
        "--corpus",
        default=None,
        metavar="FILE",
        help="sentences, one per line (.xz/.gz/.bz2 read as is); never evaluation text "
        "(default: the packaged 10k Wikipedia sample)",
    )
    p.add_argument(
        "--features",
        default=None,
        metavar="DIR",
        help="teacher features to reuse and extend (default: OUTPUT.features beside the output)",
    )
    p.add_argument(
        "--init",
        default="distill",
        metavar="distill|random|DIR",
        help="initial rows: sentvec distill of the teacher, random, or a static model directory "
        "of the teacher's tokenizer (default distill)",
    )
    p.add_argument("--dim", type=positive_int, default=DEFAULT_DIM, help=f"(default {DEFAULT_DIM})")
    p.add_argument(
        "--max-sentences",
        type=int_at_least(MIN_SENTENCES),
        default=DEFAULT_MAX_SENTENCES,
        help=f"corpus sentences featurized and trained on (default {DEFAULT_MAX_SENTENCES})",
    )
    p.add_argument("--loss", choices=LOSSES, default=DEFAULT_LOSS, help=f"(default {DEFAULT_LOSS})")
    p.add_argument(
        "--target",
        choices=TARGETS,
        default=DEFAULT_TARGET,
        help=f"teacher space: whitened, PCA or raw (default {DEFAULT_TARGET})",
    )
    p.add_argument(
        "--target-layers",
        choices=TARGET_LAYERS,
        default=DEFAULT_TARGET_LAYERS,
        help=f"teacher layers: the last, or the (1, -1) average (default {DEFAULT_TARGET_LAYERS})",
    )
    p.add_argument(
        "--epochs",
        type=positive_int,
        default=DEFAULT_EPOCHS,
        help=f"passes over the sentences (default {DEFAULT_EPOCHS})",
    )
    p.add_argument(
        "--learning-rate",
        type=float_range(0.0, 10.0, low_inclusive=False),
        default=DEFAULT_LEARNING_RATE,
        help="Adam's rate, relative to the initial rows' root mean square "
        f"(default {DEFAULT_LEARNING_RATE})",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=DEFAULT_BATCH_SIZE,
        help=f"sentences per training step (default {DEFAULT_BATCH_SIZE})",
    )
    p.add_argument(
        "--reweighting",
        choices=REWEIGHTINGS,
        default=DEFAULT_REWEIGHTING,
        help=f"after training: none, or SIF from the corpus counts (default {DEFAULT_REWEIGHTING})",
    )
    p.add_argument(
        "--bigrams",
        type=int_at_least(0),
        default=0,
        metavar="N",
        help="also train rows for the N most frequent corpus bigrams (Sent2Vec's sentence "
        "vector; written in sentvec's bigram format, which model2vec cannot read; default 0)",
    )
    p.add_argument(
        "--precision",
        choices=("auto", "float32", "bfloat16"),
        default="auto",
        help="teacher forward pass: auto is bfloat16 where the device has it in hardware",
    )
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    p.add_argument(
        "--seed", type=int_at_least(0, 2**32 - 1), default=0, help="shuffling seed (default 0)"
    )
    d = p.add_argument_group("Dask cluster for the teacher pass (pip install 'sentvec[dask]')")
    where = d.add_mutually_exclusive_group()
    where.add_argument(
        "--dask-scheduler",
        default=None,
        metavar="ADDRESS",
        help="featurize on the workers of this running scheduler (tcp://host:port)",
    )
    where.add_argument(
        "--dask-workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="start a local cluster of N one-thread worker processes for the teacher pass",
    )
    add_progress_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``sentvec train-static``; returns the exit code."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentvec.static_training.api import train_static

    with dask_client(args) as client:
        model = train_static(
            args.model,
            args.corpus,
            args.output,
            features=args.features,
            init=args.init,
            dim=args.dim,
            max_sentences=args.max_sentences,
            loss=args.loss,
            target=args.target,
            target_layers=args.target_layers,
            epochs=args.epochs,
            learning_rate=args.learning_rate,
            batch_size=args.batch_size,
            reweighting=args.reweighting,
            bigrams=args.bigrams,
            precision=args.precision,
            device=args.device,
            client=client,
            seed=args.seed,
            show_progress_bar=progress(args),
        )
    rec = model.config["sentvec_train_static"]
    s = rec["seconds"]
    print(
        f"wrote {args.output}: {model.embeddings.shape[0]} rows x {model.dim} (float16)"
        + (f" ({rec['bigram_rows']} of them bigrams)" if rec["bigram_rows"] else "")
        + f", {rec['n_sentences']} sentences, loss {rec['loss']}, target {rec['target']}; "
        + ", ".join(f"{k} {v:.1f}" for k, v in s.items())
    )
    return 0
