"""What the sub-commands share: argparse ``type=`` callables, option groups, STS task loading,
output-path checks, and the model / cache / warning helpers of the evaluation commands."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sentvec._io import (  # noqa: F401  (the commands take them from here)
    check_output_path,
    check_outputs_not_inputs,
)

#: ``--errors`` choices of the commands reading text: what a line that is not UTF-8 does.
ERRORS = ("strict", "replace", "surrogateescape")


#: Largest value of an integer option without a tighter bound (what numpy's int64 holds).
INT64_MAX = 2**63 - 1
#: Largest value of an option stored as a C ``int`` (Sent2Vec's header fields, seeds).
INT32_MAX = 2**31 - 1


class NumberType:
    """An argparse ``type=`` for a number in a range, checked when the command line is parsed.

    Integers must be written as integers; floats must be finite (``nan``, ``inf`` and
    ``1e999`` are refused). Out of range, or not a number: ``ArgumentTypeError`` naming the
    range, which argparse prints as ``argument --port: expected an integer in [0, 65535], got
    '70000'`` with exit status 2, before any work.

    Parameters
    ----------
    kind : {int, float}
    minimum, maximum : number or None
        The bounds (None: none; an integer without ``maximum`` is bounded by
        :data:`INT64_MAX`).
    low_inclusive, high_inclusive : bool, default True
        Whether ``minimum`` / ``maximum`` are allowed.
    """

    def __init__(
        self,
        kind: type,
        minimum: float | None = None,
        maximum: float | None = None,
        *,
        low_inclusive: bool = True,
        high_inclusive: bool = True,
    ) -> None:
        if kind is int and maximum is None:
            maximum = INT64_MAX
        self.kind, self.minimum, self.maximum = kind, minimum, maximum
        self.low_inclusive, self.high_inclusive = low_inclusive, high_inclusive

    def describe(self) -> str:
        """``"an integer >= 1"``, ``"an integer in [0, 65535]"``, ``"a number in (0, inf)"``."""
        what = "an integer" if self.kind is int else "a finite number"
        lo, hi = self.minimum, self.maximum
        if self.kind is int and hi == INT64_MAX and lo is not None:
            return f"{what} >= {lo}"
        lb, hb = "[" if self.low_inclusive else "(", "]" if self.high_inclusive else ")"
        return f"{what} in {lb}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{hb}"

    def __call__(self, text: str) -> Any:
        try:
            value = self.kind(text)
        except (ValueError, OverflowError):  # "1.5" as int, "abc", 5000 digits
            value = None
        if value is not None and self.kind is float and not math.isfinite(value):
            value = None
        lo, hi = self.minimum, self.maximum
        if value is not None and lo is not None:
            value = value if (value >= lo if self.low_inclusive else value > lo) else None
        if value is not None and hi is not None:
            value = value if (value <= hi if self.high_inclusive else value < hi) else None
        if value is None:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise argparse.ArgumentTypeError(f"expected {self.describe()}, got {shown!r}")
        return value

    def __repr__(self) -> str:
        return f"NumberType({self.describe()})"


def int_at_least(minimum: int, maximum: int = INT64_MAX) -> NumberType:
    """An integer ``>= minimum`` (and ``<= maximum``): :class:`NumberType`."""
    return NumberType(int, minimum, maximum)


def float_range(
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> NumberType:
    """A finite float in a range: :class:`NumberType`."""
    return NumberType(
        float, minimum, maximum, low_inclusive=low_inclusive, high_inclusive=high_inclusive
    )


#: Parser of integers >= 1 (batch sizes, k, n_components).
positive_int = int_at_least(1)
#: Parser of TCP ports: 0-65535 (0: the system chooses a free one).
port_number = int_at_least(0, 65535)


def positive_int_list(text: str) -> list[int]:
    """Comma-separated integers >= 1 (``"8,16,32"``); ``ArgumentTypeError`` otherwise."""
    values = [positive_int(p.strip()) for p in text.split(",") if p.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}")
    return values


#: ``--model`` help of every command that takes any encoder (``sentvec.load_encoder``).
MODEL_HELP = (
    "model alias (minilm, mpnet), Hugging Face directory or hub name already in the "
    "local hub cache (nothing is downloaded), sent2vec .bin or directory, Model2Vec or "
    "StaticEmbedding directory, wordllama[-128|-64], or saved pipeline (default: minilm)"
)


def sts_task_list(text: str) -> list[str]:
    """Comma-separated STS task names or short names (``stsb,sick,sts12``), checked at once.

    Names go through :func:`sentvec.evaluation.canonical_sts_task` (the one alias table);
    unknown names are an ``ArgumentTypeError`` naming both the full and the short names, so a
    typo fails before any model is loaded.
    """
    from sentvec.evaluation import canonical_sts_task

    parts = [p for p in (x.strip() for x in text.split(",")) if p]
    if not parts:
        raise argparse.ArgumentTypeError("expected at least one task name")
    try:
        return [canonical_sts_task(p) for p in parts]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def layer_list(text: str) -> tuple[int, ...]:
    """Hidden-state indices ``"1,-1"`` or ``"1+-1"`` (0 = embedding output, -1 = last layer)."""
    parts = [p for p in text.replace("+", ",").split(",") if p.strip()]
    try:
        out = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated hidden-state indices such as 1,-1, got {text!r}"
        ) from None
    if not out:
        raise argparse.ArgumentTypeError("expected at least one layer index")
    return out


def sts_tasks_for(args: argparse.Namespace, encoder: Any) -> list[Any]:
    """The STS tasks of ``--tasks`` / ``--data`` / ``--variant`` (default: the encoder's text)."""
    from sentvec.encoders.base import text_variant_of
    from sentvec.evaluation import load_sts

    variant = args.variant or text_variant_of(encoder)
    return load_sts(args.tasks, data_dir=args.data, variant=variant)


def plain_text(doc: str) -> str:
    """A module docstring paragraph for ``--help``: reST literals (double backticks) removed."""
    return doc.replace("``", "")


def add_configuration_options(
    p: argparse.ArgumentParser,
    *,
    pooling_help: str,
    layers_default: str,
    whiten_default: str | None,
    whiten_metavar: str,
    whiten_help: str,
    n_components_help: str,
) -> None:
    """``--pooling``, ``--layers``, ``--whiten`` and ``--n-components``: one transformer
    configuration and the whitening after it (eval-sts, eval-rte, export), each command with
    its own help text and ``--whiten`` default.

    Parameters
    ----------
    p : argparse.ArgumentParser
    pooling_help : str
        Help of ``--pooling`` (choices cls, max, mean; default None).
    layers_default : str
        What the default of ``--layers`` is, e.g. ``"default 1,-1"``.
    whiten_default, whiten_metavar, whiten_help : str
        Default, metavar and help of ``--whiten``.
    n_components_help : str
        Help of ``--n-components`` (an integer >= 1; default None).
    """
    p.add_argument("--pooling", choices=("cls", "max", "mean"), default=None, help=pooling_help)
    p.add_argument(
        "--layers",
        type=layer_list,
        default=None,
        metavar="I,J,...",
        help="hidden-state indices to average, 0 = embeddings, -1 = last "
        f"({layers_default}; write --layers=-1 for a leading minus)",
    )
    p.add_argument("--whiten", default=whiten_default, metavar=whiten_metavar, help=whiten_help)
    p.add_argument(
        "--n-components",
        type=positive_int,
        default=None,
        metavar="K",
        help=n_components_help,
    )


def read_corpus_file(path: Path) -> tuple[list[str], int]:
    """Non-empty lines of a UTF-8 text file, and the number of blank lines skipped."""
    from sentvec._io import read_text_lines

    lines = read_text_lines(path, what="--whiten corpus")
    kept = [ln.strip() for ln in lines if ln.strip()]
    if len(kept) < 2:
        raise ValueError(
            f"--whiten {str(path)!r}: needs at least 2 non-empty lines, found {len(kept)}"
        )
    return kept, len(lines) - len(kept)


# ------------------------------------------------------------ evaluation commands
def str_list(text: str) -> list[str]:
    """Comma-separated non-empty items."""
    return [x.strip() for x in text.split(",") if x.strip()]


def add_evaluation_options(p: argparse.ArgumentParser) -> None:
    """STS data, batching, device and vector-cache options of layers, whiten-sweep, report."""
    p.add_argument(
        "--tasks",
        type=sts_task_list,
        default=None,
        help="comma-separated STS tasks (STS12..STS16, STSB, SICK; default all seven)",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="evaluation data root (default: $SENTVEC_DATA or the packaged copy)",
    )
    p.add_argument(
        "--variant",
        choices=("senteval", "raw"),
        default=None,
        help="STS text fed to the model (default: the encoder's preference, "
        "'senteval' = tokenized and lower-cased as in the paper)",
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="sentences per forward pass (default: the encoder's, 32)",
    )
    add_device_options(p)
    add_cache_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress display (= --no-progress)")
    add_progress_option(p)


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """``--no-cache`` and ``--cache-dir``: the pooled-vector disk cache (layers, eval-sts, ...)."""
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the vector cache (an ONNX graph is still cached)",
    )
    p.add_argument(
        "--cache-dir",
        default=None,
        help="cache root, for vectors and ONNX graphs "
        "(default: $SENTVEC_CACHE or ~/.cache/sentvec)",
    )


