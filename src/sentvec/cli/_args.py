"""Argument types shared by the sub-commands (argparse ``type=`` callables)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_at_least(minimum: int) -> Callable[[str], int]:
    """Return a parser of integers ``>= minimum`` that raises ``ArgumentTypeError`` otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    return parse


#: Parser of integers >= 1 (batch sizes, k, folds, n_components).
positive_int = int_at_least(1)
