"""``sentvec train-sent2vec``: train a Sent2Vec model from a text file.

Accepts the official ``sent2vec`` flag names (``-input -output -dim -epoch -lr -lrUpdateRate
-wordNgrams -minCount -minCountLabel -neg -thread -t -dropoutK -bucket -maxVocabSize -loss``)
and their snake-case forms (``--dim``, ``--min-count`` / ``--min_count``, ...). Flags left out
take :func:`sentvec.train_sent2vec`'s defaults (the paper's: lr 0.2, wordNgrams 2, neg 10, ...),
which differ from the official binary's own defaults. The model is written as a sentvec model
directory or an official ``.bin`` file (chosen by ``--format``, by default from the extension).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sentvec.cli._args import INT32_MAX, float_range, int_at_least

MINUTES_A_YEAR = 525_600.0

FORMATS = ("auto", "dir", "bin", "both")

# the ranges of Sent2VecTrainer (sizes and counts are int32 in the official .bin)
_POSITIVE, _NATURAL = int_at_least(1, INT32_MAX), int_at_least(0, INT32_MAX)
# (official flag, snake-case name, type, help)
_FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("dim", "dim", _POSITIVE, "embedding dimension [100]"),
    (
        "epoch",
        "epoch",
        _POSITIVE,
        "epochs [5] (an epoch counts every corpus token; see --epoch-tokens)",
    ),
    ("lr", "lr", float_range(0.0, 100.0, low_inclusive=False), "initial learning rate [0.2]"),
    ("lrUpdateRate", "lr_update_rate", _POSITIVE, "tokens between learning-rate updates [100]"),
    ("wordNgrams", "word_ngrams", _POSITIVE, "longest word n-gram [2]"),
    ("minCount", "min_count", _POSITIVE, "minimal word count [5]"),
    ("minCountLabel", "min_count_label", _NATURAL, "minimal count of a target word [5]"),
    ("neg", "neg", _POSITIVE, "negatives per target [10]"),
    ("thread", "thread", _POSITIVE, "worker threads [2]"),
    ("t", "t", float_range(0.0, 1.0, low_inclusive=False), "target subsampling threshold [1e-4]"),
    ("dropoutK", "dropout_k", _NATURAL, "positions dropped per target [4]"),
    ("bucket", "bucket", _NATURAL, "n-gram hash buckets [2000000]"),
    ("maxVocabSize", "max_vocab_size", _NATURAL, "vocabulary cap, 0: none, else >= 2 [0]"),
)


def _spellings(official: str, snake: str) -> list[str]:
    names = [f"-{official}", f"--{snake}"]
    if "_" in snake:
        names.append(f"--{snake.replace('_', '-')}")
    if official != snake and official.lower() != snake:
        names.append(f"--{official}")
    return list(dict.fromkeys(names))


def register(subparsers: Any) -> None:
    """Add the ``train-sent2vec`` sub-command."""
    p = subparsers.add_parser(
        "train-sent2vec",
        allow_abbrev=False,
        help="train a Sent2Vec model (official flag names accepted)",
        description="Train Sent2Vec (Pagliardini et al. 2018) on a text file with one tokenized "
        "sentence per line. Official sent2vec flags (-dim, -minCount, ...) and "
        "snake-case ones (--dim, --min-count, --min_count) are both accepted.",
    )
    p.add_argument("-input", "--input", required=True, help="training text file (.xz/.gz/.bz2 ok)")
    p.add_argument(
        "-output",
        "--output",
        required=True,
        help="model directory, or FILE.bin for the official binary format",
    )
    for official, snake, typ, helptext in _FLAGS:
        p.add_argument(
            *_spellings(official, snake), dest=snake, type=typ, default=None, help=helptext
        )
    p.add_argument(
        "-loss", "--loss", choices=["ns"], default=None, help="loss (negative sampling only)"
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="auto: .bin extension -> official .bin, else directory; both: directory "
        "plus OUTPUT.bin",
    )
    p.add_argument(
        "--update",
        choices=["target", "sentence"],
        default=None,
        help="target: the official per-target updates (default); sentence: a "
        "deferred per-sentence variant",
    )
    p.add_argument(
        "--exclude-target",
        "--exclude_target",
        dest="exclude_target",
        action="store_true",
        default=None,
        help="paper variant: remove the target from its context",
    )
    p.add_argument(
        "--l1", type=float_range(0.0, 1.0), default=None, help="paper appendix-B L1 weight tau [0]"
    )
    p.add_argument(
        "--sigmoid",
        choices=["table", "exact"],
        default=None,
        help="table: the official lookup tables of sigmoid and log (default); exact: computed",
    )
    p.add_argument(
        "--epoch-tokens",
        "--epoch_tokens",
        dest="epoch_tokens",
        choices=["all", "trained"],
        default=None,
        help="all (official): an epoch is every token of the corpus, </s> and "
        "unknown words included; trained: exactly -epoch passes",
    )
    p.add_argument(
        "--seed",
        type=_NATURAL,
        default=None,
        help="random seed, 0 to 2147483647 [1]",
    )
    p.add_argument(
        "--checkpoint-dir",
        "--checkpoint_dir",
        dest="checkpoint_dir",
        default=None,
        help="write a resumable checkpoint into this directory (see --checkpoint-every)",
    )
    p.add_argument(
        "--checkpoint-every",
        "--checkpoint_every",
        dest="checkpoint_every",
        type=float_range(0.0, MINUTES_A_YEAR, low_inclusive=False),
        default=None,
        help="minutes between checkpoints (needs --checkpoint-dir)",
    )
    p.add_argument(
        "--resume-from",
        "--resume_from",
        dest="resume_from",
        default=None,
        help="continue the run saved in this checkpoint (a checkpoint directory or one of "
        "its checkpoints)",
    )
    p.add_argument(
        "--max-memory",
        "--max_memory",
        dest="max_memory",
        default=None,
        metavar="SIZE",
        help="refuse to train when the estimated memory (input and "
        "output matrices, buffers) exceeds SIZE (bytes or 16G, 500M; default: the "
        "memory available, or $SENTVEC_MAX_MEMORY)",
    )
    p.add_argument(
        "--tmp-dir",
        "--tmp_dir",
        dest="tmp_dir",
        default=None,
        help="where the temporary token-id file goes",
    )
    from sentvec.cli._args import add_progress_option

    add_progress_option(p)
    p.add_argument("--report", default=None, help="write the training report as JSON here")
    p.set_defaults(func=_run)


def _check_outputs(
    out: Path,
    fmt: str,
    report: str | None,
    checkpoint_dir: str | None = None,
    model_bytes: int = 0,
) -> None:
    """Fail now if the model (or report) could not be written once training is done."""
    from sentvec._path_checks import check_output_path
    from sentvec.sent2vec.model_dir import check_save_target

    if fmt in ("dir", "both"):
        check_save_target(out)
        check_output_path(out, what="-output", kind="whole-dir")
    if fmt == "bin":
        check_output_path(out, what="-output")
    elif fmt == "both":
        check_output_path(out.with_name(out.name + ".bin"), what="-output .bin file")
    # the model needs at least its bucket rows (the vocabulary adds more): refused now if
    # they cannot fit, not after the training
    from sentvec._io import check_free_space

    copies = 2 if fmt == "both" else 1
    check_free_space(out, copies * model_bytes, what="-output (its bucket rows alone)")
    if report:
        check_output_path(report, what="--report")
    if checkpoint_dir:
        check_output_path(checkpoint_dir, what="--checkpoint-dir", kind="dir")


def _run(args: argparse.Namespace) -> int:
    from sentvec.sent2vec.trainer import Sent2VecTrainer

    kwargs: dict[str, Any] = {}
    for _, snake, _, _ in _FLAGS:
        v = getattr(args, snake)
        if v is not None:
            kwargs[snake] = v
    if kwargs.get("max_vocab_size") == 0:
        kwargs["max_vocab_size"] = None  # official 0 = no cap
    for name in (
        "loss",
        "update",
        "exclude_target",
        "l1",
        "sigmoid",
        "epoch_tokens",
        "seed",
        "checkpoint_dir",
        "checkpoint_every",
        "resume_from",
        "tmp_dir",
        "max_memory",
    ):
        v = getattr(args, name)
        if v is not None:
            kwargs[name] = v
    kwargs["show_progress_bar"] = args.progress
    out = Path(args.output)
    fmt = args.format
    if fmt == "auto":
        fmt = "bin" if out.suffix.lower() == ".bin" else "dir"
    from sentvec._path_checks import check_outputs_not_inputs

    check_outputs_not_inputs(  # before anything else: the corpus must survive a typo
        {
            "-output": out,
            "-output .bin file": out.with_name(out.name + ".bin") if fmt == "both" else None,
            "--report": args.report,
            "--checkpoint-dir": args.checkpoint_dir,
        },
        {"-input": args.input, "--resume-from": args.resume_from},
        replaced_dirs=("-output",) if fmt in ("dir", "both") else (),
    )
    trainer = Sent2VecTrainer(**kwargs)
    _check_outputs(  # the model's input matrix holds at least bucket x dim float32
        out, fmt, args.report, args.checkpoint_dir, 4 * trainer.bucket * trainer.dim
    )  # before training: a bad path must not waste the run
    model = trainer.fit(args.input)
    written = []
    if fmt in ("dir", "both"):
        written.append(str(model.save(out)))
    if fmt == "bin":
        written.append(str(model.save_bin(out)))
    elif fmt == "both":
        written.append(str(model.save_bin(out.with_name(out.name + ".bin"))))
    rep = trainer.report_
    assert rep is not None  # fit() sets it
    summary = {
        "written": written,
        "nwords": rep.nwords,
        "sentences": rep.n_sentences,
        "tokens": rep.raw_tokens,
        "epochs": rep.epoch,
        "passes": len(rep.epochs),
        "loss": rep.final_loss,
        "train_seconds": round(rep.train_seconds, 3),
        "words_per_sec_per_thread": round(rep.words_per_sec_per_thread),
    }
    print(json.dumps(summary), file=sys.stdout)
    if args.report:
        from sentvec._io import atomic_write_text

        atomic_write_text(args.report, rep.to_json() + "\n")
    return 0
