"""The notice a command shows while numba compiles its kernels on a first run.

Kernels are compiled on first use and cached on disk by numba (``cache=True``); later runs load
them in a fraction of a second. Every first use of a kernel runs inside :func:`compiling_notice`
(directly, or through :func:`load_kernel`), so a first run that compiles for more than two
seconds says so, once, on stderr ("compiling kernels, once per install: ~N s"), whether or not
stderr is a terminal, instead of looking stuck; commands call their kernels once on tiny inputs
before their real work, so the real work's progress (and timing) starts after compilation.

numba compiles one function at a time per process (a global compiler lock), so the only way to
compile while doing something else is a second process: :func:`compile_in_child` starts one
that compiles into numba's on-disk cache, and this process later loads the result from there
(``train-sent2vec`` compiles its training loop that way while it reads the corpus).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sentvec._environment import COMPILE_CHILD
from sentvec._parallel import available_cpus

__all__ = [
    "COMPILING_NOTICE",
    "compile_in_child",
    "compiling_notice",
    "finish_child",
    "is_cached",
    "load_kernel",
    "spare_core",
]

#: What a first run says while kernels compile (followed by the expected seconds, if known).
COMPILING_NOTICE = "compiling kernels, once per install"
#: Compiling that ends sooner than this (seconds) says nothing; loading cached kernels takes less.
NOTICE_AFTER = 2.0
logger = logging.getLogger("sentvec")
#: Whether this process has shown the notice: a command says it once, however many of its
#: steps compile (``train-sent2vec`` compiles, reads the corpus, then waits for a child).
_shown = threading.Event()


def notice_text(expected: float | None = None) -> str:
    """The notice: :data:`COMPILING_NOTICE`, with ``": ~N s"`` when ``expected`` is given."""
    if expected is None:
        return COMPILING_NOTICE
    return f"{COMPILING_NOTICE}: ~{max(1, round(expected))} s"


#: Seconds each family of kernels takes to compile on a first run, measured on a quiet 2-core
#: machine (empty ``NUMBA_CACHE_DIR``): the ``~N s`` of the compiling notice.
COMPILE_SECONDS = {"moses": 10, "sent2vec-training": 15, "sent2vec-inference": 4}


@contextlib.contextmanager
def compiling_notice(
    show: bool | None = None, after: float | None = None, expected: float | None = None
) -> Iterator[None]:
    """Say "compiling kernels, once per install: ~N s" on stderr if the block runs for more
    than ``after`` seconds (a first run, when numba compiles instead of loading its cache),
    once per process: a later slow block only logs it.

    Parameters
    ----------
    show : bool or None
        None or True: on a terminal a bar with the elapsed time, elsewhere one line.
        False: nothing on stderr (the notice is still logged at INFO), as ``--no-progress``.
    after : float, optional
        Seconds before the notice (default :data:`NOTICE_AFTER`): loading cached kernels takes
        less; compiling takes seconds.
    expected : float, optional
        Seconds the block's compiling takes on a quiet 2-core machine, shown as ``~N s``.
    """
    if after is None:
        after = NOTICE_AFTER
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    show = show is not False
    text = notice_text(expected)
    done = threading.Event()

    def watch() -> None:
        if done.wait(after):
            return
        logger.info("sentvec: %s", text)
        if not show or _shown.is_set():
            return
        _shown.set()
        if tty:
            from sentvec._progress import progress_bar

            bar = progress_bar(show=True, total=None, desc=text, bar_format="{desc} [{elapsed}]")
            while not done.wait(0.5):
                bar.refresh()
            bar.close()
            return
        try:
            sys.stderr.write(f"sentvec: {text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed stderr: not worth failing for
            pass

    watcher = threading.Thread(target=watch, name="sentvec-compiling-notice", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def load_kernel(
    dispatcher: Any, args: tuple, *, show: bool | None = None, expected: float | None = None
) -> None:
    """Make ``dispatcher`` (a numba function) ready for arguments of the types of ``args``:
    nothing if this process has it already, else loaded from numba's on-disk cache or compiled
    under :func:`compiling_notice`.

    Parameters
    ----------
    dispatcher : numba dispatcher
        An ``@numba.njit`` function.
    args : tuple
        Arguments like those of the coming call (only their numba types matter).
    show, expected
        As :func:`compiling_notice`.

    Raises
    ------
    numba.core.errors.TypingError
        If ``args`` do not type-check against the kernel, as the call itself would.
    """
    sig = tuple(dispatcher.typeof_pyval(a) for a in args)
    if sig in dispatcher.overloads:
        return
    with compiling_notice(show, expected=expected):
        dispatcher.compile(sig)


def is_cached(dispatcher: Any, args: tuple) -> bool:
    """Whether numba's on-disk cache holds ``dispatcher`` (a ``cache=True`` function) compiled
    for the types of ``args``, so that calling it loads instead of compiling.

    Reads numba's cache index (internals); True when they cannot be read (caching disabled,
    or numba changed): a caller then simply compiles in this process, as on a warm run.
    """
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return True


def spare_core() -> bool:
    """Whether a second process would get a core of its own: at least two CPUs usable by this
    process and a one-minute load average below their number minus a half (the load counts
    the work that ran in the last minute; this process, just started, adds little of it yet,
    and a command run right after another finds the load near one per busy core).

    ``SENTVEC_COMPILE_CHILD=1`` or ``0`` overrides the guess (``auto``, the default, keeps it).
    """
    forced = (COMPILE_CHILD.value() or "auto").strip().lower()
    if forced in ("0", "1"):
        return forced == "1"
    n = available_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return False
    return n >= 2 and load < n - 0.5


def compile_in_child(code: str) -> subprocess.Popen | None:
    """Start a child interpreter running ``code`` (Python source that calls kernels on tiny
    inputs) to compile them into numba's on-disk cache; None if it cannot start.

    The child inherits the environment (``NUMBA_CACHE_DIR`` included), imports this copy of
    sentvec first, and writes nothing to the terminal. Pair with :func:`finish_child`.
    """
    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
    }
    try:
        return subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        logger.debug("sentvec: no compile child (%s)", exc)
        return None


def finish_child(
    child: subprocess.Popen | None, timeout: float | None = 600.0, *, kill: bool = False
) -> None:
    """Wait for a :func:`compile_in_child` process (``kill=True``: stop it instead, for a run
    that ends early). A failed, killed or stuck child only costs its time: the caller then
    calls its kernels, which load from the cache or compile in this process."""
    if child is None or child.poll() is not None:
        return
    if not kill:
        try:
            child.wait(timeout)
            return
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck child
            pass
    child.kill()
    child.wait()
