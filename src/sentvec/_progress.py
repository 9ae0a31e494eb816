"""Progress display of long operations: a tqdm bar on a terminal, periodic one-line records
elsewhere (CI, ``nohup``, a log file).

tqdm redraws its bar with carriage returns, which in a log file make one ever-growing line.
:func:`progress_bar` keeps tqdm (its rate, done / total and ETA arithmetic, ``mininterval``
throttling) and, when stderr is not a terminal, gives it a file that turns each redraw into one
line, printed at most every :func:`record_interval` seconds::

    sentvec: encode wiki.txt: 410000/1000000 (41%) [02:10<03:07, 3146.22line/s]

A run shorter than one interval prints no record at all, so quick commands stay quiet.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from sentvec._environment import PROGRESS_INTERVAL

__all__ = ["progress_bar", "record_interval", "PROGRESS_INTERVAL_ENV"]

#: Environment variable: seconds between progress records off a terminal (default 30).
PROGRESS_INTERVAL_ENV = PROGRESS_INTERVAL.name


#: One record: what, how far, elapsed < remaining (ETA), rate, the caller's postfix.
_RECORD_FORMAT = (
    "{desc}: {n_fmt}/{total_fmt} ({percentage:.0f}%) [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
)

_RECORD_FORMAT_NO_TOTAL = "{desc}: {n_fmt} [{elapsed}, {rate_fmt}{postfix}]"


def record_interval() -> float:
    """Seconds between progress records when stderr is not a terminal (``$SENTVEC_PROGRESS_INTERVAL``,
    default 30; a value that is not a non-negative number means the default)."""
    try:
        value = float(PROGRESS_INTERVAL.value() or "30")
    except ValueError:
        return 30.0
    return value if value >= 0 else 30.0


class _LineRecords:
    """A file for tqdm that writes each status redraw as one ``sentvec: ...`` line.

    The first redraw (0 %, at start) is held back, and the final one is written only if a
    periodic record was: a run shorter than one interval prints nothing.
    """

    def __init__(self, stream: IO[str], interval: float) -> None:
        self.stream, self.interval = stream, interval
        self.t0 = time.monotonic()
        self.last: str | None = None
        self.emitted: str | None = None
        self.printed = False

    def write(self, text: str) -> None:
        line = text.replace("\r", "").replace("\x1b[A", "").strip()
        if not line:
            return
        self.last = line
        if time.monotonic() - self.t0 >= self.interval:
            self._emit(line)

    def _emit(self, line: str) -> None:
        if (
            self.emitted is not None
            and line.split(" [")[0] == self.emitted.split(" [")[0]
            and line.count("=") <= self.emitted.count("=")
        ):
            return  # no progress (and no new postfix) since the last record
        try:
            self.stream.write(f"sentvec: {line}\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed log: progress is not worth failing for
            pass
        self.printed = True
        self.emitted = line

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        """At close: the last state, if any record was printed (so the log ends at 100 %)."""
        if self.printed and self.last:
            self._emit(self.last)


class _RecordingBar:
    """tqdm on a :class:`_LineRecords` file; closing it writes the final record."""

    def __init__(self, bar: Any, records: _LineRecords) -> None:
        self._bar, self._records, self._closed = bar, records, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bar, name)

    def __iter__(self) -> Any:
        try:
            yield from self._bar
        finally:
            self.close()

    def __enter__(self) -> _RecordingBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._bar.close()  # tqdm's own final redraw
        self._records.finish()


def progress_bar(iterable: Any = None, *, show: bool | None = None, **kwargs: Any) -> Any:
    """A tqdm progress bar on stderr: a bar on a terminal, periodic lines elsewhere.

    Parameters
    ----------
    iterable : iterable, optional
        As tqdm's first argument.
    show : bool or None
        None: only when stderr is a terminal (the library default). True: always (the commands'
        default and ``--progress``): a bar on a terminal, else one line every
        :func:`record_interval` seconds with rate, done / total and ETA. False: never.
    **kwargs
        tqdm options (``total``, ``desc``, ``unit``, ``initial``, ...).

    Returns
    -------
    tqdm-like
        Supports ``update``, ``set_postfix``, ``n``, ``close``, iteration and ``with``.
    """
    from tqdm.auto import tqdm

    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if show is None:
        show = tty
    if not show:
        return tqdm(iterable, disable=True, **kwargs)
    if tty:
        return tqdm(iterable, file=sys.stderr, **kwargs)
    interval = record_interval()
    records = _LineRecords(sys.stderr, interval)
    from tqdm import tqdm as plain_tqdm  # no notebook widget off a terminal

    known = kwargs.get("total") is not None or hasattr(iterable, "__len__")
    kwargs.setdefault("bar_format", _RECORD_FORMAT if known else _RECORD_FORMAT_NO_TOTAL)
    bar = plain_tqdm(
        iterable,
        file=records,
        mininterval=interval,
        maxinterval=max(interval, 1.0),
        ascii=True,
        dynamic_ncols=False,
        **kwargs,
    )
    return _RecordingBar(bar, records)
