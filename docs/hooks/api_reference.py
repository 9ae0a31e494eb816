"""MkDocs hook: the API reference pages, generated from the package's public names.

The reference has one page per public area (``docs/api/*.md``). Each page holds a marker line,
``<!-- sentvec-api AREA -->``; this hook replaces it with one mkdocstrings block per public name
of that area, each pointing at the module that defines the name (``sentvec._LAZY``;
``sentvec.serve._LAZY`` for the server; ``sentvec.encoders._LAZY`` for the encoder contract and
the format table; ``sentvec.exceptions.__all__``), under the heading a user imports it by
(``sentvec.Whitening``). The area of a name is decided by its module (``AREAS``): a name added
to ``sentvec.__all__`` appears on its page without editing it, and a name whose module belongs
to no area stops the build (``tests/test_docs.py`` checks that every name is placed).
"""

from __future__ import annotations

import re
from typing import Any

# area -> (page title, module prefixes); the most specific prefix decides
AREAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "encoders": (
        "Encoders and pipelines",
        ("sentvec.encoders", "sentvec.integrations.sentence_transformers"),
    ),
    "sent2vec": ("Sent2Vec", ("sentvec.sent2vec",)),
    "whitening": ("Whitening and post-processing", ("sentvec.whitening",)),
    "evaluation": ("Evaluation", ("sentvec.evaluation", "sentvec.integrations.mteb")),
    "static": (
        "Static models and distillation",
        (
            "sentvec.encoders.static",
            "sentvec.encoders.static_bigrams",
            "sentvec.distill",
            "sentvec.static_training",
        ),
    ),
    "serving": ("Serving", ("sentvec.serve",)),
    "exceptions": ("Exceptions and warnings", ("sentvec.exceptions",)),
    "files": (
        "Files, search and cluster",
        ("sentvec.search", "sentvec.encode_files", "sentvec.cluster"),
    ),
}

#: Modules of ``sentvec.encoders`` whose public names are documented under ``sentvec.encoders``:
#: the capability protocols an encoder declares and the table of on-disk formats.
ENCODERS_MODULES = ("sentvec.encoders.base", "sentvec.encoders.formats")

MARKER = re.compile(r"^<!-- sentvec-api (?P<area>[a-z0-9]+) -->$", re.M)
INDEX_MARKER = "<!-- sentvec-api-index -->"


def area_of(module: str) -> str:
    """The area whose longest module prefix matches ``module``.

    Raises
    ------
    ValueError
        If no area claims the module: a new public module needs a line in ``AREAS``.
    """
    best: tuple[int, str] | None = None
    for area, (_, prefixes) in AREAS.items():
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), area)
    if best is None:
        raise ValueError(f"docs/hooks/api_reference.py: no API page (AREAS) for module {module}")
    return best[1]


def public_names() -> list[tuple[str, str]]:
    """``(import path, defining module)`` of every documented public name, in page order."""
    import sentvec
    import sentvec.encoders
    import sentvec.exceptions
    import sentvec.serve

    names = [(f"sentvec.{n}", sentvec._LAZY[n]) for n in sentvec.__all__ if n in sentvec._LAZY]
    names += [(f"sentvec.serve.{n}", m) for n, m in sentvec.serve._LAZY.items()]
    more = [
        (f"sentvec.encoders.{n}", m)
        for n, m in sentvec.encoders._LAZY.items()
        if m in ENCODERS_MODULES
    ]
    more += [(f"sentvec.exceptions.{n}", "sentvec.exceptions") for n in sentvec.exceptions.__all__]
    shown = {path.rsplit(".", 1)[1] for path, _ in names}  # each object once: where it is first
    return names + [(path, m) for path, m in more if path.rsplit(".", 1)[1] not in shown]


def api_reference_markdown(area: str) -> str:
    """Markdown for the public names of ``area``: one ``:::`` block each, sorted by name.

    Raises
    ------
    KeyError
        If ``area`` is not one of ``AREAS``.
    """
    AREAS[area]  # noqa: B018 - an unknown marker fails the build
    out = []
    for path, module in sorted(public_names(), key=lambda pm: pm[0].rsplit(".", 1)[1].lower()):
        if area_of(module) != area:
            continue
        name = path.rsplit(".", 1)[1]
        out += [
            f"::: {module}.{name}",
            "    options:",
            f'      heading: "{path}"',
            f'      toc_label: "{name}"',
            "",
        ]
    return "\n".join(out) + "\n"


def api_index_markdown() -> str:
    """A table of the API pages (``docs/api/AREA.md``) and the public names on each."""
    names: dict[str, list[str]] = {area: [] for area in AREAS}
    for path, module in public_names():
        names[area_of(module)].append(path.rsplit(".", 1)[1])
    out = ["| page | names |", "|---|---|"]
    for area, (title, _) in AREAS.items():
        out.append(f"| [{title}]({area}.md) | {', '.join(f'`{n}`' for n in names[area])} |")
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    """Replace the marker of an API page with the generated reference (or the index table)."""
    markdown = markdown.replace(INDEX_MARKER, api_index_markdown())
    return MARKER.sub(lambda m: api_reference_markdown(m["area"]), markdown)
