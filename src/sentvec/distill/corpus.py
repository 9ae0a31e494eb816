"""The corpus pass of ``sentvec distill``: what it needs of the corpus, from the teacher's
tokenizer alone.

* :func:`count_corpus_tokens`: token counts of the corpus lines (the SIF weights) and the ids of
  the first ones (the whitening sample), each distinct whitespace word tokenized once
  (:class:`WordTokenCache`);
* :func:`teacher_vocabulary`: the teacher's tokens as :func:`sentvec.distill.vocabulary.plan_rows`
  takes them, and :func:`corpus_pass`: the counts, then the rows' plan (corpus words, bigrams);
* :class:`CorpusPassProcess`: :func:`corpus_pass` in a child process (``python -c``, entry
  :func:`corpus_pass_worker`), which reads the teacher's ``tokenizer.json`` with the
  ``tokenizers`` library while :func:`sentvec.distill.run.distill` imports torch and loads the
  teacher, in a run folder (:mod:`sentvec._tempdirs`: removed by the next run if this one is
  killed), its result as ``.npz`` + JSON. Measurements: ``docs/distill.md``, "Wall time";
* :func:`corpus_lines`: the corpus's non-empty lines, as every step reads them, and
  :func:`check_whitening_corpus`: a corpus too small for the whitening, refused up front.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._readers import read_json_object
from sentvec.distill.vocabulary import RowPlan, flatten_sample, plan_rows, split_sample

__all__ = [
    "CorpusCounts",
    "WordTokenCache",
    "count_corpus_tokens",
    "corpus_lines",
    "check_whitening_corpus",
    "teacher_vocabulary",
    "corpus_pass",
    "corpus_pass_worker",
    "CorpusPassProcess",
    "Vocabulary",
    "UNUSED_TOKEN_PATTERN",
    "DEFAULT_MAX_SENTENCES",
    "DEFAULT_WHITENING_SENTENCES",
]

#: Tokens the tokenizer never produces and Model2Vec drops (BERT's ``[unusedN]``).
UNUSED_TOKEN_PATTERN = r"\[unused\d+\]"
#: corpus lines counted and whitened: 200,000 scored best on dev of 100k / 200k / 300k / 1M
#: (docs/distill.md)
DEFAULT_MAX_SENTENCES = 200_000
DEFAULT_WHITENING_SENTENCES = 200_000
_COUNT_BATCH = 8192


@dataclass
class CorpusCounts:
    """Token counts of a corpus and the token ids of its first sentences.

    Attributes
    ----------
    counts : ndarray of shape (V,), int64
    n_sentences : int
        Non-empty lines counted.
    sample : list of ndarray of int64
        Token ids (no special tokens) of the first ``sample_sentences`` non-empty lines.
    path : str
        The corpus file, absolute.
    lines : list of str
        The text of those lines (kept with ``keep_lines``: a corpus vocabulary re-tokenizes it).
    """

    counts: np.ndarray
    n_sentences: int
    sample: list[np.ndarray]
    path: str
    lines: list[str] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return int(self.counts.sum())


#: Characters Python's ``str.split`` splits on that BERT's normaliser deletes (control
#: characters): a line holding one is tokenized whole, not word by word.
_SPLIT_DIFFERS = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


class WordTokenCache:
    """A tokenizer's ids of corpus lines, each distinct whitespace word tokenized once.

    With BERT's normaliser and pre-tokenizer (``BertNormalizer``, ``BertPreTokenizer``: the
    WordPiece teachers) and added tokens without whitespace, a line's ids are the
    concatenation of its whitespace words' ids (the normaliser works per character, the
    pre-tokenizer splits at whitespace anyway, WordPiece per word), so each distinct word is
    tokenized once (``encode_batch_fast``) and its ids reused. Lines holding a character
    ``str.split`` treats as whitespace but the normaliser deletes are tokenized whole. Any
    other tokenizer: every line goes through ``encode_batch_fast``. Equal to tokenizing the
    lines (tested); about 3x less tokenizer work on Wikipedia sentences (docs/distill.md).

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        Without padding and truncation.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        spec = json.loads(tokenizer.to_str())
        self.by_word = (
            (spec.get("normalizer") or {}).get("type") == "BertNormalizer"
            and (spec.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
            and not any(re.search(r"\s", a["content"]) for a in spec.get("added_tokens") or [])
        )
        self._index: dict[str, int] = {}
        self._ids: list[np.ndarray] = []
        self._table = np.zeros(0, dtype=np.int64)
        self._start = np.zeros(0, dtype=np.int64)
        self._len = np.zeros(0, dtype=np.int64)

    def _add_words(self, words: list[str], chunk: int = 512) -> None:
        """Tokenize new words, ``chunk`` at a time joined by spaces (one encoding per chunk:
        most of the tokenizer's time on single words is its cost per encoding); each token
        goes to the word its character offset falls in."""
        texts = [" ".join(words[i : i + chunk]) for i in range(0, len(words), chunk)]
        enc = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        n = np.zeros(len(words), dtype=np.int64)
        ids = []
        for c, e in enumerate(enc):
            part = words[c * chunk : (c + 1) * chunk]
            size = np.fromiter((len(w) + 1 for w in part), dtype=np.int64, count=len(part))
            starts = np.cumsum(size) - size
            offsets = np.asarray(e.offsets, dtype=np.int64).reshape(-1, 2)
            owner = np.searchsorted(starts, offsets[:, 0], side="right") - 1
            n[c * chunk : c * chunk + len(part)] = np.bincount(owner, minlength=len(part))
            ids.append(np.asarray(e.ids, dtype=np.int64))
        self._start = np.concatenate([self._start, len(self._table) + np.cumsum(n) - n])
        self._len = np.concatenate([self._len, n])
        self._table = np.concatenate([self._table, *ids])
        for w in words:
            self._index[w] = len(self._index)

    def encode(self, lines: Sequence[str]) -> list[np.ndarray]:
        """The ids of each line (no special tokens), as ``encode_batch_fast`` gives them.

        Returns
        -------
        list of ndarray of int64
        """
        if not self.by_word:
            enc = self.tokenizer.encode_batch_fast(list(lines), add_special_tokens=False)
            return [np.asarray(e.ids, dtype=np.int64) for e in enc]
        split = [line.split() for line in lines]
        index = self._index
        new = list(dict.fromkeys(w for ws in split for w in ws if w not in index))
        if new:
            self._add_words(new)
        codes = np.fromiter(
            (index[w] for ws in split for w in ws), dtype=np.int64, count=sum(map(len, split))
        )
        n = self._len[codes]
        total = int(n.sum())
        first = np.cumsum(n) - n
        flat = self._table[np.repeat(self._start[codes] - first, n) + np.arange(total)]
        per_line = np.fromiter((len(ws) for ws in split), dtype=np.int64, count=len(split))
        word_end = np.cumsum(n)
        line_end = np.cumsum(per_line)
        cuts = np.where(line_end > 0, word_end[np.maximum(line_end - 1, 0)], 0)
        out = np.split(flat, cuts[:-1])
        whole = [i for i, line in enumerate(lines) if _SPLIT_DIFFERS.search(line)]
        if whole:
            enc = self.tokenizer.encode_batch_fast(
                [lines[i] for i in whole], add_special_tokens=False
            )
            for i, e in zip(whole, enc, strict=True):
                out[i] = np.asarray(e.ids, dtype=np.int64)
        return out


def corpus_lines(path: str | os.PathLike[str]) -> Generator[str, None, None]:
    """The non-empty lines of a corpus file, stripped, as the corpus pass reads them.

    Lines are read as UTF-8 (``.xz`` / ``.gz`` / ``.bz2`` decompressed); blank lines are
    skipped.

    Parameters
    ----------
    path : path-like
        A regular file (checked by the caller).

    Yields
    ------
    str

    Raises
    ------
    ValueError
        A line that is not valid UTF-8 (its number named), or a ``.xz`` file that is truncated
        or corrupt.
    OSError
        A corrupt ``.gz`` / ``.bz2`` file (gzip's and bz2's own errors).
    """
    from sentvec.sent2vec.corpus_files import open_binary

    try:
        with open_binary(Path(path)) as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"corpus {os.fspath(path)!r} line {lineno} is not valid UTF-8 "
                        f"({exc.reason} at byte {exc.start}); convert it first "
                        "(e.g. iconv -f latin1 -t utf-8)"
                    ) from None
                if line:
                    yield line
    except (EOFError, lzma.LZMAError) as exc:  # a truncated or corrupt .xz (gzip / bz2: OSError)
        raise ValueError(f"corpus {os.fspath(path)!r} cannot be decompressed: {exc}") from None


