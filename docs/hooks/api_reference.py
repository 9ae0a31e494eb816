"""MkDocs hook: the API reference page, generated from ``sentvec.__all__``.

``docs/api.md`` holds a marker line; this hook replaces it with one mkdocstrings block per
public name, each pointing at the module that defines the name (``sentvec._LAZY``), grouped by
subpackage. A name added to ``sentvec.__all__`` appears on the page without editing it
(``tests/test_docs.py`` checks that every name does).
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- sentvec-api -->"

# section title per top-level part of the package, in page order
_SECTIONS = (
    ("sentvec.encoders", "Encoders and pipelines"),
    ("sentvec.whitening", "Whitening and post-processing"),
    ("sentvec.evaluation", "Evaluation"),
    ("sentvec.sent2vec", "Sent2Vec"),
    ("sentvec.search", "Search"),
    ("sentvec.encode_files", "Large files"),
    ("sentvec.cluster", "Scaling out"),
    ("sentvec.integrations", "Integrations"),
)


def _section(module: str) -> str:
    for prefix, title in _SECTIONS:
        if module == prefix or module.startswith(prefix + "."):
            return title
    return "Other"


def api_reference_markdown() -> str:
    """Markdown for every name in ``sentvec.__all__``: a heading and a ``:::`` block each."""
    import sentvec
    from sentvec import _LAZY

    groups: dict[str, list[tuple[str, str]]] = {}
    for name in sentvec.__all__:
        if name in _LAZY:
            groups.setdefault(_section(_LAZY[name]), []).append((name, _LAZY[name]))
    order = [title for _, title in _SECTIONS] + ["Other"]
    out = [
        "Every public name of the `sentvec` package (`sentvec.__all__`), documented where it is",
        "defined. `import sentvec` is cheap: each name imports its module (and torch, numba or",
        "faiss behind it) on first access.",
        "",
        f"`sentvec.__version__`: the version string (`{sentvec.__version__}` for this build).",
        "",
    ]
    for title in order:
        for i, (name, module) in enumerate(sorted(groups.get(title, []))):
            if i == 0:
                out += [f"## {title}", ""]
            out += [f"### `sentvec.{name}`", "", f"::: {module}.{name}", ""]
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    """Replace the marker of the API page with the generated reference."""
    if MARKER in markdown:
        return markdown.replace(MARKER, api_reference_markdown())
    return markdown
