"""Dictionary: official vocabulary order and counts, token rules, hashing, training tables.

Oracles: the dictionaries inside the official-binary reference files (parsed here with a minimal
independent reader), libstdc++'s own std::sort (compiled with g++ when available), Python
big-integer arithmetic for the hash, and hand-counted toy corpora.
"""

from __future__ import annotations

import lzma
import shutil
import struct
import subprocess
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from sentvec.sent2vec._stdsort import std_sort_order
from sentvec.sent2vec.dictionary import (
    EOS,
    PLACEHOLDER,
    Dictionary,
    bigram_rows,
    ngram_rows,
    split_tokens,
)

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
CORPUS = REF / "train-sample.txt"


def official_vocab(path: Path) -> tuple[list[str], np.ndarray, int]:
    """Words, counts and ntokens of an official .bin (independent minimal parser)."""
    b = path.read_bytes()
    off = 4 * 14 + 8  # signature + args header (12 int32 + float64)
    size, _, _, ntokens, _ = struct.unpack_from("<iiiqq", b, off)
    off += 28
    words, counts = [], []
    for _ in range(size):
        end = b.index(b"\x00", off)
        words.append(b[off:end].decode("utf-8"))
        counts.append(struct.unpack_from("<q", b, end + 1)[0])
        off = end + 10
    return words, np.array(counts), ntokens


@pytest.fixture(scope="module")
def dict_min2() -> Dictionary:
    return Dictionary.from_corpus(CORPUS, min_count=2)


@pytest.mark.parametrize("model", ["tiny-bigram.bin", "tiny-unigram.bin"])
def test_vocabulary_equals_official_min_count_2(dict_min2, model):
    words, counts, ntokens = official_vocab(REF / model)
    assert dict_min2.words == words  # same ids, ties included
    np.testing.assert_array_equal(dict_min2.counts, counts)
    assert dict_min2.ntokens == ntokens
    assert dict_min2.words[0] == PLACEHOLDER and dict_min2.counts[0] == 0
    assert dict_min2.placeholder_id == 0 and dict_min2.eos_id == words.index(EOS)


def test_vocabulary_equals_official_max_vocab():
    d = Dictionary.from_corpus(CORPUS, min_count=1, max_vocab_size=800)
    words, counts, ntokens = official_vocab(REF / "tiny-maxvocab.bin")
    assert d.nwords == 800
    assert d.words == words
    np.testing.assert_array_equal(d.counts, counts)
    assert d.ntokens == ntokens


def test_tie_order_is_not_first_occurrence(dict_min2):
    """The reference order of equal counts is std::sort's, not a stable sort's: the test above
    would fail with a stable sort."""
    first_seen: dict[str, int] = {}
    for tok in split_tokens(CORPUS.read_text(encoding="utf-8")):
        first_seen.setdefault(tok, len(first_seen))
    ranks = np.array([first_seen.get(w, -1) for w in dict_min2.words[1:]])
    counts = dict_min2.counts[1:]
    same = counts[1:] == counts[:-1]
    assert (ranks[1:][same] < ranks[:-1][same]).sum() > 100


def test_counts_and_ntokens_by_hand(tmp_path):
    # separators: space \t \r \v \f NUL; \xa0 is NOT one; newline adds </s>; last line has none
    text = b"a b\ta\r\n\n a\x0bb\x0cc\x00a \xc2\xa0x\nb a"
    f = tmp_path / "c.txt"
    f.write_bytes(text)
    d = Dictionary.from_corpus(f, min_count=1)
    expect = {"a": 5, "b": 3, EOS: 3, "c": 1, "\xa0x": 1}
    assert dict(zip(d.words[1:], d.counts[1:].tolist(), strict=True)) == expect
    assert d.ntokens == sum(expect.values())
    # descending count; 6 entries are below std::sort's threshold of 16, so it is a plain
    # insertion sort and ties keep first-occurrence order
    assert d.words == [PLACEHOLDER, "a", "b", EOS, "c", "\xa0x"]
    lines = Dictionary.from_corpus(["a b\ta\r", "", " a\x0bb\x0cc\x00a \xa0x", "b a"], min_count=1)
    # the iterable form ends every item with a newline: one more </s>
    assert lines.ntokens == d.ntokens + 1