def check_whitening_corpus(
    corpus: str | os.PathLike[str], n_components: int, *, whitening_sentences: int
) -> None:
    """Refuse, before any teacher work, a corpus too small for a whitening to ``n_components``.

    The whitening (WhiteningBERT Eq. 1) is fitted on the static sentence vectors of the first
    ``whitening_sentences`` non-empty corpus lines. ``n`` vectors, once centred, span at most
    ``n - 1`` directions, so ``k`` components need at least ``k + 1`` distinct sentences among
    those lines (and never fewer than 2; a repeated line adds the same vector). Lines are read
    until that many distinct ones are found, at most ``whitening_sentences``.

    Parameters
    ----------
    corpus : path-like
    n_components : int
        ``k`` (``dim``).
    whitening_sentences : int
        Lines the whitening is fitted on.

    Raises
    ------
    ValueError
        If ``whitening_sentences`` or the distinct non-empty lines among the corpus's first
        ``whitening_sentences`` are fewer than ``n_components + 1`` (the message says how many
        were found and what to change), or the corpus cannot be read (:func:`corpus_lines`).
    """
    needed = max(2, int(n_components) + 1)
    why = (
        f"the whitening to dim={n_components} (whiten='corpus') needs at least {needed} "
        f"sentences: {needed - 1} sentence vectors, once centred, span at most "
        f"{needed - 2} directions"
    )
    if whitening_sentences < needed:
        raise ValueError(
            f"whitening_sentences={whitening_sentences} (--whitening-sentences) is too few: "
            f"{why}; raise it, lower dim (--dim) or use whiten='none' (--whiten none)"
        )
    distinct: set[str] = set()
    read = 0
    for line in corpus_lines(corpus):
        distinct.add(line)
        read += 1
        if len(distinct) >= needed:
            return
        if read >= whitening_sentences:
            break
    found = len(distinct)
    raise ValueError(
        f"corpus {os.fspath(corpus)!r} has {found} distinct non-empty line{'s' * (found != 1)}"
        f" among the {read} the whitening is fitted on: {why}; "
        f"give a corpus of at least {needed} sentences, lower dim (--dim) or use "
        "whiten='none' (--whiten none: Model2Vec's PCA of the token rows, no corpus sentences)"
    )


