"""The notice a command shows while numba compiles its kernels on a first run.

Kernels are compiled on first use and cached on disk by numba (``cache=True``); later runs load
them in a fraction of a second. A command calls its kernels once on tiny inputs inside
:func:`compiling_notice` before its real work, so a first run says what it is doing instead of
looking stuck, and the real work's progress (and timing) starts after compilation.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["COMPILING_NOTICE", "compiling_notice"]

#: What the progress display says while kernels compile.
COMPILING_NOTICE = "compiling kernels (first run only)"
logger = logging.getLogger("sentvec")


@contextlib.contextmanager
def compiling_notice(show: bool | None = None, after: float = 0.5) -> Iterator[None]:
    """Show :data:`COMPILING_NOTICE` if the block runs for more than ``after`` seconds.

    Parameters
    ----------
    show : bool or None
        As ``show`` of :func:`sentvec._progress.progress_bar`: None shows the notice only when
        stderr is a terminal (a bar with the elapsed time), True also elsewhere (one line when
        compiling starts and one when it ends), False never (it is still logged at INFO).
    after : float, default 0.5
        Loading cached kernels takes less; compiling takes seconds.
    """
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if show is None:
        show = tty
    done = threading.Event()

    def watch() -> None:
        if done.wait(after):
            return
        t0 = time.monotonic() - after
        logger.info("sentvec: %s", COMPILING_NOTICE)
        if not show:
            return
        if tty:
            from sentvec._progress import progress_bar

            bar = progress_bar(show=True, total=None, desc=COMPILING_NOTICE,
                               bar_format="{desc} [{elapsed}]")
            while not done.wait(0.5):
                bar.refresh()
            bar.close()
            return
        try:
            sys.stderr.write(f"sentvec: {COMPILING_NOTICE}\n")
            sys.stderr.flush()
            done.wait()
            sys.stderr.write(f"sentvec: kernels compiled in {time.monotonic() - t0:.0f} s\n")
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
