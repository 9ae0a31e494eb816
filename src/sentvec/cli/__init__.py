"""The ``sentvec`` command line: a thin layer over the public API.

Each sub-command lives in its own module of this package, named after it (``eval-sts`` in
``eval_sts.py``), and exposes ``register(subparsers)``,
which adds its parser(s) and sets ``func`` (taking the parsed ``argparse.Namespace`` and returning
an exit code). ``main(argv)`` is the entry point and is what the tests call.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from sentvec._extras import missing_extra_error, require_extra
from sentvec.cli._args import progress

__all__ = ["main", "console_main", "build_parser"]

# modules of sentvec.cli that define sub-commands, in the order --help lists them
_COMMAND_MODULES = (
    "eval_sts",
    "layers",
    "whiten_sweep",
    "report",
    "train_sent2vec",
    "embed",
    "tokenize",
    "eval_transfer",
    "eval_rte",
    "search",
    "encode",
    "convert",
    "export",
    "serve",
    "distill",
    "train_static",
)


# extras a sub-command always needs (the others depend on its options: ``required_extras``)
_COMMAND_EXTRAS = {"serve": "serve"}


def required_extras(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``(extra, what needs it)`` for each optional dependency a parsed command line needs.

    The command's own extra (``serve``); ``--model-backend onnx``; a ``--dask-*`` cluster; a
    WordLlama model (``--model wordllama``, read by name only: nothing is loaded).
    """
    from sentvec.encoders.formats import detect_format

    options = vars(args)  # each sub-command has its own options
    needs = []
    if args.command in _COMMAND_EXTRAS:
        needs.append((_COMMAND_EXTRAS[args.command], f"sentvec {args.command}"))
    if options.get("model_backend") == "onnx":
        needs.append(("onnx", "--model-backend onnx"))
    if options.get("dask_scheduler") is not None or options.get("dask_workers") is not None:
        needs.append(("dask", "a Dask cluster (--dask-scheduler, --dask-workers)"))
    models = options.get("models") or []
    if isinstance(options.get("model"), str):
        models = [options["model"], *models]
    for model in models:
        try:
            fmt = detect_format(model)
            if fmt is not None and fmt.name == "wordllama":
                needs.append(("static", f"the model {model!r}"))
        except OSError:  # an unreadable path: the command reports it
            pass
    return needs


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every available sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="sentvec",
        description="Unsupervised sentence embeddings: Sent2Vec and WhiteningBERT.",
    )
    from sentvec import __version__

    parser.add_argument("--version", action="version", version=f"sentvec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"sentvec.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"sentvec.cli.{name}":
                continue  # command not shipped in this build
            raise
        module.register(sub)
    for command_parser in sub.choices.values():  # for errors in the sub-command's own usage
        command_parser.set_defaults(_command_parser=command_parser)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Print a warning as one ``sentvec: warning: ...`` line (no source path or code line)."""
    name = "warning" if category is UserWarning else category.__name__
    print(f"sentvec: {name}: {message}", file=file or sys.stderr)


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null (after a broken pipe)."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):  # stdout replaced by an object without a descriptor
        pass


def _install_sigterm(flag: list[int]) -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread (as Ctrl-C does), so that
    ``finally`` blocks and context managers clean up temporary files; return the old handler
    (None when not in the main thread, where handlers cannot be set)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def on_term(signum: int, frame: Any) -> None:
        flag.append(signum)
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, on_term)


def _restore_sigterm(previous: Any) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Errors a user can fix (missing files, bad values, an optional dependency not installed)
    print one ``sentvec: error: ...`` line and return 2; they never raise out of ``main``. The
    extras the command line needs (``required_extras``) are checked before the command runs,
    so a missing one is reported before any other output. A closed stdout pipe (``| head``) returns 141
    (128 + SIGPIPE, as coreutils) without a message; Ctrl-C returns 130, and SIGTERM is handled
    like Ctrl-C (``KeyboardInterrupt`` in the main thread, so temporary files are removed) and
    returns 143.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(list(argv) if argv is not None else None)
    if extra:  # in the sub-command's usage, not the top-level one (exits 2, as argparse does)
        getattr(args, "_command_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    if not _stderr_is_terminal() or not progress(args):
        # transformers' own "Loading weights" bar: carriage returns in a log, or unwanted
        # (read by huggingface_hub when transformers is first imported, which comes later)
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    terminated: list[int] = []
    previous = _install_sigterm(terminated)
    try:
        for needed, feature in required_extras(args):
            require_extra(needed, feature)
        return int(args.func(args) or 0)
    except ImportError as exc:  # an extra's module not installed: name the extra to install
        missing = missing_extra_error(exc)
        if missing is None:
            raise
        print(f"sentvec: error: {missing}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of stdout went away (``sentvec tokenize | head -1``): stop quietly, as
        # coreutils do (128 + SIGPIPE); stdout goes to /dev/null so the interpreter's final
        # flush does not raise again
        _silence_stdout()
        return 141
    except (FileNotFoundError, ValueError, OSError) as exc:
        print(f"sentvec: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # pathlib's resolve() on a symbolic-link loop
        if not str(exc).startswith("Symlink loop"):
            raise
        print(f"sentvec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if terminated:  # SIGTERM, handled as Ctrl-C: temporary files were cleaned on the way
            print("sentvec: terminated", file=sys.stderr)
            return 143
        print("sentvec: interrupted", file=sys.stderr)
        return 130
    finally:
        _restore_sigterm(previous)


def console_main() -> int:
    """Entry point of the ``sentvec`` executable: :func:`main` with one-line warnings.

    Warnings print as ``sentvec: warning: ...`` (no source path or code line). :func:`main` itself
    leaves the warning display alone, so callers and tests can capture warnings as usual.
    """
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