def count_corpus_tokens(
    tokenizer: Any,
    corpus_path: str | os.PathLike[str],
    *,
    max_sentences: int | None = DEFAULT_MAX_SENTENCES,
    sample_sentences: int = DEFAULT_WHITENING_SENTENCES,
    keep_lines: bool = False,
    show_progress_bar: bool | None = None,
) -> CorpusCounts:
    """Count the tokens of a corpus file in one pass, keeping the first sentences' ids.

    Lines are read as UTF-8 (``.xz`` / ``.gz`` / ``.bz2`` decompressed), stripped, empty ones skipped, and tokenized without special tokens, padding or
    truncation by the ``tokenizers`` library's batch encoder (Rust, all cores), each distinct
    whitespace word once for BERT's tokenizers (:class:`WordTokenCache`). Unlike
    :func:`sentvec.encoders.sif.count_tokens` this also keeps the token ids of the first
    ``sample_sentences`` lines, on which the whitening is fitted, so the corpus is read once.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer or a transformers fast tokenizer
    corpus_path : path-like
    max_sentences : int, optional
        Count at most this many non-empty lines (None: all).
    sample_sentences : int, default 200000
    keep_lines : bool, default False
        Keep the text of the sample lines too.
    show_progress_bar : bool, optional

    Returns
    -------
    CorpusCounts

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The corpus holds no token, a line read is not valid UTF-8 (named), or a ``.xz`` file
        is truncated or corrupt.
    OSError
        A corrupt ``.gz`` / ``.bz2`` file (gzip's and bz2's own errors).
    """
    import sys

    from tokenizers import Tokenizer

    from sentvec._progress import progress_bar

    # a copy without the padding / truncation a tokenizer.json may carry (MiniLM's pads every
    # text to 128 ids): counts and sample must hold the text's own tokens, all of them
    backend = Tokenizer.from_str(getattr(tokenizer, "backend_tokenizer", tokenizer).to_str())
    backend.no_padding()
    backend.no_truncation()
    from sentvec._path_checks import check_input_file

    path = Path(check_input_file(corpus_path, what="corpus", regular=True))
    V = int(backend.get_vocab_size(with_added_tokens=True))
    counts = np.zeros(V, dtype=np.int64)
    sample: list[np.ndarray] = []
    lines: list[str] = []
    n = 0
    show = sys.stderr.isatty() if show_progress_bar is None else bool(show_progress_bar)

    cache = WordTokenCache(backend)

    def add(batch: list[str]) -> None:
        ids = cache.encode(batch)
        if len(sample) < sample_sentences:
            if keep_lines:
                lines.extend(batch[: sample_sentences - len(sample)])
            sample.extend(ids[: sample_sentences - len(sample)])
        if ids:
            counts[:] += np.bincount(np.concatenate(ids), minlength=V)[:V]

    batch: list[str] = []
    with progress_bar(total=max_sentences, desc="Counting tokens", unit="line", show=show) as bar:
        lines_in = corpus_lines(path)
        for line in lines_in:
            if max_sentences is not None and n >= max_sentences:
                break
            batch.append(line)
            n += 1
            if len(batch) >= _COUNT_BATCH:
                add(batch)
                bar.update(len(batch))
                batch = []
        lines_in.close()  # closes the file at once when max_sentences stopped the read
        if batch:
            add(batch)
            bar.update(len(batch))
    if not counts.any():
        raise ValueError(f"no token counted in {str(path)!r}")
    return CorpusCounts(
        counts=counts, n_sentences=n, sample=sample, path=os.path.abspath(path), lines=lines
    )


