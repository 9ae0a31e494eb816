"""The compiled Moses tokenizer against its oracles: sacremoses run here, and the tokenized
reference corpus (made by sacremoses, ``shared/data/MANIFEST.md``).

* The shipped corpus sample (``src/sentvec/data/corpus``, the first 10,000 lines of the 1M
  corpus: all the package ships) against ``tests/data/sent2vec-reference/train-sample.txt``, the
  same 10,000 lines of the ``.tok.lower`` twin: no sacremoses run needed, so every line is
  compared.
* The shipped STS raw files (STS12-16, STS-B, SICK): every distinct field with a non-ASCII
  character, a run of dots or a control character (the rarely exercised rules), and a seeded
  sample of 1,500 others, against sacremoses in this test (sacremoses tokenizes a few thousand
  lines a second; ``bench/moses_identity.py`` compares all 62,239 fields and the whole 1M corpus).
* Hand-made edge cases of every rule, the character classes against sacremoses' own regex
  classes on all code points, and the fallback.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from sentvec._data import PACKAGE_DATA_DIR
from sentvec.sent2vec.moses import MosesTokenizer, sacremoses_tokens

pytest.importorskip("sacremoses")

REFERENCE = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt"


@pytest.fixture(autouse=True, scope="module")
def _private_table_cache(tmp_path_factory):
    """The class tables (1.1 MB) are cached under this module's own directory, never in the
    user's ``~/.cache/sentvec``; the in-process copy is dropped before and after."""
    import sentvec.sent2vec.moses as mod

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SENTVEC_CACHE", str(tmp_path_factory.mktemp("moses-cache")))
        mod._tables.cache_clear()
        yield
        mod._tables.cache_clear()


SAMPLE = PACKAGE_DATA_DIR / "corpus" / "enwiki-2015-sentences-sample10k.txt"

EDGE_CASES = [
    "",
    "   ",
    "\x01\x02",
    "  \x01 \t tab\x02x \x0b\x0c\x1c end  ",
    "a\u00a0b\u2003c\u3000d\u2028e\x85f",
    'He said "hi"... ok..',
    "It's John's 1990's cat.'",
    "x.'",
    "'quoted' and ''double'' and `back` ``ticks''",
    "Mr. Smith vs. e.g. No. 5 and No. x and pp. 12 and Art. b",
    "U.S. a.b. A. Inc. etc. St. Louis. No. Pp. 4.",
    "end with No.",
    "a,,b 5,000, 3, x,5 5,x ,a, 7,",
    ",",
    "DOTMULTI x DOTDOTMULTI. DOTDOTDOTMULTIx DDOTMULTI DOTMULT",
    "x .. y ... z.... .. ...",
    "..",
    "a..b..",
    "Σ ΣΑΣ. İstanbul. ǅemal ẞ",
    "l'amour's 'tis rock'n'roll 'em 'Tis o'clock 90's 5'sx '5",
    "(a) [b] {c} <d> @e #f $g %h &i *j +k =l |m ~n ^o",
    "don't can't won't cannot gonna 'twas y'all",
    "e-mail - -- --- self-made",
    "half ½ ² ³ ٣ 三 numbers ³,4 ½,½",
    "हिन्दी क़ ಕನ್ನಡ",
    "emoji 😀 and \U0001f600, surrogate \udcff!",
    "tab\there\nnewline\rcarriage",
    "a " * 200 + ".",
    "." * 50,
    "'" * 7 + "s",
]


def _reference(lines, lowercase=True):
    return [" ".join(sacremoses_tokens(s.strip(), lowercase=lowercase)) for s in lines]


@pytest.fixture(scope="module")
def moses():
    tok = MosesTokenizer(lowercase=True, num_threads=2)
    assert tok.compiled
    return tok


def test_shipped_corpus_sample_equals_the_tokenized_reference(moses):
    raw = SAMPLE.read_text(encoding="utf-8").split("\n")[:-1]
    want = REFERENCE.read_text(encoding="utf-8").split("\n")[:-1]
    assert len(raw) == len(want) == 10_000
    before = moses.n_fallback
    got = moses.tokenize_lines(raw)
    bad = [(r, g, w) for r, g, w in zip(raw, got, want, strict=True) if g != w]
    assert bad == []
    assert moses.n_fallback == before  # all by the kernel


