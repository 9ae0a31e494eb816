"""Extra rows of a distilled static model from corpus text: whole words and bigrams.

``sentvec distill --vocabulary corpus:N`` adds a row for each of the ``N`` most frequent corpus
words that the teacher's WordPiece vocabulary splits into several pieces. As Model2Vec does for
a vocabulary it is given (``model2vec.distill``: a new token's ids are the original
tokenizer's encoding of it, special tokens included, then one forward pass and the pooling), the
row is the teacher's pooled vector of ``[CLS] pieces [SEP]``; the word is added to the WordPiece
vocabulary, whose greedy longest-match then produces it as one token.

``--bigrams N`` adds a row for each of the ``N`` most frequent adjacent token pairs of the
corpus (after the vocabulary above), Sent2Vec's word bigrams (Pagliardini et al. 2018, Sec. 2)
applied to a teacher: the row is the teacher's pooled vector of ``[CLS] pieces(a) pieces(b)
[SEP]``, and a sentence vector averages its token rows and the rows of its listed bigrams
(:class:`sentvec.encoders.static_bigrams.BigramStaticEncoder`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "corpus_words",
    "retokenize",
    "extend_wordpiece",
    "corpus_bigrams",
    "with_bigram_rows",
    "parse_vocabulary",
    "flatten_sample",
    "split_sample",
    "RowPlan",
    "plan_rows",
]


def parse_vocabulary(spec: str, default_n: int = 5000) -> int:
    """Words to add for ``--vocabulary``: ``"teacher"`` -> 0, ``"corpus"`` -> ``default_n``,
    ``"corpus:N"`` -> N.

    Raises
    ------
    ValueError
        Anything else, or N < 1.
    """
    if spec == "teacher":
        return 0
    if spec == "corpus":
        return default_n
    head, _, tail = spec.partition(":")
    if head == "corpus" and tail.isdigit() and int(tail) > 0:
        return int(tail)
    raise ValueError(f"vocabulary must be 'teacher', 'corpus' or 'corpus:N' (N >= 1), got {spec!r}")


def flatten_sample(sample: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A sample of token-id sentences as one array and each sentence's offsets.

    Parameters
    ----------
    sample : sequence of int arrays

    Returns
    -------
    flat : ndarray of int64
        All ids, sentence after sentence.
    bounds : ndarray of shape (len(sample) + 1,), int64
        Sentence ``i`` is ``flat[bounds[i]:bounds[i + 1]]`` (a CSR ``indptr``).
    """
    lengths = np.fromiter((len(s) for s in sample), dtype=np.int64, count=len(sample))
    bounds = np.zeros(len(sample) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    flat = np.concatenate([np.asarray(s, dtype=np.int64) for s in sample]) if len(sample) else None
    return (np.zeros(0, np.int64) if flat is None else flat), bounds


def split_sample(flat: np.ndarray, bounds: np.ndarray) -> list[np.ndarray]:
    """The inverse of :func:`flatten_sample`: each sentence's ids (views of ``flat``)."""
    return np.split(flat, bounds[1:-1]) if len(bounds) > 1 else []


def _word_spans(flat: np.ndarray, bounds: np.ndarray, cont: np.ndarray) -> tuple[np.ndarray, ...]:
    """Start and length of each multi-piece word: a piece that is not a continuation piece
    followed by the continuation pieces after it, within one sentence."""
    brk = ~cont[flat]
    brk[bounds[:-1][np.diff(bounds) > 0]] = True  # a sentence's first piece starts a span
    starts = np.flatnonzero(brk)
    lengths = np.diff(np.append(starts, len(flat)))
    ok = (lengths > 1) & ~cont[flat[starts]]
    return starts[ok], lengths[ok]


def _unique_spans(
    flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray, np.ndarray]:
    """The distinct id sequences of the spans: each one's ids, count and first position, and
    the index of each span's sequence among them."""
    seqs: list[tuple[int, ...]] = []
    counts, first = [], []
    which = np.empty(len(starts), dtype=np.int64)
    for L in np.unique(lengths):
        sel = np.flatnonzero(lengths == L)
        M = flat[starts[sel][:, None] + np.arange(L)]
        u, idx, inv, c = np.unique(
            M, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        which[sel] = len(seqs) + inv.reshape(-1)
        seqs.extend(tuple(int(i) for i in row) for row in u)
        counts.append(c)
        first.append(starts[sel][idx])
    cat = np.concatenate if counts else (lambda _: np.zeros(0, np.int64))
    return seqs, cat(counts), cat(first), which


def _continuation(tokens: Sequence[str], prefix: str) -> np.ndarray:
    return np.fromiter((t.startswith(prefix) for t in tokens), dtype=bool, count=len(tokens))


def corpus_words(
    sample: Sequence[np.ndarray],
    tokens: Sequence[str],
    n: int,
    *,
    prefix: str = "##",
    skip_ids: Sequence[int] = (),
    max_chars: int = 100,
) -> list[tuple[str, tuple[int, ...], int]]:
    """The ``n`` most frequent words that the WordPiece tokenizer splits into several pieces.

    A word is a piece not starting with ``prefix`` followed by the pieces that do (WordPiece's
    continuation pieces); its text is the pieces joined with the prefix removed (normalised
    text: lower-cased where the tokenizer lower-cases). Counted with numpy over the whole
    sample (``np.unique`` of the spans of each length), not a loop over sentences.

    Parameters
    ----------
    sample : sequence of int arrays
        Token ids of corpus sentences (no special tokens).
    tokens : sequence of str
        Token string of each id.
    n : int
    prefix : str, default "##"
        The continuing-subword prefix.
    skip_ids : sequence of int
        Words holding one of these ids (the unknown token) are left out.
    max_chars : int, default 100
        Longer words are left out (WordPiece's ``max_input_chars_per_word``).

    Returns
    -------
    list of (word, piece ids, count), most frequent first (ties: first seen first)
    """
    cont = _continuation(tokens, prefix)
    skip = set(int(i) for i in skip_ids)
    flat, bounds = flatten_sample(sample)
    seqs, counts, first, _ = _unique_spans(flat, *_word_spans(flat, bounds, cont))
    out = []
    k = len(prefix)
    for j in np.lexsort((first, -counts)):
        ids = seqs[j]
        if skip.intersection(ids):
            continue
        word = tokens[ids[0]] + "".join(tokens[i][k:] for i in ids[1:])
        if len(word) <= max_chars:
            out.append((word, ids, int(counts[j])))
            if len(out) == n:
                break
    return out


def retokenize(
    sample: Sequence[np.ndarray],
    tokens: Sequence[str],
    tokenizer: Any,
    lines: Sequence[str],
    *,
    prefix: str = "##",
    unk_id: int | None = None,
) -> list[np.ndarray]:
    """The sample as ``tokenizer`` (the teacher's WordPiece tokenizer with words appended by
    :func:`extend_wordpiece`) tokenizes its ``lines``, from the teacher's ids, without
    tokenizing the lines again.

    WordPiece tokenizes each pre-tokenized word alone, and a word's text is its pieces joined
    (prefix removed). A word of one piece is in the vocabulary whole and stays one piece; a word
    of several pieces is tokenized again by the new WordPiece model, once per distinct word.
    Only the lines holding ``unk_id`` (whose text the ids do not give back) are tokenized again
    in full. The result equals ``tokenizer.encode_batch(lines)`` (tested).

    Parameters
    ----------
    sample : sequence of int arrays
        The teacher's ids of ``lines`` (no special tokens).
    tokens : sequence of str
        The teacher's token string of each id.
    tokenizer : tokenizers.Tokenizer
        The extended tokenizer (same normaliser, pre-tokenizer and added tokens).
    lines : sequence of str
    prefix : str, default "##"
    unk_id : int, optional

    Returns
    -------
    list of ndarray of int64
    """
    cont = _continuation(tokens, prefix)
    k = len(prefix)
    flat, bounds = flatten_sample(sample)
    starts, lengths = _word_spans(flat, bounds, cont)
    seqs, _, _, which = _unique_spans(flat, starts, lengths)
    model = tokenizer.model
    new_of: dict[int, list[int]] = {}
    for j, ids in enumerate(seqs):
        if unk_id is not None and unk_id in ids:
            continue  # the line is tokenized again below
        text = tokens[ids[0]] + "".join(tokens[i][k:] for i in ids[1:])
        new = [t.id for t in model.tokenize(text)]
        if new != list(ids):
            new_of[j] = new
    is_changed = np.zeros(len(seqs), dtype=bool)
    is_changed[list(new_of)] = True
    changed = is_changed[which]
    c_starts, c_lengths, c_which = starts[changed], lengths[changed], which[changed]
    # positions inside a changed span: +1 at its start, -1 after its end, running sum
    edges = np.bincount(c_starts, minlength=len(flat) + 1) - np.bincount(
        c_starts + c_lengths, minlength=len(flat) + 1
    )
    dropped = np.cumsum(edges[:-1]) > 0
    arrays = {j: np.asarray(v, dtype=np.int64) for j, v in new_of.items()}
    values = [arrays[int(j)] for j in c_which]
    n_new = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
    removed_before = np.concatenate([[0], np.cumsum(dropped)])[c_starts]
    out_flat = np.insert(
        flat[~dropped],
        np.repeat(c_starts - removed_before, n_new),
        np.concatenate(values) if values else np.zeros(0, np.int64),
    )
    sent = np.searchsorted(bounds, c_starts, side="right") - 1
    delta = np.bincount(sent, weights=n_new - c_lengths, minlength=len(sample)).astype(np.int64)
    new_bounds = np.zeros_like(bounds)
    np.cumsum(np.diff(bounds) + delta, out=new_bounds[1:])
    out = np.split(out_flat, new_bounds[1:-1]) if len(sample) else []
    redo = np.zeros(len(sample), dtype=bool)
    if unk_id is not None:
        redo[np.searchsorted(bounds, np.flatnonzero(flat == unk_id), side="right") - 1] = True
    # a line starting with a continuation piece is not the tokenizer's (never, but be exact)
    nonempty = np.diff(bounds) > 0
    redo[np.flatnonzero(nonempty)[cont[flat[bounds[:-1][nonempty]]]]] = True
    again = np.flatnonzero(redo).tolist()
    if len(again):
        enc = tokenizer.encode_batch_fast([lines[i] for i in again], add_special_tokens=False)
        for i, e in zip(again, enc, strict=True):
            out[i] = np.asarray(e.ids, dtype=np.int64)
    return out


def extend_wordpiece(tokenizer_json: dict[str, Any], words: Sequence[str]) -> dict[str, Any]:
    """A copy of a WordPiece ``tokenizers`` JSON with ``words`` appended to its vocabulary.

    New ids follow the largest existing one, in the order given.

    Raises
    ------
    ValueError
        Not a WordPiece model, or a word already in the vocabulary.
    """
    out = json.loads(json.dumps(tokenizer_json))
    model = out.get("model", {})
    if model.get("type") != "WordPiece":
        raise ValueError(
            f"--vocabulary corpus needs a WordPiece tokenizer (BERT family); this teacher's is "
            f"{model.get('type')!r}"
        )
    vocab = model["vocab"]
    nxt = max(vocab.values()) + 1
    for added in out.get("added_tokens") or []:
        nxt = max(nxt, int(added["id"]) + 1)
    for w in words:
        if w in vocab:
            raise ValueError(f"{w!r} is already in the vocabulary")
        vocab[w] = nxt
        nxt += 1
    return out


def corpus_bigrams(
    sample: Sequence[np.ndarray], n: int, *, exclude: Sequence[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` most frequent adjacent token pairs of the sample.

    Parameters
    ----------
    sample : sequence of int arrays
    n : int
    exclude : sequence of int
        Pairs holding one of these ids are not counted (the unknown token).

    Returns
    -------
    pairs : ndarray of shape (m, 2), int64, m <= n, most frequent first (ties: smaller ids first)
    counts : ndarray of shape (m,), int64
    """
    seqs = [np.asarray(s, dtype=np.int64) for s in sample if len(s) > 1]
    if not seqs or n < 1:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64)
    a = np.concatenate([s[:-1] for s in seqs])
    b = np.concatenate([s[1:] for s in seqs])
    ok = ~(np.isin(a, exclude) | np.isin(b, exclude))
    pairs, counts = np.unique(np.stack([a[ok], b[ok]], axis=1), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -counts))[:n]
    return pairs[order], counts[order].astype(np.int64)


def with_bigram_rows(
    sample: Sequence[np.ndarray], pairs: np.ndarray, n_tokens: int
) -> list[np.ndarray]:
    """Each sentence's token ids followed by the rows of its listed bigrams (``n_tokens + j``
    for pair ``j``): the rows :class:`BigramStaticEncoder` averages."""
    index = {int(p) * n_tokens + int(q): n_tokens + j for j, (p, q) in enumerate(pairs)}
    out = []
    for s in sample:
        s = np.asarray(s, dtype=np.int64)
        keys = s[:-1] * n_tokens + s[1:]
        extra = [index[k] for k in keys.tolist() if k in index]
        out.append(np.concatenate([s, np.asarray(extra, dtype=np.int64)]) if extra else s)
    return out


@dataclass
class RowPlan:
    """The rows of a distilled model: what each one feeds the teacher, and the corpus sample
    in row ids.

    Attributes
    ----------
    pieces : list of list of int
        Teacher token ids of each row (one id for a teacher token; a word's or a bigram's
        pieces for the extra rows).
    keep : ndarray of bool
        Rows the teacher computes (False: ``[unusedN]``, written as zeros).
    tokenizer_json : dict
        The static model's tokenizer (the teacher's, plus the corpus words).
    n_tokens : int
        Token rows (teacher vocabulary + corpus words); the bigram rows follow.
    sample : list of int arrays or None
        Each sample sentence's rows (tokens, then its listed bigrams), for the whitening.
    words : list of (word, pieces, count)
    pairs : ndarray of shape (n_bigrams, 2), int64
    pair_counts : ndarray of shape (n_bigrams,), int64
    sample_tokens : int
        Tokens in the sample (for the bigram probabilities).
    """

    pieces: list[list[int]]
    keep: np.ndarray
    tokenizer_json: dict[str, Any]
    n_tokens: int
    sample: list[np.ndarray] | None
    words: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    pair_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sample_tokens: int = 0

    @property
    def bigram_p(self) -> np.ndarray | None:
        """Sample probability of each bigram row (count / sample tokens), None without any."""
        if not len(self.pairs):
            return None
        return self.pair_counts / max(1, self.sample_tokens)


def plan_rows(
    tokenizer_json: dict[str, Any],
    tokens: Sequence[str],
    keep: np.ndarray,
    sample: Sequence[np.ndarray] | None,
    lines: Sequence[str],
    *,
    n_words: int = 0,
    n_bigrams: int = 0,
    unk_id: int | None = None,
) -> RowPlan:
    """Teacher tokens, then the ``n_words`` corpus words, then the ``n_bigrams`` bigrams.

    Words come from the sample (:func:`corpus_words`), are added to the WordPiece vocabulary
    (:func:`extend_wordpiece`) and the sample is mapped to it (:func:`retokenize`); bigrams
    are then counted on that (:func:`corpus_bigrams`, pairs with the unknown token or a row not
    kept left out) and appended to each sentence's rows (:func:`with_bigram_rows`).

    Parameters
    ----------
    tokenizer_json : dict
        The teacher's ``tokenizers`` JSON (truncation and padding off).
    tokens : sequence of str
        Token string of each teacher id.
    keep : ndarray of bool, shape (len(tokens),)
    sample : sequence of int arrays, optional
        Teacher token ids of the corpus sample.
    lines : sequence of str
        The sample's text (needed with ``n_words``).
    n_words, n_bigrams : int
    unk_id : int, optional

    Returns
    -------
    RowPlan

    Raises
    ------
    ValueError
        Words or bigrams without a sample (or words without its text); a tokenizer that is
        not WordPiece with ``n_words``.
    """
    from tokenizers import Tokenizer

    V = len(tokens)
    plan = RowPlan(
        pieces=[[i] for i in range(V)],
        keep=np.asarray(keep, dtype=bool),
        tokenizer_json=tokenizer_json,
        n_tokens=V,
        sample=None if sample is None else list(sample),
    )
    unk = [] if unk_id is None else [int(unk_id)]
    if n_words:
        if sample is None or len(lines) != len(sample):
            raise ValueError("a corpus vocabulary needs the corpus sample and its text")
        prefix = tokenizer_json.get("model", {}).get("continuing_subword_prefix") or "##"
        plan.words = corpus_words(sample, tokens, n_words, prefix=prefix, skip_ids=unk)
        plan.tokenizer_json = extend_wordpiece(tokenizer_json, [w for w, _, _ in plan.words])
        plan.pieces += [list(ids) for _, ids, _ in plan.words]
        plan.keep = np.concatenate([plan.keep, np.ones(len(plan.words), dtype=bool)])
        new = Tokenizer.from_str(json.dumps(plan.tokenizer_json))
        plan.sample = retokenize(sample, tokens, new, lines, prefix=prefix, unk_id=unk_id)
        plan.n_tokens = len(plan.pieces)
    if n_bigrams:
        if plan.sample is None:
            raise ValueError("bigrams need a corpus sample")
        excl = unk + [int(i) for i in np.flatnonzero(~plan.keep)]
        plan.pairs, plan.pair_counts = corpus_bigrams(plan.sample, n_bigrams, exclude=excl)
        plan.pieces += [plan.pieces[a] + plan.pieces[b] for a, b in plan.pairs]
        plan.keep = np.concatenate([plan.keep, np.ones(len(plan.pairs), dtype=bool)])
        plan.sample_tokens = sum(len(s) for s in plan.sample)
        plan.sample = with_bigram_rows(plan.sample, plan.pairs, plan.n_tokens)
    return plan