def teacher_vocabulary(
    tokenizer: Any,
) -> tuple[list[str], np.ndarray, dict[str, Any], int | None]:
    """A teacher's vocabulary as :func:`sentvec.distill.vocabulary.plan_rows` takes it.

    Parameters
    ----------
    tokenizer : transformers fast tokenizer or tokenizers.Tokenizer

    Returns
    -------
    tokens : list of str
        The token string of each id.
    keep : ndarray of bool, shape (len(tokens),)
        The rows computed (False: ``[unusedN]``, which the tokenizer never produces).
    tokenizer_json : dict
        The ``tokenizers`` JSON, truncation and padding off.
    unk_id : int or None
        The unknown token's id.
    """
    backend_tok = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if hasattr(tokenizer, "backend_tokenizer"):
        vocab = tokenizer.get_vocab()
        unk_id = tokenizer.unk_token_id
    else:
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        unk = json.loads(tokenizer.to_str()).get("model", {}).get("unk_token")
        unk_id = None if unk is None else tokenizer.token_to_id(unk)
    V = max(vocab.values()) + 1
    tokens = [""] * V
    for t, i in vocab.items():
        tokens[i] = t
    unused = re.compile(UNUSED_TOKEN_PATTERN)
    keep = np.fromiter((not unused.fullmatch(t) for t in tokens), dtype=bool, count=V)
    backend = json.loads(backend_tok.to_str())
    backend["truncation"] = None
    backend["padding"] = None
    return tokens, keep, backend, unk_id


Vocabulary = tuple[list[str], np.ndarray, dict[str, Any], int | None]


def corpus_pass(
    tokenizer: Any,
    vocabulary: Vocabulary,
    corpus: str | os.PathLike[str] | None,
    count_kwargs: dict[str, Any],
    plan_kwargs: dict[str, Any],
) -> tuple[CorpusCounts | None, Any, dict[str, float]]:
    """The corpus steps of :func:`distill` that need only the tokenizer: the counts and sample
    (:func:`count_corpus_tokens`, skipped without ``corpus``), then the rows' plan
    (:func:`sentvec.distill.vocabulary.plan_rows`).

    Parameters
    ----------
    tokenizer : transformers fast tokenizer or tokenizers.Tokenizer
    vocabulary : tuple
        :func:`teacher_vocabulary` of ``tokenizer``.
    corpus : path-like, optional
    count_kwargs, plan_kwargs : dict
        Options of :func:`count_corpus_tokens` and of ``plan_rows``.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`count_corpus_tokens` and ``plan_rows``.

    Returns
    -------
    stats : CorpusCounts or None
    plan : sentvec.distill.vocabulary.RowPlan
    times : dict of str to float
        ``corpus_count_s``, ``plan_rows_s``.
    """
    tokens, keep, backend, unk_id = vocabulary
    times: dict[str, float] = {}
    stats = None
    if corpus is not None:
        t0 = time.perf_counter()
        stats = count_corpus_tokens(tokenizer, corpus, **count_kwargs)
        times["corpus_count_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = plan_rows(
        backend,
        tokens,
        keep,
        None if stats is None else stats.sample,
        [] if stats is None else stats.lines,
        unk_id=unk_id,
        **plan_kwargs,
    )
    times["plan_rows_s"] = time.perf_counter() - t0
    return stats, plan, times


