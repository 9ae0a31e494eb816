"""Optional dependencies (the package's extras): which modules each provides, and the one error
raised when one is missing.

``require_extra("serve")`` checks, without importing them, that the modules an extra installs
can be found, and raises :class:`MissingExtraError` naming the extra to install. The command
line checks the extras an invocation needs before it prints anything and turns the error into
one ``sentvec: error: ...`` line (exit 2); a :class:`ModuleNotFoundError` for an extra's module
met later is turned into the same error by :func:`missing_extra_error`.
"""

from __future__ import annotations

import importlib.util

from sentvec.exceptions import MissingExtraError

__all__ = ["EXTRAS", "MissingExtraError", "require_extra", "missing_extra_error"]

# extra (pyproject.toml [project.optional-dependencies]) -> the top-level modules sentvec
# imports from it at run time (optional accelerators such as uvloop or bokeh left out)
EXTRAS: dict[str, tuple[str, ...]] = {
    "dask": ("distributed",),
    "st": ("sentence_transformers",),
    "mteb": ("mteb",),
    "onnx": ("onnxruntime", "onnx"),
    "static": ("wordllama",),
    "serve": ("fastapi", "uvicorn", "orjson", "prometheus_client"),
}


def require_extra(extra: str, feature: str | None = None) -> None:
    """Check that every module of ``extra`` can be imported; import none of them.

    Parameters
    ----------
    extra : str
        A key of :data:`EXTRAS`.
    feature : str, optional
        What needs the extra, named in the error (``"sentvec serve"``, ``"backend='onnx'"``).

    Raises
    ------
    MissingExtraError
        If a module of the extra is not installed (the first one missing is named).
    KeyError
        If ``extra`` is not a key of :data:`EXTRAS`.
    """
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a finder refused it, or a broken half-import
            found = False
        if not found:
            raise MissingExtraError(extra, module, feature)


def missing_extra_error(exc: ImportError) -> MissingExtraError | None:
    """The :class:`MissingExtraError` an import error stands for, or None.

    Parameters
    ----------
    exc : ImportError
        An import error; it stands for a missing extra when it is a ``MissingExtraError`` or
        when the module it failed to import (``exc.name``) belongs to an extra.

    Returns
    -------
    MissingExtraError or None
    """
    if isinstance(exc, MissingExtraError):
        return exc
    top = (exc.name or "").split(".", 1)[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return MissingExtraError(extra, top)
    return None