def _sts_fields() -> list[str]:
    fields: set[str] = set()
    for p in sorted((PACKAGE_DATA_DIR / "raw").rglob("*")):
        if p.is_file() and ("input" in p.name or p.suffix == ".csv" or p.name.startswith("SICK")):
            for line in p.read_text(encoding="utf-8").split("\n"):
                fields.update(line.split("\t"))
    return sorted(fields)


def test_sts_raw_fields_equal_sacremoses(moses):
    fields = _sts_fields()
    assert len(fields) > 50_000
    rare = [f for f in fields if re.search(r"[^\x20-\x7e]|\.\.", f)]
    others = sorted(set(fields) - set(rare))
    chosen = rare + random.Random(0).sample(others, 1500)
    assert len(rare) > 500
    got = moses.tokenize_lines(chosen)
    want = _reference(chosen)
    assert [(f, g, w) for f, g, w in zip(chosen, got, want, strict=True) if g != w] == []


@pytest.mark.parametrize("lowercase", [False, True])
def test_edge_cases_equal_sacremoses(lowercase):
    tok = MosesTokenizer(lowercase=lowercase, num_threads=1)
    got = tok.tokenize_lines(EDGE_CASES)
    want = _reference(EDGE_CASES, lowercase)
    assert list(zip(EDGE_CASES, got, strict=True)) == list(zip(EDGE_CASES, want, strict=True))
    assert tok.n_fallback == 0 and tok.n_lines == len(EDGE_CASES)
    # one line at a time: the same tokens
    for line, w in zip(EDGE_CASES, want, strict=True):
        assert tok.tokenize(line) == (w.split(" ") if w else [])


def test_two_threads_give_the_one_thread_result():
    lines = SAMPLE.read_text(encoding="utf-8").split("\n")[:6000]
    one = MosesTokenizer(num_threads=1).tokenize_text(lines)
    two = MosesTokenizer(num_threads=2).tokenize_text(lines)
    assert one == two and one[1] == []


def test_character_classes_are_sacremoses_own():
    from sacremoses import MosesTokenizer as Ref

    from sentvec.sent2vec import _moses as k
    from sentvec.sent2vec.moses import _tables

    flags = _tables().flags
    every = "".join(map(chr, range(0x110000)))
    for chars, bit in (
        (Ref.IsAlnum, k.ALNUM),
        (Ref.IsAlpha, k.ALPHA),
        (Ref.IsN, k.NUMBER),
        (Ref.IsLower, k.LOWER),
    ):
        members = {ord(c) for c in re.findall(f"[{chars}]", every)}
        np.testing.assert_array_equal(
            np.flatnonzero(flags & bit), np.array(sorted(members), dtype=np.int64)
        )
    spaces = {ord(c) for c in re.findall(r"\s", every)}
    np.testing.assert_array_equal(np.flatnonzero(flags & k.SPACE), sorted(spaces))


def test_lines_the_kernel_leaves_go_to_sacremoses(monkeypatch):
    from sentvec.sent2vec import _moses as k

    real = k.tokenize_range

    def leave_odd_lines(data, offsets, start, stop, *rest):
        real(data, offsets, start, stop, *rest)
        out_len = rest[-1]
        out_len[start:stop:2] = -1  # as for a line that outgrew the scratch buffer

    monkeypatch.setattr(k, "tokenize_range", leave_odd_lines)
    tok = MosesTokenizer(lowercase=True, num_threads=1)
    got = tok.tokenize_lines(EDGE_CASES)
    assert got == _reference(EDGE_CASES)
    assert tok.n_fallback == (len(EDGE_CASES) + 1) // 2


def test_unverified_sacremoses_version_tokenizes_with_sacremoses(monkeypatch):
    import sentvec.sent2vec.moses as mod

    monkeypatch.setattr(mod, "sacremoses_version", lambda: "0.0.1")
    with pytest.warns(UserWarning, match="not a version the compiled"):
        tok = mod.MosesTokenizer(lowercase=True)
    assert not tok.compiled
    assert tok.tokenize_lines(EDGE_CASES[:8]) == _reference(EDGE_CASES[:8])
    assert tok.n_fallback == 8


def test_preprocessing_and_sent2vec_use_it(monkeypatch):
    from sentvec.sent2vec.preprocessing import Preprocessing

    prep = Preprocessing(lowercase=True, tokenizer="moses")
    lines = EDGE_CASES[5:15]
    assert prep.prepare_batch(lines) == _reference(lines)
    assert [prep.prepare(s) for s in lines] == _reference(lines)
    with pytest.raises(TypeError, match="must be str"):
        prep.prepare_batch(["a", 3])