#: The child's command: ``python -c _CHILD DIRECTORY`` (no ``multiprocessing``, which would
#: import the caller's ``__main__`` script again in the child). Its stdin is a pipe the parent
#: never writes: end of file means the parent is gone (even by ``kill -9``), and the child
#: stops at once instead of counting on alone and writing into a removed run folder.
_CHILD = (
    "import os, sys, threading\n"
    "def _orphaned():\n"
    "    while os.read(0, 4096):  # unbuffered: no lock that interpreter shutdown waits on\n"
    "        pass\n"
    "    os._exit(4)\n"
    "threading.Thread(target=_orphaned, daemon=True).start()\n"
    "try:\n"
    "    from sentvec.distill.corpus import corpus_pass_worker\n"
    "except BaseException:\n"
    "    sys.exit(3)  # this interpreter cannot import sentvec: the parent does the pass\n"
    "sys.exit(corpus_pass_worker(sys.argv[1]))"
)


#: The corpus pass child's result: arrays (``numpy.savez``, read with ``allow_pickle=False``)
#: and everything else as JSON (written last: it marks a complete result). Neither format
#: can run code when read, unlike a pickle.
RESULT_ARRAYS, RESULT_JSON = "result.npz", "result.json"


def _pass_to_files(
    root: Path,
    vocabulary: Vocabulary,
    stats: CorpusCounts | None,
    plan: RowPlan,
    times: dict[str, float],
) -> None:
    """Write a corpus pass's result into ``root`` (:data:`RESULT_ARRAYS`, then
    :data:`RESULT_JSON`), both atomically."""
    from sentvec._io import atomic_open, atomic_write_json

    tokens, keep, backend, unk_id = vocabulary
    arrays: dict[str, Any] = {"keep": np.asarray(keep, dtype=bool)}  # numeric: no pickle
    arrays["pieces"], arrays["pieces_bounds"] = flatten_sample(
        [np.asarray(x, dtype=np.int64) for x in plan.pieces]
    )
    arrays["plan_keep"] = np.asarray(plan.keep, dtype=bool)
    arrays["pairs"], arrays["pair_counts"] = plan.pairs, plan.pair_counts
    if plan.sample is not None:  # one array and its offsets, not 200,000 pieces
        arrays["plan_sample"], arrays["plan_bounds"] = flatten_sample(plan.sample)
    if stats is not None:
        arrays["counts"] = stats.counts
        arrays["stats_sample"], arrays["stats_bounds"] = flatten_sample(stats.sample)
    meta = {
        "tokens": tokens,
        "backend": backend,
        "unk_id": unk_id,
        "stats": None if stats is None else {"n_sentences": stats.n_sentences, "path": stats.path},
        "plan": {
            "tokenizer_json": plan.tokenizer_json,
            "n_tokens": plan.n_tokens,
            "words": [[w, list(pieces), count] for w, pieces, count in plan.words],
            "sample_tokens": plan.sample_tokens,
        },
        "times": times,
    }
    with atomic_open(root / RESULT_ARRAYS) as fh:
        np.savez(fh, **arrays)
    atomic_write_json(root / RESULT_JSON, meta)