def vector_cache(args: argparse.Namespace) -> Any:
    """The vector cache of ``--cache-dir`` / ``--no-cache``."""
    from sentvec.cache import VectorCache

    return VectorCache(args.cache_dir, enabled=not args.no_cache)


def slug(name: str) -> str:
    """A file-name stem for a model name or path."""
    base = Path(name).name if ("/" in name or "\\" in name) else name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-").lower() or "model"


def display_name(name: str) -> str:
    """An alias as given; a path by its last component."""
    return Path(name).name if ("/" in name or "\\" in name) else name


def add_device_options(p: argparse.ArgumentParser) -> None:
    """``--device``, ``--model-backend`` and ``--precision``: where and how transformer models run
    their forward passes."""
    from sentvec.encoders.base import TRANSFORMER_BACKENDS

    p.add_argument(
        "--device",
        default=None,
        help="torch device for transformer models (default: cuda if available)",
    )
    p.add_argument(
        "--model-backend",
        choices=TRANSFORMER_BACKENDS,
        default=None,
        help="forward passes of transformer models: torch (default) or onnx (ONNX "
        "Runtime on the CPU, pip install 'sentvec[onnx]'; the model is exported "
        "once and cached)",
    )
    from sentvec.encoders.base import PRECISIONS

    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="auto",
        help="forward passes of transformer models: auto (default): bfloat16 where the device "
        "multiplies it in hardware (a CPU with AMX or AVX512-BF16, CUDA), else float32; "
        "float32; or bfloat16 (matrix products in bfloat16; pooling, layer averaging and "
        "whitening stay float32); or int8 (with --model-backend onnx only: the ONNX graph's "
        "matrix products dynamically quantized to int8, the graph cached beside the float32 "
        "one). Scores of auto and float32 can differ in the second decimal",
    )