def test_bad_threads():
    with pytest.raises(ValueError, match="num_threads"):
        MosesTokenizer(num_threads=0)


def test_a_damaged_table_cache_is_rebuilt(monkeypatch, tmp_path):
    import sentvec.sent2vec.moses as mod

    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path))
    mod._tables.cache_clear()
    try:
        first = mod._tables()
        (npy,) = (tmp_path / "moses").glob("*.npy")
        good = first.flags.copy()
        damaged = good.copy()
        damaged[ord("a")] = 0  # 'a' no longer alphanumeric: would change tokens silently
        np.save(npy, damaged)
        mod._tables.cache_clear()
        np.testing.assert_array_equal(mod._tables().flags, good)
        npy.write_bytes(b"truncated")
        mod._tables.cache_clear()
        np.testing.assert_array_equal(mod._tables().flags, good)
        # a changed lower-case entry ('A' -> 'b') is caught by the digest too
        import json

        (meta,) = (tmp_path / "moses").glob("*.json")
        stored = json.loads(meta.read_text(encoding="utf-8"))
        pairs = stored["lower"]["to_one"]
        at = pairs[::2].index(ord("A"))
        pairs[2 * at + 1] = ord("b")
        meta.write_text(json.dumps(stored), encoding="utf-8")
        mod._tables.cache_clear()
        assert mod._tables().lower[ord("A")] == ord("a")
    finally:
        mod._tables.cache_clear()


def test_the_tables_are_cached_in_the_tests_own_directory():
    import os

    import sentvec.sent2vec.moses as mod

    mod._tables()
    root = Path(os.environ["SENTVEC_CACHE"])
    assert root.name.startswith("moses-cache") and list((root / "moses").glob("*.npy"))


# --- the UTF-8 path (bytes in, bytes out; what `sentvec tokenize` runs) ---


def _utf8_oracle(tok: MosesTokenizer, data: bytes) -> bytes:
    """The str path line by line: surrogateescape decoding, tokenize_lines, UTF-8 back."""
    lines = [raw.decode("utf-8", "surrogateescape") for raw in data.split(b"\n")]
    return b"".join(t.encode("utf-8", "surrogateescape") + b"\n" for t in tok.tokenize_lines(lines))


