"""``sentvec encode``: encode every line of a (large) text file into resumable ``.npy`` shards.

One float32 vector per input line (empty lines included, counted), written in shards of
``--shard-size`` lines with a ``manifest.json``; peak memory is about one shard. Re-running the
same command resumes: finished shards are kept, only missing ones are encoded. A changed input
file, model or whitening is refused unless ``--overwrite``. Read the result with
``sentvec.encode_files.load_embeddings(DIR)``. With ``--dask-scheduler`` or ``--dask-workers``
the shards are encoded by Dask workers, one task per ``--partition-lines`` lines, into the same
files (see docs/SCALING.md); ``--fit-whitening`` saves the whitening fitted on every vector
written.

Examples::

    sentvec encode --model minilm --input wiki.txt --output wiki-minilm
    sentvec encode --model model.bin --input wiki.tok.txt --output out --shard-size 50000
    sentvec encode --model minilm --input wiki.txt --output out --whitening whitening-dir
    sentvec encode --model minilm --input wiki.txt --output part-3 --start-line 3000000 --end-line 4000000
    sentvec encode --model model.bin --input wiki.txt --output out --dask-workers 2
    sentvec encode --model minilm --input wiki.txt --output out --dask-scheduler tcp://10.0.0.5:8786 --fit-whitening wiki-whitening
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sentvec._path_checks import check_output_path, check_outputs_not_inputs
from sentvec.cli._args import (
    MODEL_HELP,
    add_device_options,
    add_progress_option,
    dask_client,
    device_options,
    float_range,
    int_at_least,
    plain_text,
    progress,
)


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
    p.add_argument(
        "--input", required=True, metavar="FILE", help="UTF-8 text, one sentence per line"
    )
    p.add_argument(
        "--output", required=True, metavar="DIR", help="directory for shards and manifest"
    )
    p.add_argument(
        "--shard-size",
        type=int_at_least(1),
        default=100_000,
        metavar="N",
        help="lines per shard (default 100000)",
    )
    p.add_argument(
        "--batch-size",
        type=int_at_least(1),
        default=None,
        help="passed to the encoder (default: the encoder's own)",
    )
    p.add_argument(
        "--whitening",
        default=None,
        metavar="DIR",
        help="a saved Whitening (or pipeline with whitening) directory applied to every vector",
    )
    p.add_argument(
        "--start-line", type=int_at_least(0), default=0, help="first line, 0-based (default 0)"
    )
    p.add_argument(
        "--end-line", type=int_at_least(0), default=None, help="end line, exclusive (default: EOF)"
    )
    p.add_argument("--no-resume", action="store_true", help="re-encode every shard")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="discard shards written with another model/whitening or from a changed input",
    )
    add_device_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress display (= --no-progress)")
    add_progress_option(p)
    d = p.add_argument_group("Dask cluster (pip install 'sentvec[dask]')")
    where = d.add_mutually_exclusive_group()
    where.add_argument(
        "--dask-scheduler",
        default=None,
        metavar="ADDRESS",
        help="encode on the workers of this running scheduler (tcp://host:port); "
        "input, model and output must be at the same paths on the workers",
    )
    where.add_argument(
        "--dask-workers",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="start a local cluster of N one-thread worker processes for the run",
    )
    d.add_argument(
        "--dask-timeout",
        type=float_range(0.0, 86_400.0, low_inclusive=False),
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for --dask-scheduler to answer (default 30)",
    )
    d.add_argument(
        "--partition-lines",
        type=int_at_least(1),
        default=None,
        metavar="N",
        help="lines per Dask task, a multiple of --shard-size (default: one shard)",
    )
    d.add_argument(
        "--retries",
        type=int_at_least(0),
        default=2,
        help="Dask retries of a failing partition (default 2)",
    )
    p.add_argument(
        "--fit-whitening",
        default=None,
        metavar="DIR",
        help="fit a Whitening on every vector written (float64 mean and covariance, "
        "merged from per-partition sums) and save it to DIR",
    )
    p.add_argument(
        "--n-components",
        type=int_at_least(1),
        default=None,
        metavar="K",
        help="with --fit-whitening: keep the K leading directions (default: all)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Encode (here or on a Dask cluster); optionally fit a whitening; print a summary; return 0."""
    check_outputs_not_inputs(
        {"--output": args.output, "--fit-whitening": args.fit_whitening},
        {"--input": args.input, "--model": args.model, "--whitening": args.whitening},
        replaced_dirs=("--fit-whitening",),
    )
    if args.fit_whitening is not None:
        check_output_path(args.fit_whitening, what="--fit-whitening", kind="whole-dir")
    if args.n_components is not None and args.fit_whitening is None:
        raise ValueError("--n-components needs --fit-whitening")
    on_cluster = args.dask_scheduler is not None or args.dask_workers is not None
    if not on_cluster and (args.partition_lines is not None or args.retries != 2):
        raise ValueError("--partition-lines and --retries need --dask-scheduler or --dask-workers")
    statistics = None
    if on_cluster:
        m, statistics = _run_on_cluster(args)
    else:
        from sentvec.encode_files import encode_file
        from sentvec.encoders import load_encoder

        encoder = load_encoder(args.model, **device_options(args))
        m = encode_file(
            encoder,
            args.input,
            args.output,
            shard_size=args.shard_size,
            batch_size=args.batch_size,
            whitening=args.whitening,
            resume=not args.no_resume,
            overwrite=args.overwrite,
            start_line=args.start_line,
            end_line=args.end_line,
            show_progress_bar=progress(args),
        )
    run_ = m.runs[-1]
    print(
        f"{m.n_lines} lines [{m.start_line}, {m.end_line}) -> {m.n_shards} shards of dim "
        f"{m.dim} in {args.output} ({run_.n_shards_encoded} encoded, {run_.n_shards_reused} "
        f"reused; {m.n_empty} empty lines, {m.n_zero} zero vectors; {run_.wall_seconds:.1f} s)"
    )
    if args.fit_whitening is not None:
        from sentvec.whitening import Whitening, WhiteningStatistics

        if statistics is None:  # single machine: merge the statistics of the shards
            from sentvec.encode_files import load_embeddings

            statistics = WhiteningStatistics.empty(m.dim)
            for arr in load_embeddings(args.output, concatenate=False):
                statistics = statistics.merge(WhiteningStatistics.from_array(arr))
        w = Whitening(n_components=args.n_components).fit_statistics(statistics)
        w.save(args.fit_whitening)
        print(
            f"whitening fitted on {statistics.n_samples} vectors ({w.n_components_} "
            f"components) saved to {args.fit_whitening}"
        )
    return 0


