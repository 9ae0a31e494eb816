"""Argument and array checks shared by all modules (the one place for them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import os


def check_choice(name: str, value: Any, options: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``options``.

    Raises
    ------
    ValueError
        ``"pooling='avg' is invalid; expected one of ['cls', 'max', 'mean']"``.
    """
    opts = list(options)
    if value not in opts:
        shown = sorted(opts, key=str)
        raise ValueError(f"{name}={value!r} is invalid; expected one of {shown}")
    return value


def check_sentences(sentences: Any, *, name: str = "sentences") -> tuple[list[str], bool]:
    """Normalise the ``sentences`` argument of an ``encode`` method.

    Parameters
    ----------
    sentences : str or sequence of str
        One sentence or a sequence of them. Empty and whitespace-only strings are allowed
        (the encoder decides what they map to and must say so).

    Returns
    -------
    sentences : list of str
    single : bool
        True when a single string was passed (the caller then returns shape ``(d,)``).

    Raises
    ------
    TypeError
        If ``sentences`` is not a string or an iterable of strings; the message names the index
        and type of the first bad item.
    """
    if isinstance(sentences, str):
        return [sentences], True
    if isinstance(sentences, (bytes, bytearray)) or sentences is None:
        raise TypeError(
            f"{name} must be a str or a sequence of str, got {type(sentences).__name__}"
        )
    if isinstance(sentences, np.ndarray):
        sentences = sentences.tolist()
    try:
        items = list(sentences)
    except TypeError:
        raise TypeError(
            f"{name} must be a str or a sequence of str, got {type(sentences).__name__}"
        ) from None
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{i}] must be str, got {type(s).__name__}: {s!r:.60}")
    return items, False


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """Return ``value`` as int if it is an integer >= ``minimum``; else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}")
    if value < minimum:
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}")
    return int(value)


def check_float_range(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as float if it lies in the given range; else ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is invalid; expected a number") from None
    if not np.isfinite(v):
        raise ValueError(f"{name}={value!r} is invalid; expected a finite number")
    bad = False
    if low is not None:
        bad |= v < low if low_inclusive else v <= low
    if high is not None:
        bad |= v > high if high_inclusive else v >= high
    if bad:
        lo = "-inf" if low is None else f"{low}"
        hi = "inf" if high is None else f"{high}"
        lb = "[" if low_inclusive else "("
        hb = "]" if high_inclusive else ")"
        raise ValueError(f"{name}={value!r} is invalid; expected a value in {lb}{lo}, {hi}{hb}")
    return v


def check_embeddings(
    X: Any, *, name: str = "X", min_rows: int = 0, n_features: int | None = None
) -> np.ndarray:
    """Validate a 2-D array of embeddings.

    Returns the array as float32 or float64 (float32 kept, other dtypes converted to float64),
    C-contiguous.

    Raises
    ------
    ValueError
        If the array is not 2-D, has fewer than ``min_rows`` rows, the wrong number of columns,
        or contains NaN or infinity (the message counts the non-finite values).
    """
    arr = np.asarray(X)
    if arr.dtype != np.float32:
        arr = arr.astype(np.float64)
    arr = np.ascontiguousarray(arr)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {arr.shape[0]}")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} has {arr.shape[1]} features, expected {n_features}")
    finite = np.isfinite(arr)
    if not finite.all():
        raise ValueError(f"{name} contains {int((~finite).sum())} non-finite values (NaN or inf)")
    return arr


def check_path_exists(path: Any, *, what: str = "file") -> os.PathLike[str]:
    """Return ``pathlib.Path(path)`` if it exists; else FileNotFoundError naming it."""
    from pathlib import Path

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{what} not found: {str(p)!r}")
    return p


def as_sequence(values: Any) -> Sequence[Any]:
    """Return ``values`` as a tuple (a single non-iterable becomes a 1-tuple)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return (values,)
    return tuple(values)