def device_options(args: argparse.Namespace) -> dict[str, Any]:
    """The encoder options of :func:`add_device_options` that were given.

    With ``--model-backend onnx``, a command's ``--cache-dir`` (the cache root) also holds the
    ONNX graph cache.
    """
    given = (
        ("device", args.device),
        ("backend", args.model_backend),
        ("precision", args.precision),
    )
    opts = {k: v for k, v in given if v is not None}
    if args.model_backend == "onnx" and getattr(args, "cache_dir", None):
        opts["onnx_cache_dir"] = args.cache_dir
    return opts


def dask_client(args: argparse.Namespace) -> AbstractContextManager[Any]:
    """The Dask client a command's ``--dask-scheduler`` (waiting ``--dask-timeout`` where the
    command has it) or ``--dask-workers`` asks for, as a context manager; one that gives None
    when neither is given (the work stays in this process)."""
    from contextlib import nullcontext

    if args.dask_scheduler is not None:
        from sentvec.cluster import CONNECT_TIMEOUT, connect_client

        timeout = getattr(args, "dask_timeout", CONNECT_TIMEOUT)  # not every command has it
        return connect_client(args.dask_scheduler, timeout=timeout)
    if args.dask_workers is not None:
        from sentvec.cluster import local_client

        return local_client(args.dask_workers)
    return nullcontext(None)


def load_transformer(name: str, **overrides: Any) -> Any:
    """A transformer encoder (one with hidden layers) by alias or path; ValueError otherwise."""

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentvec.encoders import EncoderOptionsError, LayeredEncoder, load_encoder

    try:
        enc = load_encoder(name, **overrides)
    except EncoderOptionsError:  # a Sent2Vec model or pipeline: no layers to choose from
        enc = load_encoder(name)
    if not isinstance(enc, LayeredEncoder):
        raise ValueError(
            f"model {name!r} ({type(enc).__name__}) has no hidden layers; "
            "this command needs a transformer encoder"
        )
    return enc


PROGRESS_HELP = (
    "progress display on stderr (default: yes): a bar on a terminal, otherwise one "
    "line every $SENTVEC_PROGRESS_INTERVAL seconds (default 30) with rate, done/total "
    "and ETA; --no-progress: none"
)


