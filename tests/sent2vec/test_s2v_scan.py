"""The trainer's one-pass vocabulary and id conversion equals the two-pass reference path.

The oracle is the Python reader (``Dictionary.from_corpus``, a ``collections.Counter`` over
``bytes.split``, checked against official vocabularies in test_s2v_dictionary.py) followed by
the text conversion (``convert_corpus``, which tokenizes the text a second time).
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

from sentvec.sent2vec import _scan
from sentvec.sent2vec.corpus import convert_corpus, count_and_convert
from sentvec.sent2vec.dictionary import Dictionary


def both(corpus, tmp_path, **kw):
    kw = {"min_count": 2, "bucket": 100, "word_ngrams": 2, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d_ref = Dictionary.from_corpus(corpus, min_count_label=0, **kw)
        ids_ref = convert_corpus(corpus, d_ref.words, d_ref.eos_id, directory=tmp_path)
        d, ids = count_and_convert(corpus, directory=tmp_path, **kw)
    return d_ref, ids_ref, d, ids


def assert_same(d_ref, ids_ref, d, ids):
    assert d.words == d_ref.words
    assert d.labels == d_ref.labels
    assert np.array_equal(d.counts, d_ref.counts)
    assert np.array_equal(d.label_counts, d_ref.label_counts)
    assert d.ntokens == d_ref.ntokens
    assert np.array_equal(np.asarray(ids.tokens), np.asarray(ids_ref.tokens))
    assert np.array_equal(ids.offsets, ids_ref.offsets)
    assert (ids.raw_tokens, ids.n_lines, ids.short_sentences) == (
        ids_ref.raw_tokens,
        ids_ref.n_lines,
        ids_ref.short_sentences,
    )


EDGE = (
    b"\xef\xbb\xbfa b c a\n\nb \x00 c\r\nd </s> a b a\n__label__x a b __label__x\n"
    b"<PLACEHOLDER> a b\n\xc3\xa9t\xe9 a \xc3\xa9t\xe9 b\x0b\x0ca\tb\n  \n"
    b"e e\n__label__y e e\n</s> a b c\nlast a b"
)


@pytest.mark.parametrize("min_count", [1, 2, 3])
def test_edge_cases_equal_the_two_pass_path(tmp_path, min_count):
    p = tmp_path / "edge.txt"
    p.write_bytes(EDGE)
    got = both(p, tmp_path, min_count=min_count)
    assert_same(*got)
    if min_count == 1:  # a literal <PLACEHOLDER> of the corpus is its own entry
        assert got[2].words.count("<PLACEHOLDER>") == 2


def test_literal_placeholder_below_min_count_maps_to_id_0(tmp_path):
    p = tmp_path / "ph.txt"
    p.write_bytes(b"a b <PLACEHOLDER> c\na b c\n" * 2 + b"a b c\n")
    d_ref, ids_ref, d, ids = both(p, tmp_path, min_count=3)
    assert d.words.count("<PLACEHOLDER>") == 1
    assert 0 in np.asarray(ids.tokens)
    assert_same(d_ref, ids_ref, d, ids)


def test_growth_of_tables_and_arena_and_max_vocab(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(90_000)] + ["x" * 70_000, "y" * 300]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(30_000)]
    lines += [" ".join(words[i : i + 50]) for i in range(0, len(words), 50)]
    p = tmp_path / "big.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_same(*both(p, tmp_path, min_count=1))
    assert_same(*both(p, tmp_path, min_count=2, max_vocab_size=5000))


def test_in_memory_lines_and_0xff_warning(tmp_path):
    lines = ["a b c", "b c \udcff d", "a a", "", "c b a"]
    assert_same(*both(lines, tmp_path, min_count=1))
    p = tmp_path / "ff.txt"
    p.write_bytes(b"a b\nc \xff d\na b\n")
    with pytest.warns(UserWarning, match="line 2 contains byte 0xFF"):
        count_and_convert(p, min_count=1, bucket=10, word_ngrams=2, directory=tmp_path)


def test_too_many_distinct_tokens_falls_back_to_the_pruning_reader(tmp_path, monkeypatch):
    p = tmp_path / "many.txt"
    p.write_text("".join(f"a b t{i} t{i % 7}\n" for i in range(300)), encoding="utf-8")
    monkeypatch.setattr(_scan, "MAX_VOCAB_SIZE", 40)  # pruning starts past 30 distinct tokens
    monkeypatch.setattr("sentvec.sent2vec.dictionary.MAX_VOCAB_SIZE", 40)
    with pytest.raises(_scan.TooManyTokens):
        import io

        _scan.scan_corpus(p, io.BytesIO())
    d_ref, ids_ref, d, ids = both(p, tmp_path, min_count=1)
    assert d.nwords < 300  # pruned on the fly, as the official reader does
    assert_same(d_ref, ids_ref, d, ids)