def _left_to_python(raw: bytes, lowercase: bool) -> bool:
    """Whether the UTF-8 path must leave a line to the str path: not valid UTF-8, or (when
    lower-casing) a character whose lower case is not one code point on its own."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return lowercase and any(c == "Σ" or len(c.lower()) != 1 for c in text)


def test_utf8_path_on_the_corpus_sample_equals_the_tokenized_reference(moses):
    data = SAMPLE.read_bytes()
    assert data.endswith(b"\n")
    before = moses.n_in_python
    got = moses.tokenize_utf8(data[:-1])
    assert got == REFERENCE.read_bytes()
    only_python = sum(_left_to_python(raw, True) for raw in data[:-1].split(b"\n"))
    assert 0 < only_python < 10  # the few with a capital sigma or a dotted capital I
    assert moses.n_in_python - before == only_python


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_utf8_path_equals_the_str_path(lowercase, threads):
    # the edge cases, lines only Python lower-cases (U+0130, U+03A3), a kept \r, and lines that
    # are not valid UTF-8 (overlong, surrogate, past U+10FFFF, truncated, stray continuation)
    odd = [
        b"caf\xe9 au lait",
        b"\xc0\xaf overlong / and \xe0\x80\xaf",
        b"\xed\xa0\x80 surrogate",
        b"\xf4\x90\x80\x80 too big, \xf5\x80\x80\x80",
        b"cut \xe2\x82",
        b"\x80 stray",
        b"\xf0\x9f\x98 truncated emoji, then \xf0\x9f\x98\x80 a whole one",
        "İstanbul'S ΣΟΦΟΣ. ΣΑΣ's".encode(),
        "Kelvin \u212a, Ⱥ and \u1e9e.".encode(),
        b"win\r",
        b"",
    ]
    data = b"\n".join([s.encode("utf-8", "surrogateescape") for s in EDGE_CASES] + odd)
    data = b"\n".join(
        [data] * (1 + 3000 * (threads - 1) // len(EDGE_CASES))
    )  # 2 threads: > 2,048 lines
    tok = MosesTokenizer(lowercase=lowercase, num_threads=threads)
    ref = MosesTokenizer(lowercase=lowercase, num_threads=1)
    assert tok.tokenize_utf8(data) == _utf8_oracle(ref, data)
    n = data.count(b"\n") + 1
    assert tok.n_lines == n and tok.n_fallback == 0
    assert tok.n_in_python == sum(_left_to_python(raw, lowercase) for raw in data.split(b"\n"))


def test_utf8_path_decodes_as_python_does_random_bytes():
    rng = random.Random(1)
    alphabet = [b"a", b" ", b".", b"'", b",", b"\x80", b"\xbf", b"\xc2", b"\xdf", b"\xe0", b"\xa0",
                b"\xed", b"\x9f", b"\xef", b"\xf0", b"\x90", b"\xf4", b"\x8f", b"\xff", b"\xc3\xa9",
                "Σ".encode(), "İ".encode()]  # fmt: skip
    lines = [b"".join(rng.choices(alphabet, k=rng.randrange(12))) for _ in range(3000)]
    data = b"\n".join(lines)
    tok = MosesTokenizer(lowercase=True, num_threads=2)
    assert tok.tokenize_utf8(data) == _utf8_oracle(MosesTokenizer(lowercase=True), data)
    assert tok.n_in_python == sum(_left_to_python(raw, True) for raw in lines) > 1000


def test_utf8_path_calls_decode_for_invalid_lines_only():
    seen = []

    def decode(raw, i):
        seen.append((i, raw))
        return raw.decode("latin-1")

    tok = MosesTokenizer(lowercase=True, num_threads=1)
    assert (
        tok.tokenize_utf8(b"ok\nCAF\xc9!\n" + "ΣΑΣ".encode(), decode)
        == "ok\ncafé !\nσας\n".encode()
    )
    assert seen == [(1, b"CAF\xc9!")]
    assert tok.tokenize_utf8(b"") == b"\n"  # one empty line
    assert tok.tokenize_utf8(b"a\n") == b"a\n\n"
    with pytest.raises(ValueError, match="nope"):
        tok.tokenize_utf8(b"\xff", lambda raw, i: (_ for _ in ()).throw(ValueError("nope")))


def test_utf8_path_with_an_unverified_sacremoses(monkeypatch):
    import sentvec.sent2vec.moses as mod

    monkeypatch.setattr(mod, "sacremoses_version", lambda: "0.0.1")
    with pytest.warns(UserWarning):
        tok = mod.MosesTokenizer(lowercase=True)
    data = "\n".join(EDGE_CASES[:8]).encode()
    assert tok.tokenize_utf8(data) == ("\n".join(_reference(EDGE_CASES[:8])) + "\n").encode()
    assert tok.n_in_python == tok.n_fallback == 8


def test_the_lower_table_is_str_lower_of_each_code_point():
    from sentvec.sent2vec import _moses_utf8 as k
    from sentvec.sent2vec.moses import _tables

    lower = _tables().lower
    for c in range(0x110000):
        low = chr(c).lower()
        if c == 0x3A3 or len(low) != 1:
            assert lower[c] == k.LOWER_IN_PYTHON, hex(c)
        else:
            assert lower[c] == ord(low), hex(c)


@pytest.mark.parametrize("lowercase", [False, True])
def test_tokenize_lines_takes_the_utf8_kernel_and_equals_sacremoses(monkeypatch, lowercase):
    """Lines without a newline or a lone surrogate go through the UTF-8 kernel in one block
    (lower-cased there); the others through the str path, with the same tokens."""
    from sentvec.sent2vec import _moses as k

    plain = [e for e in EDGE_CASES if "\n" not in e and e == e.encode("utf-8", "replace").decode()]
    lines = plain + ["İstanbul ΣΟΦΟΣ"]
    want = _reference(lines, lowercase)
    real = k.tokenize_range
    calls = []

    def counted(data, offsets, start, stop, *rest):
        calls.append(stop - start)
        return real(data, offsets, start, stop, *rest)

    monkeypatch.setattr(k, "tokenize_range", counted)
    tok = MosesTokenizer(lowercase=lowercase, num_threads=1)
    assert tok.tokenize_lines(lines) == want
    assert tok.n_lines == len(lines) and tok.n_fallback == 0
    left = sum(_left_to_python(line.encode(), lowercase) for line in lines)
    assert left == (2 if lowercase else 0)  # the U+0130 / U+03A3 lines, when lower-casing
    assert calls == ([left] if left else [])
    calls.clear()
    odd = lines + ["two\nlines", "lone \udcff surrogate"]
    assert tok.tokenize_lines(odd) == _reference(odd, lowercase)
    assert calls == [len(odd)]  # all through the str path
