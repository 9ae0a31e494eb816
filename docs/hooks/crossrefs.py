"""Griffe extension: the docstrings' Sphinx roles become mkdocstrings cross-references.

sentvec's docstrings name other objects with Sphinx roles (``:class:`Whitening```,
``:meth:`~sentvec.Whitening.save```, ``:func:`title <target>```). mkdocstrings renders
docstrings as Markdown, where a role would appear literally. When the package is loaded, this
extension rewrites every role into an autorefs reference to the object's canonical path,
resolved the way Sphinx resolves it: an absolute path, a name in the enclosing class or module
(or any package above it), a ``sentvec.<name>`` public name, or ``.name`` searched in the
enclosing scopes. The reference is optional: it renders as a link where the object is
documented on the site and as code otherwise (private helpers, the standard library, numpy).

Used by ``mkdocs.yml`` (``plugins.mkdocstrings.handlers.python.options.extensions``).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

# a role, its optional ``~`` (show the last part) / ``!`` (no link), and ``title <target>``
ROLE = re.compile(
    r":(?:py:)?(?P<role>class|func|meth|attr|data|mod|exc|obj):"
    r"`(?P<mods>[~!]?)(?P<text>[^`<]+?)(?:\s*<(?P<target>[^`>]+)>)?`"
)


def _lookup(collection: griffe.ModulesCollection, path: str) -> str | None:
    """The canonical path of ``path`` in the loaded packages, or None."""
    try:
        obj = collection[path]
        return str(obj.canonical_path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _scopes(obj: griffe.Object) -> list[str]:
    """``obj``'s own path (a class or module) and every enclosing one, innermost first."""
    scopes = []
    current: Any = obj if obj.is_class or obj.is_module else obj.parent
    while current is not None:
        scopes.append(current.path)
        current = current.parent
    return scopes


def resolve(collection: griffe.ModulesCollection, obj: griffe.Object, target: str) -> str | None:
    """Canonical path of a role target written in ``obj``'s docstring, or None."""
    name = target.lstrip(".")
    candidates = [] if target.startswith(".") else [name]
    candidates += [f"{scope}.{name}" for scope in _scopes(obj)]
    for path in candidates:
        found = _lookup(collection, path)
        if found is not None:
            return found
    return None


def rewrite(collection: griffe.ModulesCollection, obj: griffe.Object, text: str) -> str:
    """``text`` with each Sphinx role replaced by an optional autorefs reference."""

    def replace(match: re.Match[str]) -> str:
        written = match["text"].strip()
        target = (match["target"] or written).strip().removesuffix("()")
        title = written
        if match["mods"] == "~" and not match["target"]:
            title = written.rsplit(".", 1)[-1]
        title = title.lstrip(".")
        if match["role"] in ("func", "meth") and not match["target"] and not title.endswith(")"):
            title += "()"
        code = f"<code>{html.escape(title)}</code>"
        path = None if match["mods"] == "!" else resolve(collection, obj, target)
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(replace, text)


class SphinxRolesToCrossrefs(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package (see the module)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        collection = loader.modules_collection
        stack: list[Any] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.is_alias:
                continue
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = rewrite(collection, obj, obj.docstring.value)
            stack.extend(obj.members.values())