def add_progress_option(p: argparse.ArgumentParser) -> None:
    """``--progress / --no-progress`` (every long command)."""
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=True, help=PROGRESS_HELP
    )


def progress(args: argparse.Namespace) -> bool:
    """``show_progress_bar`` for ``--progress / --no-progress`` (and ``--quiet``, an alias of
    ``--no-progress``): True shows a bar on a terminal and periodic records elsewhere."""
    return bool(getattr(args, "progress", True)) and not getattr(args, "quiet", False)


def report_warnings(records: list[Any]) -> None:
    """Print each distinct warning once, with how many scorings raised it."""
    counts: dict[str, int] = {}
    for r in records:
        text = f"{r.category.__name__}: {r.message}"
        counts[text] = counts.get(text, 0) + 1
    for text, n in counts.items():
        print(f"warning ({n}x): {text}", file=sys.stderr)


_AGGREGATION_HELP = (
    "how subset scores make a task score: mean (the paper's, default), wmean "
    "(weighted by subset size, SentEval) or all (Spearman over all pairs)"
)
_TRANSFORMER_HELP = (
    "transformer: alias (minilm, mpnet), Hugging Face model directory, or hub "
    "name already in the local hub cache (nothing is downloaded)"
)


def add_transformer_options(p: argparse.ArgumentParser) -> None:
    """Options of the commands that score one transformer (layers, whiten-sweep)."""
    p.add_argument("--model", required=True, help=_TRANSFORMER_HELP)
    p.add_argument(
        "--pooling",
        choices=("mean", "cls", "max"),
        default="mean",
        help="token pooling of each hidden state (default: mean, token=AVG)",
    )
    p.add_argument(
        "--aggregation", choices=("mean", "wmean", "all"), default="mean", help=_AGGREGATION_HELP
    )
    p.add_argument(
        "--max-length",
        type=positive_int,
        default=None,
        help="longest input in tokens (default: the model's own limit)",
    )
    p.add_argument("--out", default="layers-out", help="output directory (default layers-out)")


#: ``--postprocess`` choices: what is fitted in place of the per-year (or corpus) whitening.
POSTPROCESS_CHOICES = ("whitening", "abtt")


def add_postprocess_options(p: argparse.ArgumentParser) -> None:
    """``--postprocess {whitening,abtt}`` and ``--abtt-components D`` (layers, eval-sts)."""
    p.add_argument(
        "--postprocess",
        choices=POSTPROCESS_CHOICES,
        default="whitening",
        help="what the whitening step fits: whitening (default) or abtt = "
        "all-but-the-top (Mu & Viswanath 2018: centre, remove the top D "
        "principal directions), fitted the same way",
    )
    p.add_argument(
        "--abtt-components",
        type=positive_int,
        default=None,
        metavar="D",
        help="D of --postprocess abtt (default max(1, round(d / 100)), as `sentvec report`)",
    )


def check_postprocess_options(args: argparse.Namespace, k_option: str) -> None:
    """Refuse option mixes before any work: ``--abtt-components`` without ``--postprocess abtt``,
    and the whitening dimension (``k_option``, e.g. ``--n-components``) with it."""
    if args.postprocess != "abtt":
        if args.abtt_components is not None:
            raise ValueError("--abtt-components needs --postprocess abtt")
        return
    if getattr(args, k_option.lstrip("-").replace("-", "_")) is not None:
        raise ValueError(
            f"{k_option} is the whitening dimension; it is invalid with "
            "--postprocess abtt (use --abtt-components)"
        )


def year_postprocessor(args: argparse.Namespace, encoder: Any) -> Any:
    """The unfitted estimator of ``--postprocess`` (None for whitening): ``AllButTheTop(D)`` with
    ``D = --abtt-components`` or ``default_abtt_components(d)`` of the encoder's width."""
    if args.postprocess != "abtt":
        return None
    from sentvec.encoders import output_dimension
    from sentvec.whitening import AllButTheTop, check_n_components, default_abtt_components

    d = output_dimension(encoder)
    if args.abtt_components is not None:
        check_n_components(args.abtt_components, d, name="--abtt-components")
        return AllButTheTop(args.abtt_components)
    if d is None:
        raise ValueError(
            f"{type(encoder).__name__} does not state its width; give --abtt-components"
        )
    return AllButTheTop(default_abtt_components(d))
