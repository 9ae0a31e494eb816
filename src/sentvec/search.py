"""Exact nearest-neighbour search over sentence embeddings (numpy or faiss ``IndexFlatIP``).

Both backends compute the same exact inner-product scores (cosine after L2 normalisation for
``metric="cosine"``); faiss's flat index is only a faster BLAS/heap implementation of the same
brute force (faiss ``IndexFlatIP``: ``D, I = index.search(x, k)``).

Ranking (both backends, identical by construction)
-------------------------------------------------
The returned top-k is the exact top-k under float64 scoring of the stored float32 vectors,
ties broken by ascending id. The float32 scan (numpy matrix product, or faiss
``IndexFlatIP.search``) only proposes ``k + margin`` candidates per query, which are re-scored in
float64 (products of float32 values are exact in float64) and sorted by (score descending, id
ascending). A float32 score differs from the float64 one by at most
``delta = (d + 2) * 2**-24 * ||q|| * max_j ||x_j||``; if the last candidate's float32 score is
within ``2 * delta`` of the k-th float64 score, a vector outside the candidates could still belong
to the top-k, so the candidate set is enlarged for that query until this cannot happen (or it
holds every vector). Hence both backends return the same ids, including on near-ties and exact
ties, and the result does not depend on how vectors were split between ``add`` calls.

Other conventions
-----------------
* Ids are assigned consecutively from 0 in the order vectors are added (int64).
* ``search`` returns ``scores`` float32 (n, k) (the float64 scores rounded), best first, and
  ``ids`` int64 (n, k). When the index holds fewer than ``k`` vectors the missing slots have id
  ``-1`` and score ``-inf``.
* ``metric="cosine"`` L2-normalises stored and query vectors (float32); an all-zero vector stays
  zero (its cosine with everything is 0) and is counted in a ``UserWarning``. Rows too large or
  too small for a float32 norm (even beyond float32's range, from float64 input) are first scaled
  by a power of two, exactly, and normalised in float64; ordinary rows are normalised in float32.
* ``metric="dot"`` stores and scores float32 vectors: input values beyond float32's range, or
  norms whose dot products could exceed it, are a ``ValueError`` (the scores could not be
  represented).
* ``load`` rejects stored vectors holding NaN or infinity (a corrupt index) with a ValueError.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from sentvec._io import atomic_directory, check_replaceable_directory, load_npy
from sentvec._numeric import unit_scale_rows
from sentvec._path_checks import check_output_path
from sentvec._readers import read_json_object
from sentvec._validation import check_choice, check_embeddings, check_positive_int
from sentvec.encoders.base import Encoder

SearchMetric = Literal["cosine", "dot"]
SearchBackend = Literal["exact", "faiss"]
SEARCH_METRICS: tuple[str, ...] = ("cosine", "dot")
SEARCH_BACKENDS: tuple[str, ...] = ("exact", "faiss")

_FORMAT = "sentvec-search-index"
_VERSION = 1
_CONFIG = "search_index.json"
_VECTORS = "embeddings.npy"
_FAISS = "index.faiss"
#: Written last into an index directory by :func:`open_corpus_index`: what the index depends on.
FINGERPRINT_FILE = "fingerprint.json"
#: The files of a corpus index directory (SemanticSearch.save plus the fingerprint).
_INDEX_FILES = frozenset({FINGERPRINT_FILE, _CONFIG, _VECTORS, _FAISS})
_CHUNK_LINES = 8192
_CHECKSUMS_KEY = "stored_sha256"

__all__ = [
    "SEARCH_METRICS",
    "SEARCH_BACKENDS",
    "FINGERPRINT_FILE",
    "SemanticSearch",
    "CorpusIndex",
    "index_fingerprint",
    "stored_checksums",
    "open_corpus_index",
    "corpus_lines_at",
]
#: Largest padded result (scores float32 + ids int64) that ``search`` makes when k > ntotal.
_MAX_PADDING_BYTES = 256 << 20

#: Query block size of the exact backend: bounds the (block, ntotal) score matrix.
_SCORE_BLOCK_BYTES = 128 * 2**20
#: Extra candidates per query re-scored in float64 (enlarged when a near-tie requires it).
_MIN_MARGIN = 16
_U32 = 2.0**-24  # float32 unit roundoff


#: Float32 row norms in this range are computed accurately in float32 (no overflow or underflow
#: of the squares); such rows are normalised in float32 exactly as always.
_SAFE_NORMS32 = (2.0**-40, 2.0**40)
_F32_MAX = float(np.finfo(np.float32).max)


def _row_norms(x: np.ndarray) -> np.ndarray:
    """Float64 L2 norms of the rows of a float32/float64 array (no float32 overflow), blockwise."""
    out = np.empty(len(x), dtype=np.float64)
    block = max(1, 2**22 // max(1, x.shape[1]))
    for a in range(0, len(x), block):
        part = np.asarray(x[a : a + block], dtype=np.float64)
        out[a : a + block] = np.sqrt(np.einsum("ij,ij->i", part, part))
    return out


def _normalise(x: np.ndarray, what: str) -> np.ndarray:
    """Unit-L2 float32 rows of a float32 or float64 array; all-zero rows stay zero (warned).

    Rows whose float32 norm is in :data:`_SAFE_NORMS32` are normalised in float32 as always.
    Other rows (values beyond float32's range, or norms whose float32 squares would overflow or
    underflow) are multiplied by ``2**-e``, ``e`` the binary exponent of their largest entry
    (exact, and cosine is scale-invariant), normalised in float64 and then cast to float32.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x32 = x.astype(np.float32, copy=False)
        norms = np.linalg.norm(x32, axis=1, keepdims=True)
    ok = (norms[:, 0] >= _SAFE_NORMS32[0]) & (norms[:, 0] <= _SAFE_NORMS32[1])
    norms[~ok] = 1.0
    out = (x32 / norms).astype(np.float32)
    n_zero = 0
    if not ok.all():
        rows = np.flatnonzero(~ok)
        A, live = unit_scale_rows(x[rows])
        n64 = np.linalg.norm(A, axis=1, keepdims=True)
        n64[~live] = 1.0
        out[rows] = (A / n64).astype(np.float32)
        n_zero = int((~live).sum())
    if n_zero:
        warnings.warn(
            f"{n_zero} of {len(x)} {what} are all-zero vectors; their cosine "
            "score with every vector is 0",
            UserWarning,
            stacklevel=3,
        )
    return out


