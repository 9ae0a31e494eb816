"""Export to Model2Vec's format: a Sent2Vec unigram model (or a static model, with a fitted
post-processor folded into its rows) as a directory that ``model2vec.StaticModel`` and
sentence-transformers' ``StaticEmbedding`` load.

A Sent2Vec unigram vector is the mean of the input rows of the sentence's known words, split on
the official separators (space, ``\\t``, ``\\n``, ``\\r``, ``\\v``, ``\\f``, NUL), lower-cased
first when the model records it. The exported ``tokenizer.json`` reproduces that with the
``tokenizers`` library alone:

* normalizer: every separator becomes a space, a space is prepended, then ``Lowercase`` when
  the model lower-cases;
* pre-tokenizer: ``Split(" ", "merged_with_next")``, so each word arrives as ``" word"``;
* model: ``BPE`` without merges, ``ignore_merges=True`` and no unknown token, whose vocabulary
  is ``" " + word`` for every dictionary word: a known word is one token; an unknown word
  falls apart into characters that are not in the vocabulary and are dropped, so it adds
  nothing to the mean -- in Model2Vec and in ``StaticEmbedding`` alike, as in Sent2Vec.

Refused, with the reason: models with word n-grams (their hashed bigram rows depend on the
neighbouring word, which a token table cannot express) and Moses tokenization (sacremoses'
rules, not expressible as ``tokenizers`` normalizers; ``pretokenized=True`` exports the model
for text that is already Moses-tokenized instead). Known difference: ``str.lower`` turns a
word-final capital sigma into ``ς``, ``Lowercase`` into ``σ``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from sentvec.encoders.static import StaticEncoder

__all__ = ["sent2vec_static_encoder", "export_model2vec", "sent2vec_tokenizer", "SEPARATORS"]

#: Sent2Vec's token separators (sentvec's policy adds ``\n``), as a regex character class.
SEPARATORS = "[\t\n\r\x0b\x0c\x00]"


def sent2vec_tokenizer(words: list[str], *, lowercase: bool) -> Any:
    """A ``tokenizers.Tokenizer`` whose ids are positions in ``words``, unknown words dropped.

    Parameters
    ----------
    words : list of str
        The vocabulary; no word may hold a separator or be empty.
    lowercase : bool
        Lower-case the text first (``Lowercase`` normalizer).

    Raises
    ------
    ValueError
        An empty word, a word with a separator, or a repeated word.
    """
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    vocab: dict[str, int] = {}
    for i, w in enumerate(words):
        if not w or any(c in w for c in " \t\n\r\x0b\x0c\x00"):
            raise ValueError(f"word {i} ({w!r:.40}) is empty or holds a separator")
        if vocab.setdefault(" " + w, i) != i:
            raise ValueError(f"word {w!r:.40} appears twice")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], ignore_merges=True))
    steps = [normalizers.Replace(Regex(SEPARATORS), " "), normalizers.Prepend(" ")]
    if lowercase:
        steps.append(normalizers.Lowercase())
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_next")
    return tok


def sent2vec_static_encoder(model: Any, *, pretokenized: bool = False) -> StaticEncoder:
    """A :class:`StaticEncoder` giving a Sent2Vec unigram model's vectors.

    Every dictionary word but ``</s>`` (which Sent2Vec's ``encode`` ignores) keeps its input
    row; no truncation, no normalization.

    Parameters
    ----------
    model : sentvec.Sent2Vec
    pretokenized : bool, default False
        For a model that records Moses tokenization: export it for already tokenized text
        (its lower-casing is kept) instead of refusing.

    Raises
    ------
    ValueError
        A bigram (``word_ngrams > 1``) model, or Moses tokenization without ``pretokenized``.
    """
    d = model.dictionary
    if d.word_ngrams > 1:
        raise ValueError(
            f"the model uses word n-grams (word_ngrams={d.word_ngrams}): its sentence vectors add "
            "hashed n-gram rows that depend on the neighbouring word, which a per-token table "
            "cannot hold; export a unigram model (word_ngrams=1)"
        )
    prep = model.preprocessing
    if prep.tokenizer != "whitespace" and not pretokenized:
        raise ValueError(
            f"the model tokenizes with {prep.tokenizer!r} (sacremoses' rules), which the "
            "tokenizers library cannot express; tokenize text yourself and pass "
            "pretokenized=True (--pretokenized) to export it for tokenized input"
        )
    keep = [i for i in range(d.nwords) if i != d.eos_id]
    words = [d.words[i] for i in keep]
    rows = np.asarray(model.input_matrix[: d.nwords], dtype=np.float32)[keep]
    expects = "Moses-tokenized text" if prep.tokenizer != "whitespace" else "raw text"
    return StaticEncoder(
        rows,
        sent2vec_tokenizer(words, lowercase=prep.lowercase),
        normalize=False,
        drop_unknown=True,
        max_length=None,
        source=f"Sent2Vec {getattr(model, 'source', None) or ''}".strip() + f" ({expects})",
        config={"model_type": "model2vec", "architectures": ["StaticModel"], "input": expects},
    )


def _fold(encoder: StaticEncoder, post: Any) -> StaticEncoder:
    """The encoder with ``(x - mu) A`` applied to every row: the mean of the new rows is the
    post-processed mean, since the mean's weights sum to one."""
    from sentvec.integrations.sentence_transformers import affine_parameters

    if encoder.weights is not None:
        raise ValueError(
            "the encoder has per-token weights: its vector is not an average with weights "
            "summing to one, so the post-processor cannot be folded into its rows"
        )
    if encoder.normalize:
        raise ValueError(
            "the encoder normalizes its vectors before the post-processor, which is then not "
            "affine in the rows; export the encoder alone"
        )
    mu, A = affine_parameters(post)
    E = encoder.embeddings.astype(np.float64)
    if mu is not None:
        E = E - mu
    folded = StaticEncoder(
        (E @ A).astype(np.float32),
        encoder.tokenizer,
        token_mapping=encoder.token_mapping,
        normalize=False,
        drop_unknown=encoder.drop_unknown,
        max_length=encoder.max_length,
        max_chars=encoder.max_chars,
        source=f"{encoder.source} + {type(post).__name__}",
        config=encoder.config,
    )
    return folded


def export_model2vec(
    model: Any, path: str | os.PathLike[str], *, pretokenized: bool = False
) -> Path:
    """Write ``model`` as a Model2Vec directory (see the module docstring).

    Parameters
    ----------
    model : Sent2Vec, StaticEncoder, or Pipeline of one of these and a fitted Whitening /
        AllButTheTop / CommonComponentRemoval (folded into the rows; sentences without a known
        token stay zero vectors, as in the pipeline)
    path : path-like
        A new or empty directory, or an earlier Model2Vec directory (replaced whole).
    pretokenized : bool, default False
        See :func:`sent2vec_static_encoder`.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    TypeError
        Another kind of model.
    ValueError
        See :func:`sent2vec_static_encoder` and the folding conditions (no per-token weights,
        no normalization before the post-processor).
    """
    from sentvec.encoders.pipeline import Pipeline
    from sentvec.sent2vec.model import Sent2Vec

    post = None
    if isinstance(model, Pipeline):
        model, post = model.encoder, model.whitening
    if isinstance(model, Sent2Vec):
        encoder = sent2vec_static_encoder(model, pretokenized=pretokenized)
    elif isinstance(model, StaticEncoder):
        encoder = model
    else:
        raise TypeError(
            f"cannot export a {type(model).__name__} to Model2Vec: give a Sent2Vec unigram "
            "model, a static model, or a pipeline of one with a linear post-processor"
        )
    if post is not None:
        encoder = _fold(encoder, post)
    encoder.save(path)
    return Path(path)