def _pass_from_files(
    root: Path,
) -> tuple[Vocabulary, CorpusCounts | None, RowPlan, dict[str, float]]:
    """Read what :func:`_pass_to_files` wrote (no pickle); OSError, ValueError, KeyError or
    TypeError when it is missing or malformed."""
    meta = read_json_object(root / RESULT_JSON)
    with np.load(root / RESULT_ARRAYS, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    vocabulary: Vocabulary = (
        list(meta["tokens"]),
        arrays["keep"],
        meta["backend"],
        meta["unk_id"],
    )
    stats = None
    if meta["stats"] is not None:
        stats = CorpusCounts(
            counts=arrays["counts"],
            n_sentences=int(meta["stats"]["n_sentences"]),
            sample=split_sample(arrays["stats_sample"], arrays["stats_bounds"]),
            path=str(meta["stats"]["path"]),
        )
    p = meta["plan"]
    plan = RowPlan(
        pieces=[x.tolist() for x in split_sample(arrays["pieces"], arrays["pieces_bounds"])],
        keep=arrays["plan_keep"],
        tokenizer_json=p["tokenizer_json"],
        n_tokens=int(p["n_tokens"]),
        sample=split_sample(arrays["plan_sample"], arrays["plan_bounds"])
        if "plan_sample" in arrays
        else None,
        words=[(str(w), tuple(int(i) for i in pieces), int(c)) for w, pieces, c in p["words"]],
        pairs=arrays["pairs"],
        pair_counts=arrays["pair_counts"],
        sample_tokens=int(p["sample_tokens"]),
    )
    return vocabulary, stats, plan, {str(k): float(v) for k, v in meta["times"].items()}


def corpus_pass_worker(directory: str) -> int:
    """Entry point of :class:`CorpusPassProcess`'s child: reads ``request.json`` in
    ``directory``, runs :func:`corpus_pass` with the ``tokenizers`` library alone (no torch
    or transformers import) and writes its result there as :data:`RESULT_ARRAYS` and
    :data:`RESULT_JSON` (formats that cannot run code when read). A failure writes nothing and
    prints no traceback: the parent then runs the pass itself and raises the real error.

    Returns
    -------
    int
        The exit status: 0, or 1 on failure.
    """
    root = Path(directory)
    try:
        from tokenizers import Tokenizer

        req = read_json_object(root / "request.json")
        tok = Tokenizer.from_file(req["tokenizer_file"])
        vocabulary = teacher_vocabulary(tok)
        stats, plan, times = corpus_pass(
            tok, vocabulary, req["corpus"], req["count_kwargs"], req["plan_kwargs"]
        )
        _pass_to_files(root, vocabulary, stats, plan, times)
    except BaseException:  # noqa: BLE001 - the parent sees the status and redoes the pass
        return 1
    return 0


class CorpusPassProcess:
    """:func:`corpus_pass` in a child process, beside the teacher's import, load and forward
    pass (the child needs only the teacher's ``tokenizer.json`` and the ``tokenizers``
    library). About 4 s of the 22 s ``sentvec distill`` at its defaults (docs/distill.md,
    "Wall time").

    :meth:`result` returns the child's counts and plan only when its tokenizer is the
    teacher's own (the same vocabulary, kept rows, unknown token and ``tokenizers`` JSON as
    :func:`teacher_vocabulary` of the loaded teacher); otherwise, or if the child failed,
    None, and :func:`distill` runs the pass in its own process (which raises the real error of
    a bad corpus).
    """

    def __init__(self, directory: str, process: Any) -> None:
        self.directory = directory
        self.process = process

    @classmethod
    def start(
        cls,
        model: str | os.PathLike[str],
        corpus: str | os.PathLike[str],
        count_kwargs: dict[str, Any],
        plan_kwargs: dict[str, Any],
    ) -> CorpusPassProcess | None:
        """Start the child for a teacher given by alias or directory; None when the teacher has
        no ``tokenizer.json`` (or is a hub name) or the child cannot be started."""
        import subprocess
        import sys

        from sentvec._tempdirs import make_run_dir
        from sentvec.encoders import resolve_model

        try:
            tokenizer_file = Path(resolve_model(model)) / "tokenizer.json"
        except (OSError, ValueError):
            return None
        if not tokenizer_file.is_file():
            return None
        try:  # a run folder: removed by the next run if this process is killed
            directory = os.fspath(make_run_dir("distill"))
        except OSError:
            return None
        request = {
            "tokenizer_file": str(tokenizer_file),
            "corpus": os.fspath(corpus),
            "count_kwargs": count_kwargs,
            "plan_kwargs": plan_kwargs,
        }
        Path(directory, "request.json").write_text(json.dumps(request), encoding="utf-8")
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", _CHILD, directory], stdin=subprocess.PIPE
            )
        except OSError:
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
            return None
        return cls(directory, process)

    def result(
        self, vocabulary: Vocabulary
    ) -> tuple[CorpusCounts | None, Any, dict[str, float]] | None:
        """Wait for the child; its ``(stats, plan, times)``, or None (see the class)."""
        if self.process.wait() != 0:
            return None
        try:
            (tokens, keep, backend, unk_id), stats, plan, times = _pass_from_files(
                Path(self.directory)
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        own_tokens, own_keep, own_backend, own_unk = vocabulary
        if not (
            tokens == own_tokens
            and np.array_equal(keep, own_keep)
            and backend == own_backend
            and unk_id == own_unk
        ):
            return None
        return stats, plan, times

    def running(self) -> bool:
        """Whether the child still runs."""
        return bool(self.process.poll() is None)

    def failed(self) -> bool:
        """Whether the child has ended with an error."""
        return self.process.poll() not in (None, 0)

    def close(self) -> None:
        """Stop the child if it still runs and remove its directory."""
        import shutil

        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()
        shutil.rmtree(self.directory, ignore_errors=True)