def _check_dot_range(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` as float32 for ``metric="dot"``; ValueError if its values exceed float32's range."""
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32, copy=False)
    finite = np.isfinite(x32)
    if not finite.all():
        raise ValueError(
            f"{what} hold {int((~finite).sum())} values beyond the float32 range "
            f"(|x| > {_F32_MAX:.4g}), where metric='dot' stores and scores vectors; "
            "scale them down or use metric='cosine'"
        )
    return x32


def _dot_limit(dim: int) -> float:
    """Largest ``|q| * |x|`` whose float32 dot product (rounding included) cannot overflow."""
    return _F32_MAX / (1.0 + (dim + 2) * _U32)


def _top_c(scores: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
    """Unordered ids and values of the ``c`` largest entries of each row (c <= n)."""
    m, n = scores.shape
    if c >= n:
        return np.broadcast_to(np.arange(n), (m, n)).copy(), scores
    # row by row: much faster than one argpartition along axis 1 of a wide matrix
    ids = np.stack([np.argpartition(row, n - c)[n - c :] for row in scores])
    return ids, np.take_along_axis(scores, ids, axis=1)


def _rerank(
    X: np.ndarray, q: np.ndarray, cand: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 scores of candidate ids; top-k by (score desc, id asc). Returns (scores64, ids)."""
    q64 = q.astype(np.float64)
    s = np.empty(cand.shape, dtype=np.float64)
    for a in range(0, len(q), 256):  # bounds the (block, c, d) float64 gather
        Xc = X[cand[a : a + 256]].astype(np.float64)
        s[a : a + 256] = (Xc * q64[a : a + 256, None, :]).sum(
            axis=-1
        )  # exact products, pairwise sum
    order = np.lexsort((cand, -s), axis=1)[:, :k]
    return np.take_along_axis(s, order, 1), np.take_along_axis(cand, order, 1)


class SemanticSearch:
    """Exact top-k search over embeddings, optionally encoding texts with an attached encoder.

    Parameters
    ----------
    dim : int, optional
        Embedding dimension; inferred from the first ``add`` when None.
    metric : {"cosine", "dot"}
        ``"cosine"`` normalises vectors to unit L2 norm and ranks by inner product;
        ``"dot"`` ranks by raw inner product.
    backend : {"exact", "faiss"}
        ``"exact"``: numpy matrix product + deterministic top-k. ``"faiss"``: ``faiss.IndexFlatIP``
        (exact search; faiss is imported only when this backend is used).
    encoder : Encoder, optional
        Anything with ``encode``; used by :meth:`add_texts` / :meth:`search_texts`.

    Attributes
    ----------
    ntotal : int
        Number of stored vectors.
    """

    def __init__(
        self,
        dim: int | None = None,
        *,
        metric: SearchMetric = "cosine",
        backend: SearchBackend = "exact",
        encoder: Encoder | None = None,
    ) -> None:
        self.metric = check_choice("metric", metric, SEARCH_METRICS)
        self.backend = check_choice("backend", backend, SEARCH_BACKENDS)
        self.dim = None if dim is None else check_positive_int("dim", dim)
        self.encoder = encoder
        self._chunks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._faiss: Any = None
        self._ntotal = 0
        self._max_norm = 0.0  # largest stored L2 norm (bounds the float32 scoring error)
        if self.backend == "faiss":
            self._faiss_module()  # fail early with a clear message if faiss is missing

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _faiss_module() -> Any:
        try:
            import faiss
        except ImportError as exc:  # pragma: no cover - faiss-cpu is a dependency
            raise ImportError("backend='faiss' needs the faiss-cpu package") from exc
        return faiss

    def _prepare(self, x: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
        """Checked float32 vectors (cosine: unit-normalised) and their float64 norms."""
        arr = check_embeddings(x, name=what, n_features=self.dim)
        if self.metric == "cosine":
            arr = _normalise(arr, what)
        else:
            arr = _check_dot_range(arr, what)
        arr = np.ascontiguousarray(arr)
        return arr, _row_norms(arr)

    def _candidates(self, q: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Ids (n, c) of the ``c`` best float32 scores of each query, and those scores."""
        if self.backend == "faiss":
            s32, ids = self._faiss.search(q, c)
            return ids.astype(np.int64), s32
        X = self._vectors()
        block = max(1, _SCORE_BLOCK_BYTES // (4 * max(1, self._ntotal)))
        parts = [_top_c(q[a : a + block] @ X.T, c) for a in range(0, len(q), block)]
        return (
            np.concatenate([p[0] for p in parts]).astype(np.int64),
            np.concatenate([p[1] for p in parts]),
        )

    def _vectors(self) -> np.ndarray:
        if self.backend == "faiss":  # a view of faiss's own storage, no copy
            dim = self.dim
            if self._faiss is None or self._ntotal == 0 or dim is None:
                return np.zeros((0, dim or 0), np.float32)
            faiss = self._faiss_module()
            flat = faiss.rev_swig_ptr(self._faiss.get_xb(), self._ntotal * dim)
            return np.asarray(flat).reshape(self._ntotal, dim)
        if self._matrix is None:
            d = self.dim or 0
            self._matrix = (
                np.concatenate(self._chunks) if self._chunks else np.zeros((0, d), np.float32)
            )
            self._chunks = [self._matrix]
        return self._matrix

    @property
    def ntotal(self) -> int:
        return self._ntotal

    def __len__(self) -> int:
        return self._ntotal

    # ------------------------------------------------------------------ public API
    def add(self, embeddings: Any) -> np.ndarray:
        """Store vectors; return their ids.

        Parameters
        ----------
        embeddings : array-like of shape (n, d)
            Finite values; converted to float32 (cosine: L2-normalised; dot: must fit float32,
            with squared norms below float32's largest value).

        Returns
        -------
        ids : ndarray of shape (n,), int64
            ``ntotal_before + arange(n)``.

        Raises
        ------
        ValueError
            Not 2-D, no rows (``(0, d)``), wrong ``d``, or non-finite values; ``metric="dot"``:
            values or squared norms beyond float32's range.
        """
        arr0 = np.asarray(embeddings)
        if arr0.ndim != 2:
            raise ValueError(f"embeddings must be 2-D (n, d), got shape {arr0.shape}")
        if arr0.shape[0] == 0:  # accepted, it left an index whose searches return only padding
            raise ValueError(f"embeddings have no rows (shape {arr0.shape}); nothing to add")
        if self.dim is None:
            self.dim = check_positive_int("dim", arr0.shape[1])
        x, norms = self._prepare(embeddings, "embeddings")
        ids = np.arange(self._ntotal, self._ntotal + len(x), dtype=np.int64)
        if len(x):
            top = float(norms.max())
            if self.metric == "dot" and top * top > _dot_limit(self.dim):
                raise ValueError(
                    f"embeddings have a norm of {top:.4g}: their dot products (up to "
                    f"{top * top:.4g}) exceed the float32 range ({_F32_MAX:.4g}) in which "
                    "metric='dot' scores; scale the vectors down or use metric='cosine'"
                )
            self._max_norm = max(self._max_norm, top)
        if self.backend == "faiss":
            if self._faiss is None:
                self._faiss = self._faiss_module().IndexFlatIP(self.dim)
            self._faiss.add(x)
        else:
            self._chunks.append(x)
            self._matrix = None
        self._ntotal += len(x)
        return ids

    def search(self, queries: Any, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Return the ``k`` best stored vectors for each query.

        Parameters
        ----------
        queries : array-like of shape (n, d)
        k : int
            Results per query; may exceed ``ntotal`` (the slots beyond ``ntotal`` are padding:
            id -1, score -inf, as faiss does) as long as the padded results stay below
            256 MiB (``search -k`` of the command line is capped at ``ntotal`` instead).

        Returns
        -------
        scores : ndarray of shape (n, k), float32
            Inner products (cosine for ``metric="cosine"``), best first.
        ids : ndarray of shape (n, k), int64

        Raises
        ------
        ValueError
            Bad ``k``, wrong query dimension, or non-finite queries; an index holding no
            vectors; ``k > ntotal`` with padded results over 256 MiB (``k=10**12`` asked numpy
            for 3.64 TiB of padding); ``metric="dot"``: query values beyond float32's range, or dot
            products with the stored vectors that could exceed it.
        """
        k = check_positive_int("k", k)
        if self.dim is None:
            raise ValueError("the index is empty and has no dim yet; add vectors first")
        if self._ntotal == 0:  # every result would be padding (id -1, score -inf)
            raise ValueError("the index holds no vectors; add vectors before searching")
        q, qnorms = self._prepare(queries, "queries")
        if (
            self.metric == "dot"
            and len(q)
            and (float(qnorms.max()) * self._max_norm > _dot_limit(self.dim))
        ):
            raise ValueError(
                f"queries have a norm of {float(qnorms.max()):.4g} and stored vectors one of "
                f"{self._max_norm:.4g}: their dot products can exceed the float32 range "
                f"({_F32_MAX:.4g}) in which metric='dot' scores; scale the queries down"
            )
        n = len(q)
        if k > self._ntotal and n * k * 12 > _MAX_PADDING_BYTES:
            raise ValueError(
                f"k={k} is more than the {self._ntotal} vectors of the index: the "
                f"results would be {n} x {k} slots, nearly all padding (id -1), "
                f"{n * k * 12 / 2**30:.3g} GiB; pass k <= ntotal ({self._ntotal})"
            )
        scores = np.full((n, k), -np.inf, dtype=np.float32)
        ids = np.full((n, k), -1, dtype=np.int64)
        kk = min(k, self._ntotal)
        if kk == 0 or n == 0:
            return scores, ids
        X = self._vectors()
        delta = 2 * (self.dim + 2) * _U32 * qnorms * self._max_norm
        s64 = np.empty((n, kk))
        top = np.empty((n, kk), dtype=np.int64)
        rows = np.arange(n)
        c = min(self._ntotal, kk + max(kk, _MIN_MARGIN))
        while len(rows):
            cand, s32 = self._candidates(q[rows], c)
            s64[rows], top[rows] = _rerank(X, q[rows], cand, kk)
            # a vector outside the candidates scores (float32) at most min(s32); it could still
            # reach the k-th float64 score only if that minimum is within 2 * delta of it
            unsafe = (c < self._ntotal) & (s32.min(axis=1) + delta[rows] >= s64[rows, -1])
            rows = rows[unsafe]
            c = min(self._ntotal, 4 * c)
        s, i = s64.astype(np.float32), top
        scores[:, :kk], ids[:, :kk] = s, i
        return scores, ids

    def add_texts(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
    ) -> np.ndarray:
        """Encode ``texts`` with the attached encoder and :meth:`add` them; return their ids.

        ``batch_size`` goes to ``encoder.encode`` (None: the encoder's default).
        """
        return self.add(self._encode(texts, batch_size, show_progress_bar))

    def search_texts(
        self, queries: Sequence[str], k: int = 10, *, batch_size: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode ``queries`` with the attached encoder and :meth:`search`."""
        return self.search(self._encode(queries, batch_size, False), k)

    def _encode(self, texts: Sequence[str], batch_size: int | None, bar: bool | None) -> np.ndarray:
        if self.encoder is None:
            raise ValueError(
                "no encoder attached; pass encoder=... to SemanticSearch or use add/search"
            )
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of str, not a single str")
        emb = np.asarray(
            self.encoder.encode(list(texts), batch_size=batch_size, show_progress_bar=bar)
        )
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise ValueError(f"encoder returned shape {emb.shape} for {len(texts)} texts")
        return emb

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the index to directory ``path`` (replaced atomically; no pickle).

        Layout: ``search_index.json`` (format, version, metric, backend, dim, ntotal, largest
        stored norm) plus
        ``embeddings.npy`` (exact; float32 stored vectors) or ``index.faiss``
        (``faiss.write_index``). The directory is built under a temporary name and renamed into
        place, so readers see the old or the new index, never a mix. ``path`` may be missing,
        an empty directory or a saved index (one holding ``search_index.json``).

        Returns
        -------
        Path
            ``path``.

        Raises
        ------
        ValueError
            If the index has no ``dim`` yet, or ``path`` cannot be replaced by a rename (the
            working directory or one of its parents, a filesystem root, a mount point).
        FileExistsError
            If ``path`` is a file or a non-empty directory that is not a saved index; nothing is
            written.
        """
        if self.dim is None:
            raise ValueError("cannot save an index without dim; add vectors first or pass dim")
        path = Path(path)
        config = {
            "format": _FORMAT,
            "version": _VERSION,
            "metric": self.metric,
            "backend": self.backend,
            "dim": self.dim,
            "ntotal": self._ntotal,
            "max_norm": self._max_norm,
        }

        def write(tmp: Path) -> None:
            if self.backend == "faiss":
                index = self._faiss or self._faiss_module().IndexFlatIP(self.dim)
                self._faiss_module().write_index(index, str(tmp / _FAISS))
            else:
                np.save(tmp / _VECTORS, self._vectors(), allow_pickle=False)
            (tmp / _CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

        with atomic_directory(path, marker=_CONFIG, kind="a sentvec search index") as tmp:
            write(tmp)
        return path

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, encoder: Encoder | None = None, mmap: bool = False
    ) -> SemanticSearch:
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        mmap : bool
            Exact backend: memory-map ``embeddings.npy`` instead of reading it.

        Raises
        ------
        FileNotFoundError
            Missing directory or files.
        ValueError
            Unknown format/version, files inconsistent with the config, or stored vectors
            holding NaN or infinite values (a corrupt index).
        """
        path = Path(path)
        cfg_path = path / _CONFIG
        if not cfg_path.is_file():
            raise FileNotFoundError(f"no search index at {str(path)!r} (missing {_CONFIG})")
        cfg = read_json_object(cfg_path)
        if cfg.get("format") != _FORMAT or cfg.get("version") != _VERSION:
            raise ValueError(
                f"{str(cfg_path)!r}: unsupported index format "
                f"{cfg.get('format')!r} version {cfg.get('version')!r}"
            )
        for key, ok in (
            ("dim", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
            ("ntotal", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
            ("metric", lambda v: v in SEARCH_METRICS),
            ("backend", lambda v: v in SEARCH_BACKENDS),
        ):
            if key not in cfg or not ok(cfg[key]):
                raise ValueError(
                    f"{str(cfg_path)!r}: missing or invalid {key} "
                    f"({cfg.get(key)!r}); delete the index and build it again"
                )
        obj = cls(cfg["dim"], metric=cfg["metric"], backend=cfg["backend"], encoder=encoder)
        if obj.backend == "faiss":
            f = path / _FAISS
            if not f.is_file():
                raise FileNotFoundError(f"faiss index file not found: {str(f)!r}")
            obj._faiss = obj._faiss_module().read_index(str(f))
            n, d = obj._faiss.ntotal, obj._faiss.d
        else:
            f = path / _VECTORS
            if not f.is_file():
                raise FileNotFoundError(f"index vectors not found: {str(f)!r}")
            X = load_npy(f, mmap=mmap)
            if X.dtype != np.float32 or X.ndim != 2:
                raise ValueError(
                    f"{str(f)!r}: expected a 2-D float32 array, got {X.dtype} {X.shape}"
                )
            obj._matrix, obj._chunks = X, [X]
            n, d = X.shape
        if (n, d) != (cfg["ntotal"], cfg["dim"]):
            raise ValueError(
                f"{str(path)!r}: index holds ({n}, {d}) vectors but its config says "
                f"({cfg['ntotal']}, {cfg['dim']})"
            )
        obj._ntotal = n
        if not isinstance(cfg.get("max_norm"), (int, float)) or not cfg["max_norm"] >= 0:
            raise ValueError(f"{str(cfg_path)!r}: missing or invalid max_norm")
        norms = _row_norms(obj._vectors())  # one pass: NaN or inf makes a row norm non-finite
        bad = int((~np.isfinite(norms)).sum())
        if bad:
            raise ValueError(
                f"{str(f)!r} is corrupt: {bad} of {n} stored vectors hold NaN or "
                "infinite values; delete the index and build it again"
            )
        top = float(norms.max()) if n else 0.0
        if obj.metric == "dot" and top * top > _dot_limit(int(d)):
            raise ValueError(
                f"{str(f)!r} is corrupt: a stored vector has norm {top:.4g}, whose "
                "dot products exceed the float32 range; delete the index and build "
                "it again"
            )
        # the float32 error bound of search needs a true upper bound of the stored norms
        obj._max_norm = max(float(cfg["max_norm"]), top)
        return obj


# --------------------------------------------------------------- corpus index files
class CorpusIndex(NamedTuple):
    """What :func:`open_corpus_index` returns."""

    # the field shadows tuple.index (a method) on purpose: ``result.index`` is the index
    index: SemanticSearch  # type: ignore[assignment]
    built: bool
    n_lines: int
    directory: Path
    saved: bool


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def index_fingerprint(
    corpus: Path, model_arg: str, encoder: Encoder, metric: str, backend: str
) -> dict[str, Any]:
    """What a corpus index depends on; equal dicts mean the index can be reused.

    A SHA-256 over the corpus bytes, the model (its description and the size/mtime of its
    files), metric, backend and the index format.
    """
    from sentvec.cache_keys import fingerprint_path
    from sentvec.encoders.base import describe_encoder

    desc = json.loads(json.dumps(describe_encoder(encoder), default=str))
    files = {}
    for cand in (model_arg, desc.get("model_path"), desc.get("source")):
        if cand and Path(str(cand)).expanduser().exists():
            files[str(Path(str(cand)).expanduser().resolve())] = fingerprint_path(str(cand))
    return {
        "index_format": [_FORMAT, _VERSION],
        "corpus": str(corpus.resolve()),
        "corpus_size": corpus.stat().st_size,
        "corpus_sha256": _sha256_file(corpus),
        "model_arg": model_arg,
        "model": desc,
        "model_files": files,
        "metric": metric,
        "backend": backend,
    }


def stored_checksums(directory: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of each index file present in ``directory`` (vectors, faiss index, config).

    Written into ``fingerprint.json`` with the index and compared at reuse, so that an index
    whose stored vectors were edited (rows reordered, values changed) is rebuilt, not trusted.
    """
    d = Path(directory)
    return {
        name: _sha256_file(d / name)
        for name in sorted((_CONFIG, _VECTORS, _FAISS))
        if (d / name).is_file()
    }


def open_corpus_index(
    corpus: str | os.PathLike[str],
    encoder: Encoder,
    *,
    model_arg: str,
    index_dir: str | os.PathLike[str] | None = None,
    metric: SearchMetric = "cosine",
    backend: SearchBackend = "exact",
    rebuild: bool = False,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
) -> CorpusIndex:
    """The search index of a corpus file: reused while current, else built and saved.

    The index directory (default ``<corpus>.sentvec-index``) holds the :meth:`SemanticSearch.save`
    files and ``fingerprint.json`` (:func:`index_fingerprint` plus the SHA-256 of the stored
    files, :func:`stored_checksums`), written last. An index whose fingerprint equals the current
    one and whose files match their checksums is loaded (memory-mapped); any change of corpus,
    model, metric or backend, or of the stored vectors, rebuilds it, and an unreadable one is rebuilt with a warning, never
    trusted. A damaged index holding only our files is cleared first; any other non-empty
    directory is refused before encoding.

    Parameters
    ----------
    corpus : path-like
        UTF-8 text, one sentence per line (line ``i`` is row ``i``).
    encoder : Encoder
    model_arg : str
        The model as the user named it (part of the fingerprint).
    index_dir : path-like, optional
        Given explicitly, a location that cannot be written is an error; the default location
        next to a read-only corpus only warns, and the index is then kept in memory.
    metric, backend, rebuild, batch_size
        As :class:`SemanticSearch`; ``rebuild`` ignores a current index.
    show_progress_bar : bool, optional
        Progress over the corpus lines while building (:mod:`sentvec._progress`; None: a bar
        on a terminal only; True: also periodic one-line records elsewhere).

    Returns
    -------
    CorpusIndex
        The index, whether it was built (False: a current one was reused), the lines encoded,
        its directory and whether it was saved there.

    Raises
    ------
    FileExistsError
        The index directory is a non-empty directory that is not a sentvec search index.
    ValueError
        The corpus has no lines.
    PermissionError
        An explicit ``index_dir`` cannot be written.
    """
    from sentvec._io import atomic_write_json
    from sentvec.line_ranges import iter_line_chunks

    corpus = Path(corpus)
    explicit = index_dir is not None
    index_dir = (
        Path(index_dir)
        if index_dir is not None
        else corpus.with_name(corpus.name + ".sentvec-index")
    )
    fp = index_fingerprint(corpus, model_arg, encoder, metric, backend)
    fp_path = index_dir / FINGERPRINT_FILE
    if index_dir.exists() and not rebuild and fp_path.is_file():
        current = _current_index(index_dir, fp, encoder)
        if current is not None:
            return current
    save = _prepare_index_dir(index_dir, fp_path, explicit)
    from sentvec._progress import progress_bar

    index = SemanticSearch(metric=metric, backend=backend, encoder=encoder)
    n = 0
    with progress_bar(show=show_progress_bar, unit="line", desc=f"index {corpus.name}") as bar:
        for lines in iter_line_chunks(corpus, _CHUNK_LINES):
            index.add_texts(lines, batch_size=batch_size, show_progress_bar=False)
            n += len(lines)
            bar.update(len(lines))
    if n == 0:
        raise ValueError(f"corpus {str(corpus)!r} has no lines")
    if save:
        index.save(index_dir)  # replaces the directory (and any old fingerprint) atomically
        # written last, with the checksums of the stored files: an index without it is rebuilt
        atomic_write_json(fp_path, {**fp, _CHECKSUMS_KEY: stored_checksums(index_dir)})
    return CorpusIndex(index, True, n, index_dir, save)


def _current_index(index_dir: Path, fp: dict[str, Any], encoder: Encoder) -> CorpusIndex | None:
    """The stored index, loaded (memory-mapped), when its fingerprint equals ``fp`` and its
    files their checksums; else None, with a warning for the caller of
    :func:`open_corpus_index` when the files changed or cannot be read."""
    try:
        stored = read_json_object(index_dir / FINGERPRINT_FILE)
        checksums = stored.pop(_CHECKSUMS_KEY, None)
        current = stored == fp
        now = stored_checksums(index_dir) if current else None
        if now is not None and checksums != now:
            current = False
            want = checksums if isinstance(checksums, dict) else {}
            what = [
                f"{n} {'missing' if n not in now else 'changed'}"
                for n in sorted(set(want) | set(now))
                if want.get(n) != now.get(n)
            ]
            warnings.warn(
                f"index {str(index_dir)!r}: its stored files do not match the "
                f"checksums written with them ({', '.join(what)}: edited or "
                "damaged); rebuilding it",
                UserWarning,
                stacklevel=3,
            )
        if current:
            return CorpusIndex(
                SemanticSearch.load(index_dir, encoder=encoder, mmap=True),
                False,
                0,
                index_dir,
                True,
            )
    except (ValueError, OSError) as exc:  # a damaged index is rebuilt, never trusted
        warnings.warn(
            f"index {str(index_dir)!r} is unreadable ({exc}); rebuilding it",
            UserWarning,
            stacklevel=3,
        )
    return None


def _prepare_index_dir(index_dir: Path, fp_path: Path, explicit: bool) -> bool:
    """Make ``index_dir`` ready for a new index, before anything is encoded; whether the index
    will be saved there (False: the default place cannot be written, with a warning)."""
    if index_dir.is_dir() and fp_path.is_file() and not (index_dir / _CONFIG).is_file():
        names = {f.name for f in index_dir.iterdir()}
        if names <= _INDEX_FILES:  # a damaged index written here: only our files, cleared
            for name in names:
                (index_dir / name).unlink()
    # the rule SemanticSearch.save applies (a foreign directory is refused), before encoding
    check_replaceable_directory(index_dir, marker=_CONFIG, kind="a sentvec search index")
    try:
        check_output_path(index_dir, what="index directory", kind="whole-dir")
    except PermissionError as exc:
        if explicit:  # asked for: fail before the corpus is encoded
            raise
        # the default place, next to a read-only corpus: search all the same
        warnings.warn(
            f"{exc}; searching without saving the index (pass --index DIR to keep "
            "it for the next search)",
            UserWarning,
            stacklevel=3,
        )
        return False
    return True


def corpus_lines_at(corpus: str | os.PathLike[str], wanted: set[int]) -> dict[int, str]:
    """The lines of ``corpus`` at 0-based positions ``wanted`` (the texts of search hits)."""
    from sentvec.line_ranges import iter_line_chunks

    out, first = {}, 0
    for lines in iter_line_chunks(corpus, _CHUNK_LINES):
        for i in [w for w in wanted if first <= w < first + len(lines)]:
            out[i] = lines[i - first]
        first += len(lines)
        if len(out) == len(wanted):
            break
    return out
