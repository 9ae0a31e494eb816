"""Where the evaluation data shipped with sentvec lives."""

from __future__ import annotations

import os
from pathlib import Path

from sentvec._environment import DATA

#: Directory of the data copied into the package (see ``data/PROVENANCE.md``).
PACKAGE_DATA_DIR = Path(__file__).resolve().parent / "data"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """Return the root of the evaluation data (holding ``downstream/`` and ``raw/``).

    Order: ``override``, then the ``SENTVEC_DATA`` environment variable, then the package copy.

    Raises
    ------
    FileNotFoundError
        If the chosen directory does not exist.
    """
    chosen = override if override is not None else DATA.value() or PACKAGE_DATA_DIR
    p = Path(chosen)
    if not p.is_dir():
        raise FileNotFoundError(f"data directory not found: {str(p)!r}")
    return p


def corpus_sample_path() -> Path:
    """Path of the 10,000-sentence Wikipedia sample shipped with the package."""
    return PACKAGE_DATA_DIR / "corpus" / "enwiki-2015-sentences-sample10k.txt"
