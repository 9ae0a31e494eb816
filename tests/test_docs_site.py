"""The documentation site builds (``mkdocs build --strict``) and its API reference reads well.

The site is built once per test session into a temporary folder, from this checkout's
``src``. The API reference must render the docstrings' Sphinx roles as links (or as code where
the target is not documented), never as the role's text, and must place every public name on
its area's page with its members under it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# a role as Markdown renders it (``:class:<code>X</code>``) or as written (in a code block)
RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj):(?:`|<code>)")


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.mark.slow
def test_built_site_shows_no_sphinx_role(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    raw = {
        str(p.relative_to(site)): RAW_ROLE.findall(p.read_text("utf-8"))
        for p in pages
        if RAW_ROLE.search(p.read_text("utf-8"))
    }
    assert not raw, raw


@pytest.mark.slow
def test_api_pages_show_no_rst_literal_markup(site):
    """A numpydoc type line is not parsed as reStructuredText: double backquotes there reach the
    page as text (``object with ``encode`` ``), so type lines name types only."""
    pages = sorted((site / "api").rglob("*.html"))
    shown = {
        str(p.relative_to(site)): re.findall(r"<code>[^<]*``[^<]*</code>", p.read_text("utf-8"))
        for p in pages
    }
    assert not {k: v for k, v in shown.items() if v}


@pytest.mark.slow
def test_api_reference_has_one_page_per_area(site):
    hook = _hook("api_reference")
    index = (site / "api" / "index.html").read_text("utf-8")
    for area in hook.AREAS:
        page = site / "api" / area / "index.html"
        assert page.is_file(), area
        assert f'href="{area}/"' in index, area  # the overview links every page
    # every public name is a level-2 heading, shown by its import path, on exactly one page
    headings = "".join((site / "api" / a / "index.html").read_text("utf-8") for a in hook.AREAS)
    for path, module in hook.public_names():
        name = path.rsplit(".", 1)[1]
        assert headings.count(f'<h2 id="{module}.{name}"') == 1, path
        assert re.search(
            rf'<h2 id="{re.escape(module)}\.{name}"[^>]*>.*?{re.escape(path)}', headings, re.S
        )


@pytest.mark.slow
def test_api_members_sit_under_their_class(site):
    html = (site / "api" / "whitening" / "index.html").read_text("utf-8")
    # Whitening.fit is a level-3 heading after the level-2 heading of its class
    cls = html.index('<h2 id="sentvec.whitening.estimator.Whitening"')
    fit = html.index('<h3 id="sentvec.whitening.estimator.Whitening.fit"')
    assert cls < fit
    assert "<h2" not in html[cls + 3 : fit]


@pytest.mark.slow
def test_sphinx_roles_render_as_links(site):
    html = (site / "api" / "whitening" / "index.html").read_text("utf-8")
    # the Whitening docstring's :meth:`sentvec.Whitening.save` (a public name's member)
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*'
        r'href="#sentvec\.whitening\.estimator\.Whitening\.save"[^>]*><code>',
        html,
    )
    links = sum(
        (site / "api" / a / "index.html").read_text("utf-8").count("autorefs-internal")
        for a in _hook("api_reference").AREAS
    )
    assert links > 100


def test_role_rewriting_resolves_like_sphinx():
    import griffe

    hook = _hook("crossrefs")
    loader = griffe.GriffeLoader(search_paths=[str(REPO / "src")])
    loader.load("sentvec.whitening")
    collection = loader.modules_collection
    whitening = collection["sentvec.whitening.estimator.Whitening"]
    text = (
        ":meth:`fit` :class:`~sentvec.whitening.statistics.WhiteningStatistics` "
        ":func:`title <sentvec.whitening.estimator.check_n_components>` "
        ":meth:`!transform` :func:`numpy.linalg.eigh`"
    )
    out = hook.rewrite(collection, whitening, text)
    assert not RAW_ROLE.search(out)
    assert (
        '<autoref identifier="sentvec.whitening.estimator.Whitening.fit" optional>'
        "<code>fit()</code></autoref>"
    ) in out
    assert (
        'identifier="sentvec.whitening.statistics.WhiteningStatistics" optional>'
        "<code>WhiteningStatistics</code>"
    ) in out
    assert 'identifier="sentvec.whitening.estimator.check_n_components"' in out
    assert "<code>title</code>" in out
    # no link asked for, and a target outside the package: code, not a reference
    assert "<code>transform()</code>" in out and "<code>numpy.linalg.eigh()</code>" in out
    assert out.count("<autoref") == 3