def test_min_count_cut_and_labels():
    lines = ["x y __label__p", "x y z", "x __label__p __label__q"]
    d = Dictionary.from_corpus(lines, min_count=2, min_count_label=2)
    assert d.words == [PLACEHOLDER, "x", EOS, "y"]
    assert d.labels == ["__label__p"] and d.label_counts.tolist() == [2]
    assert d.get_id("__label__p") == -1 and d.get_id("z") == -1
    assert d.ntokens == 12
    with pytest.raises(ValueError, match="empty vocabulary"):
        Dictionary.from_corpus(["a b"], min_count=5)


def test_streams_compressed_file(tmp_path):
    raw = CORPUS.read_bytes()[:50_000]
    (tmp_path / "c.txt").write_bytes(raw)
    with lzma.open(tmp_path / "c.txt.xz", "wb") as fh:
        fh.write(raw)
    a = Dictionary.from_corpus(tmp_path / "c.txt", min_count=1)
    b = Dictionary.from_corpus(tmp_path / "c.txt.xz", min_count=1)
    assert a.words == b.words and np.array_equal(a.counts, b.counts)


@pytest.mark.parametrize(
    "kwargs", [{"min_count": -1}, {"min_count": 1.5}, {"word_ngrams": 0}, {"max_vocab_size": 0}]
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Dictionary.from_corpus(["a"], **kwargs)


def test_missing_corpus(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Dictionary.from_corpus(tmp_path / "nope.txt")


def test_ids_drop_oov_keep_repeats(dict_min2):
    the, city = dict_min2.get_id("the"), dict_min2.get_id("city")
    ids = dict_min2.ids(["the", "qqqzzz", "city", "the"])
    assert ids.dtype == np.int32 and ids.tolist() == [the, city, the]
    assert dict_min2.get_id("qqqzzz") == -1
    with pytest.raises(TypeError, match="single string"):
        dict_min2.ids("the city")


def test_bigram_hash_matches_big_integer_formula():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**31 - 1, 50)
    nwords, bucket = 123_457, 2_000_000
    expect = [nwords + (int(a) * 116049371 + int(b)) % bucket for a, b in pairwise(ids)]
    assert bigram_rows(ids, nwords, bucket).tolist() == expect
    # trigrams wrap around 2**64 like C++ uint64_t, in the official order (per start position)
    rows, mod = [], 2**64
    for i in range(len(ids)):
        h = int(ids[i])
        for j in range(i + 1, min(len(ids), i + 3)):
            h = (h * 116049371 + int(ids[j])) % mod
            rows.append(nwords + h % bucket)
    assert ngram_rows(ids, nwords, bucket, 3).tolist() == rows
    assert bigram_rows(ids[:1], nwords, bucket).shape == (0,)


def test_feature_rows_unigrams_then_bigrams(dict_min2):
    ids = dict_min2.ids("the city of london".split())
    rows = dict_min2.feature_rows(ids)
    assert rows[:4].tolist() == ids.tolist()
    assert rows[4:].tolist() == [
        dict_min2.nwords + (int(a) * 116049371 + int(b)) % 2_000_000 for a, b in pairwise(ids)
    ]


def test_keep_probabilities(dict_min2):
    t = 1e-4
    p = dict_min2.keep_probabilities(t)
    assert p.dtype == np.float32 and p.shape == (dict_min2.nwords,)
    f = dict_min2.counts[1:] / dict_min2.ntokens
    np.testing.assert_allclose(p[1:], np.sqrt(t / f) + t / f, rtol=1e-6)
    assert p[0] < 1e-6  # placeholder, counted as 10**18 when the official table is built
    with pytest.raises(ValueError, match="t="):
        dict_min2.keep_probabilities(0)


def test_negative_table(dict_min2):
    table = dict_min2.negative_table(1_000_000)
    assert table.dtype == np.int32
    per_word = np.bincount(table, minlength=dict_min2.nwords)
    roots = np.sqrt(dict_min2.counts.astype(np.float64))
    expect = roots * 1_000_000 / roots.sum()
    assert per_word[0] == 0  # placeholder never a negative
    assert np.all(np.abs(per_word - expect) <= 1.01)  # ceil of float32 arithmetic
    assert np.all(np.diff(table) >= 0)  # unshuffled, word order
    assert abs(table.shape[0] - 1_000_000) <= dict_min2.nwords


# ------------------------------------------------------------------ std::sort emulation
_CPP_SORT = r"""
#include <algorithm>
#include <cstdio>
#include <vector>
struct E { long long k, i; };
int main() { long long n;
  while (std::scanf("%lld", &n) == 1) { std::vector<E> v(n);
    for (long long i = 0; i < n; i++) { std::scanf("%lld", &v[i].k); v[i].i = i; }
    std::sort(v.begin(), v.end(), [](const E& a, const E& b) { return a.k < b.k; });
    for (auto& e : v) std::printf("%lld ", e.i);
    std::printf("\n"); } }
"""
# McIlroy's adversary: makes std::sort exhaust its depth budget (heap-sort fallback)
_CPP_ADVERSARY = r"""
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
static int gas, cand = -1, solid = 0; static std::vector<int> val;
int main(int argc, char** argv) { int n = std::atoi(argv[1]); gas = n; val.assign(n, gas);
  std::vector<int> p(n); for (int i = 0; i < n; i++) p[i] = i;
  std::sort(p.begin(), p.end(), [](int x, int y) {
    if (val[x] == gas && val[y] == gas) { if (x == cand) val[x] = solid++; else val[y] = solid++; }
    if (val[x] == gas) cand = x; else if (val[y] == gas) cand = y;
    return val[x] < val[y]; });
  for (int i = 0; i < n; i++) std::printf("%d ", val[i]); std::printf("\n"); }
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the libstdc++ oracle")
def test_std_sort_emulation_matches_libstdcxx(tmp_path):
    for name, src in (("sort", _CPP_SORT), ("adv", _CPP_ADVERSARY)):
        (tmp_path / f"{name}.cc").write_text(src)
        subprocess.run(
            ["g++", "-O1", "-o", str(tmp_path / name), str(tmp_path / f"{name}.cc")],
            check=True,
            capture_output=True,
        )
    rng = np.random.default_rng(7)
    cases = [
        rng.integers(0, hi, n)
        for n in (0, 1, 2, 3, 16, 17, 40, 1000, 6000)
        for hi in (1, 3, 50, 10**9)
    ]
    cases += [np.arange(300) % 5, np.arange(300)[::-1] // 4]
    for n in (200, 3000):
        adv = np.array(
            subprocess.run(
                [str(tmp_path / "adv"), str(n)], capture_output=True, text=True, check=True
            ).stdout.split(),
            dtype=np.int64,
        )
        cases += [adv, adv // 3]
    stdin = "".join(f"{len(c)} {' '.join(map(str, c))}\n" for c in cases)
    out = subprocess.run(
        [str(tmp_path / "sort")], input=stdin, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) == len(cases)
    for keys, line in zip(cases, out, strict=True):
        assert std_sort_order(keys).tolist() == [int(x) for x in line.split()]


@pytest.mark.parametrize("block_bytes", [2, 5, 1 << 20])
def test_line_blocks_drop_a_byte_order_mark_at_the_start_only(tmp_path, block_bytes):
    from sentvec.sent2vec.dictionary import iter_line_blocks

    f = tmp_path / "c.txt"
    f.write_bytes(b"\xef\xbb\xbfthe cat\n\xef\xbb\xbfdog\nend")
    assert b"".join(iter_line_blocks(f, block_bytes)) == b"the cat\n\xef\xbb\xbfdog\nend"
    f.write_bytes(b"ab")  # shorter than a BOM
    assert b"".join(iter_line_blocks(f, block_bytes)) == b"ab"
    # the first word is counted as "the", not "\ufeffthe"
    f.write_bytes(b"\xef\xbb\xbfthe the cat\n")
    d = Dictionary.from_corpus(f, min_count=1)
    assert "the" in d.words and not any(w.startswith("\ufeff") for w in d.words)