def _run_on_cluster(args: argparse.Namespace) -> tuple[Any, Any]:
    """``encode_file_distributed`` on ``--dask-scheduler`` or a local ``--dask-workers`` cluster."""
    from sentvec.cluster import encode_file_distributed
    from sentvec.exceptions import PartitionError

    with dask_client(args) as client:
        import importlib.util

        served = "dashboard" in client.scheduler_info().get("services", {})
        link = client.dashboard_link if served and importlib.util.find_spec("bokeh") else None
        n = len(client.scheduler_info()["workers"])
        print(
            f"dask: {n} workers at {client.scheduler.address}; dashboard: "
            f"{link or 'not served (pip install bokeh)'}",
            file=sys.stderr,
        )
        try:
            r = encode_file_distributed(
                args.model,
                args.input,
                args.output,
                client,
                shard_size=args.shard_size,
                partition_lines=args.partition_lines,
                batch_size=args.batch_size,
                whitening=args.whitening,
                resume=not args.no_resume,
                overwrite=args.overwrite,
                start_line=args.start_line,
                end_line=args.end_line,
                statistics=args.fit_whitening is not None,
                retries=args.retries,
                encoder_options=device_options(args),
                show_progress_bar=progress(args),
            )
        except PartitionError as exc:  # a user-fixable input problem, reported like the others
            raise ValueError(str(exc)) from exc
    return r.manifest, r.statistics
