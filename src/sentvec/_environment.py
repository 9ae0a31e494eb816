"""Every ``SENTVEC_*`` environment variable, declared once, and the paths they set.

Each variable is an :class:`EnvironmentVariable` (name, default, meaning) listed in
:data:`VARIABLES`; the modules that use one read it through :meth:`EnvironmentVariable.value`,
never through ``os.environ`` (``tests/test_architecture.py`` checks it;
``tests/test_environment.py`` checks that the table of ``docs/configuration.md`` lists exactly
these). :func:`default_cache_dir` is the cache root that
the vector cache, the model weights, the ONNX graphs, the Moses tables and the Sent2Vec
dictionary indexes live under.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EnvironmentVariable",
    "VARIABLES",
    "DATA",
    "CACHE",
    "CACHE_MAX_GB",
    "MAX_MEMORY",
    "PROGRESS_INTERVAL",
    "COMPILE_CHILD",
    "API_KEY",
    "SERVE_SETTINGS",
    "default_cache_dir",
]


@dataclass(frozen=True)
class EnvironmentVariable:
    """One environment variable that sentvec reads.

    Attributes
    ----------
    name : str
        The variable (``"SENTVEC_CACHE"``).
    default : str
        What applies when it is unset or empty, in words (for the docs).
    meaning : str
        What it sets, in one sentence (for the docs).
    """

    name: str
    default: str
    meaning: str

    def value(self) -> str | None:
        """The variable's text in this process's environment, None when unset.

        Returns
        -------
        str or None
            As set (an empty string included); each reader applies its default and checks.
        """
        return os.environ.get(self.name)


DATA = EnvironmentVariable(
    "SENTVEC_DATA",
    "the copy inside the package",
    "Root of the evaluation data (holding `downstream/` and `raw/`).",
)
CACHE = EnvironmentVariable(
    "SENTVEC_CACHE",
    "`~/.cache/sentvec`",
    "Root of the disk cache: pooled vectors, unpacked model weights, ONNX graphs, the Moses "
    "tables, Sent2Vec dictionary indexes of read-only models.",
)
CACHE_MAX_GB = EnvironmentVariable(
    "SENTVEC_CACHE_MAX_GB",
    "10",
    "The most GiB the cached vectors may take; the least recently used are removed beyond it.",
)
MAX_MEMORY = EnvironmentVariable(
    "SENTVEC_MAX_MEMORY",
    "the memory available (`MemAvailable`, the cgroup limit)",
    "Memory limit of the checks before training and loading (bytes or `16G`; `--max-memory` wins).",
)
PROGRESS_INTERVAL = EnvironmentVariable(
    "SENTVEC_PROGRESS_INTERVAL",
    "30",
    "Seconds between progress lines when stderr is not a terminal.",
)
COMPILE_CHILD = EnvironmentVariable(
    "SENTVEC_COMPILE_CHILD",
    "`auto`",
    "`1` or `0`: compile the numba kernels of a first run in a child process or not; `auto` "
    "does when a core is spare.",
)
API_KEY = EnvironmentVariable(
    "SENTVEC_API_KEY",
    "no key",
    "The API key of `sentvec serve` when no `--api-key-file` is given.",
)
SERVE_SETTINGS = EnvironmentVariable(
    "SENTVEC_SERVE_SETTINGS",
    "unset",
    "Set by `sentvec serve --workers N` for its worker processes: the server's settings as "
    "JSON (not for users).",
)

#: Every variable, in the order of the docs' table.
VARIABLES: tuple[EnvironmentVariable, ...] = (
    DATA,
    CACHE,
    CACHE_MAX_GB,
    MAX_MEMORY,
    PROGRESS_INTERVAL,
    COMPILE_CHILD,
    API_KEY,
    SERVE_SETTINGS,
)


def default_cache_dir() -> Path:
    """Return the cache root: ``$SENTVEC_CACHE`` if set and non-empty, else ``~/.cache/sentvec``.

    Returns
    -------
    pathlib.Path
        Not created here.
    """
    env = CACHE.value()
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "sentvec"
