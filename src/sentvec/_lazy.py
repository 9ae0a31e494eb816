"""Lazy package faces: a package names its public objects without importing their modules.

``import sentvec`` (or ``sentvec.evaluation``, ``sentvec.encoders``, ...) must stay fast and free
of side effects, while the objects behind the names need torch, numba, matplotlib or faiss. Each
package's ``__init__`` lists ``name -> defining module`` and calls :func:`attach`; the module is
imported on first access of one of its names (PEP 562 ``__getattr__``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(
    package: str, names: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package`` exporting ``names``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : mapping of str to str
        Public name -> module that defines it.

    Returns
    -------
    tuple
        The sorted ``__all__`` list and the module-level ``__getattr__`` and ``__dir__``.
    """
    import sys

    def __getattr__(name: str) -> Any:
        module_name = names.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return sorted(names), __getattr__, __dir__
