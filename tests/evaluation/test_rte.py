"""RTE by a cosine threshold (WhiteningBERT Table 3): the reader and ``sentvec eval-rte``.

The command's accuracy is checked against an independent recomputation: the dev file read with
``csv`` here, the text Moses-tokenised and lower-cased with sacremoses here, the encoder's own
``encode`` vectors, whitening written out from Eq. 1 in numpy (mean, scatter, ``eigh``,
``(E - mu) U D^-1/2``), cosine, ``cosine > threshold``. The tiny official Sent2Vec model keeps
every run to a few seconds.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from sentvec._data import PACKAGE_DATA_DIR
from sentvec.cli import main
from sentvec.evaluation import RTE_DEV_PAIRS, evaluate_rte, load_rte, score_rte

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
TINY = REF / "tiny-bigram.bin"
DEV = PACKAGE_DATA_DIR / "downstream" / "RTE" / "dev.tsv"
HEADER = "sentence1\tsentence2\tlabel\tidx\n"


# ------------------------------------------------------------------ the independent oracle
def _dev_rows() -> tuple[list[str], list[str], np.ndarray]:
    with open(DEV, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    ent = np.array([r["label"] == "0" for r in rows])  # GLUE: 0 = entailment
    return [r["sentence1"] for r in rows], [r["sentence2"] for r in rows], ent


def _moses_lower(sentences: list[str]) -> list[str]:
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang="en")
    return [" ".join(tok.tokenize(s.strip(), escape=False)).lower() for s in sentences]


def _whiten_eq1(E: np.ndarray) -> np.ndarray:
    """WhiteningBERT Eq. 1 on the rows of E; numerically zero directions (<= 1e-10 x the
    largest eigenvalue) dropped, as sentvec documents."""
    mu = E.mean(axis=0)
    C = (E - mu).T @ (E - mu)
    D, U = np.linalg.eigh(C)
    keep = D > 1e-10 * D.max()
    return (E - mu) @ (U[:, keep] / np.sqrt(D[keep]))


def _oracle(A: np.ndarray, B: np.ndarray, ent: np.ndarray, whiten: bool, t: float):
    A, B = A.astype(np.float64), B.astype(np.float64)
    if whiten:
        Z = _whiten_eq1(np.vstack([A, B]))
        A, B = Z[: len(A)], Z[len(A) :]
    cos = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    pred = cos > t
    return int((pred == ent).sum()), 100.0 * pred.mean(), cos


# ------------------------------------------------------------------ reader
def test_packaged_dev_set_reads_quoted_rows():
    data = load_rte()
    assert (data.n_pairs, data.n_entailment) == (RTE_DEV_PAIRS, 146)
    assert list(data.idx) == list(range(277))
    s1, s2, ent = _dev_rows()
    assert list(data.sentence1) == s1 and list(data.sentence2) == s2
    assert (data.entailment == ent).all()
    # idx 3 is quoted in the file: the quotes that wrap it are gone, the ones inside it kept
    assert data.sentence1[3].startswith("The Amish community in Pennsylvania")
    assert '"If someone snaps and wants to do something stupid' in data.sentence1[3]
    assert not data.entailment[3]  # label 1 = not_entailment
    assert data.entailment[1] and not data.entailment[0]


def _write(tmp_path: Path, text: str | bytes, name: str = "rte.tsv") -> Path:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def test_reader_on_quoted_fields_and_crlf(tmp_path):
    p = _write(
        tmp_path,
        HEADER.replace("\n", "\r\n")
        + '"He said ""no"" twice."\tHe refused.\t0\t7\r\n'
        + 'A plain one.\t"A ""quoted"" hypothesis."\t1\t8\r\n'
        + "\r\n",  # a trailing blank line is not a pair
    )
    data = load_rte(p)
    assert data.sentence1 == ('He said "no" twice.', "A plain one.")
    assert data.sentence2 == ("He refused.", 'A "quoted" hypothesis.')
    assert data.entailment.tolist() == [True, False]
    assert data.idx.tolist() == [7, 8]


@pytest.mark.parametrize(
    "body, line, message",
    [
        ('"closed" then text\tb\t0\t0\n', "line 2", "malformed CSV quoting"),
        ('"never closed\tb\t0\t0\nc\td\t1\t1\n', "line 3", "malformed CSV quoting"),
        ("a\tb\t0\t0\nc\td\t1\n", "line 3", "expected 4 tab-separated fields"),
        ("a\tb\t0\t0\nc\td\tentailment\t1\n", "line 3", "label 'entailment' is not 0"),
        ("a\tb\t0\t0\nc\td\t1\t0\n", "line 3", "idx 0 repeats the pair of line 2"),
        ("a\t \t0\t0\n", "line 2", "empty sentence"),
        ("a\tb\t0\tx\n", "line 2", "idx 'x' is not an integer"),
    ],
)
def test_reader_malformed_rows_name_file_and_line(tmp_path, body, line, message):
    p = _write(tmp_path, HEADER + body)
    with pytest.raises(ValueError, match=message) as err:
        load_rte(p)
    assert str(p) in str(err.value) and line in str(err.value)


def test_reader_bad_header_encoding_and_size(tmp_path):
    with pytest.raises(ValueError, match=r"line 1: expected the header"):
        load_rte(_write(tmp_path, "premise\thypothesis\tlabel\tidx\na\tb\t0\t0\n"))
    with pytest.raises(ValueError, match=r"line 3: byte 0xE9 is not valid UTF-8"):
        load_rte(_write(tmp_path, HEADER.encode() + b"a\tb\t0\t0\ncaf\xe9\td\t1\t1\n"))
    with pytest.raises(FileNotFoundError, match="RTE data file not found"):
        load_rte(tmp_path / "missing.tsv")
    # the development set of a data root must be the whole GLUE set
    (tmp_path / "downstream" / "RTE").mkdir(parents=True)
    (tmp_path / "downstream" / "RTE" / "dev.tsv").write_text(
        HEADER + "a\tb\t0\t0\nc\td\t1\t1\n", encoding="utf-8"
    )
    with pytest.raises(ValueError, match=r"2 pairs, 1 entailment; .* has 277, 146"):
        load_rte(data_dir=tmp_path)


# ------------------------------------------------------------------ the command vs numpy
@pytest.fixture(scope="module")
def tiny_vectors():
    from sentvec import Sent2Vec

    s1, s2, ent = _dev_rows()
    model = Sent2Vec.load(TINY)
    return model.encode(_moses_lower(s1)), model.encode(_moses_lower(s2)), ent


@pytest.mark.parametrize("whiten, threshold", [("task", "0.5"), ("none", "0.5"), ("task", "0.1")])
def test_cli_accuracy_equals_numpy_recomputation(tmp_path, capsys, tiny_vectors, whiten, threshold):
    out = tmp_path / "rte.json"
    args = ["eval-rte", "--model", str(TINY), "--whiten", whiten, "--threshold", threshold]
    assert main([*args, "--json", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    res = json.loads(out.read_text(encoding="utf-8"))
    A, B, ent = tiny_vectors
    n_correct, share, cos = _oracle(A, B, ent, whiten == "task", float(threshold))
    assert res["n_correct"] == n_correct
    assert res["accuracy"] == pytest.approx(100.0 * n_correct / 277, abs=1e-12)
    assert res["predicted_entailment"] == pytest.approx(share, abs=1e-12)
    assert np.allclose(res["cosines"], cos, atol=1e-9)
    assert f"accuracy: {100.0 * n_correct / 277:.1f} ({n_correct}/277 right)" in printed
    assert res["majority_accuracy"] == pytest.approx(100 * 146 / 277)
    assert res["config"]["whiten"] == whiten and res["config"]["variant"] == "senteval"
    assert res["whitening"]["mode"] == whiten
    assert res["whitening"]["fit_size"] == (554 if whiten == "task" else None)
    # the curve: every grid threshold re-scored from the oracle's cosines
    for point in res["curve"]:
        acc = 100.0 * ((cos > point["threshold"]) == ent).mean()
        assert point["accuracy"] == pytest.approx(acc, abs=1e-9)
    assert len(res["curve"]) == 21 and res["curve"][0]["threshold"] == -1.0
    # below every cosine, everything is entailment: the majority baseline
    assert res["curve"][0]["predicted_entailment"] == 100.0


def test_api_two_layer_minilm_matches_numpy(tmp_path, tiny_minilm):
    """evaluate_rte on 40 short dev pairs, whitening fitted on both sides, k = 16."""
    s1, s2, ent = _dev_rows()
    short = sorted(range(len(s1)), key=lambda i: len(s1[i]) + len(s2[i]))[:40]
    p = tmp_path / "short.tsv"
    with open(p, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(["sentence1", "sentence2", "label", "idx"])
        w.writerows([s1[i], s2[i], 0 if ent[i] else 1, i] for i in short)
    r = evaluate_rte(tiny_minilm, p, variant="raw", n_components=16, threshold=0.2)
    A = tiny_minilm.encode([s1[i] for i in short]).astype(np.float64)
    B = tiny_minilm.encode([s2[i] for i in short]).astype(np.float64)
    E = np.vstack([A, B])
    mu = E.mean(axis=0)
    D, U = np.linalg.eigh((E - mu).T @ (E - mu))
    top = np.argsort(D)[::-1][:16]
    Z = (E - mu) @ (U[:, top] / np.sqrt(D[top]))
    n_correct, share, cos = _oracle(Z[:40], Z[40:], ent[short], False, 0.2)
    assert (r.n_correct, r.predicted_entailment) == (n_correct, pytest.approx(share))
    assert np.allclose(r.cosines, cos, atol=1e-6)
    assert r.whitening.mode == "task" and r.whitening.fit_size == 80
    assert r.metadata["layer_indices"] == [1, 2] and r.metadata["text_variant"] == "raw"


def test_cli_saved_whitening_and_corpus_file(tmp_path, tiny_vectors):
    from sentvec import Whitening

    A, B, ent = tiny_vectors
    corpus = PACKAGE_DATA_DIR / "corpus" / "enwiki-2015-sentences-sample10k.txt"
    lines = corpus.read_text(encoding="utf-8").splitlines()[:500]
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from sentvec import Sent2Vec

    fitted = Whitening().fit(Sent2Vec.load(TINY).encode(lines))
    fitted.save(tmp_path / "w")
    for whiten, mode in (("w", "fitted"), ("corpus.txt", "corpus")):
        out = tmp_path / f"{mode}.json"
        argv = ["eval-rte", "--model", str(TINY), "--whiten", str(tmp_path / whiten)]
        assert main([*argv, "--json", str(out), "--no-progress"]) == 0
        res = json.loads(out.read_text(encoding="utf-8"))
        assert res["whitening"]["mode"] == mode
        Z1 = (A.astype(np.float64) - fitted.mean_) @ fitted.whitening_matrix_
        Z2 = (B.astype(np.float64) - fitted.mean_) @ fitted.whitening_matrix_
        n_correct, _, _ = _oracle(Z1, Z2, ent, False, 0.5)
        assert res["n_correct"] == n_correct


def test_cli_checks_outputs_before_any_work(tmp_path, capsys, monkeypatch):
    import sentvec.encoders
    import sentvec.evaluation

    def boom(*a, **k):
        raise AssertionError("loaded or evaluated despite a bad option")

    monkeypatch.setattr(sentvec.encoders, "load_encoder", boom)
    monkeypatch.setattr(sentvec.evaluation, "evaluate_rte", boom)
    corpus = _write(tmp_path, "one sentence\nanother one\n", "corpus.txt")
    bad = [
        ["--json", str(tmp_path / "no-such-dir" / "r.json")],
        ["--json", str(tmp_path / "same"), "--plot", str(tmp_path / "same")],
        ["--whiten", str(corpus), "--json", str(corpus)],
        ["--whiten", "none", "--n-components", "4"],
    ]
    for extra in bad:
        assert main(["eval-rte", "--model", str(TINY), *extra]) == 2
        assert "sentvec: error:" in capsys.readouterr().err
    assert corpus.read_text(encoding="utf-8") == "one sentence\nanother one\n"


def test_cli_plot_and_markdown(tmp_path, capsys):
    png = tmp_path / "rte.png"
    argv = ["eval-rte", "--model", str(TINY), "--plot", str(png), "--markdown", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| threshold | accuracy | predicted entailment % |" in out
    assert "| **+0.5** |" in out  # the --threshold row is marked


# ------------------------------------------------------------------ score_rte edge cases
def test_score_rte_zero_vectors_and_bad_input():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(40, 5)), rng.normal(size=(40, 5))
    A[3] = 0.0
    ent = rng.integers(0, 2, 40).astype(bool)
    for whitening in ("none", "task"):
        r = score_rte(A, B, ent, whitening=whitening)
        assert (r.n_zero_vectors, r.n_zero_cosine_pairs) == (1, 1)
        assert r.cosines[3] == 0.0  # no information: not pushed above any threshold >= 0
    with pytest.raises(ValueError, match="finite"):
        score_rte(A, B, ent, threshold=float("nan"))
    with pytest.raises(ValueError, match="disagree"):
        score_rte(A, B, ent[:-1])
    with pytest.raises(ValueError, match="n_components"):
        score_rte(A, B, ent, whitening="none", n_components=2)
    r = score_rte(A, B, ent, whitening="none", threshold=0.0)
    best = max(100.0 * ((r.cosines > t) == ent).mean() for t in np.linspace(-1.01, 1.01, 2001))
    assert r.best_accuracy >= best - 1e-9  # the exact search is at least as good as a fine grid
    assert 100.0 * ((r.cosines > r.best_threshold) == ent).mean() == pytest.approx(r.best_accuracy)


def test_reader_fuzzed_bytes_load_or_raise_value_error(tmp_path):
    """Mutated copies of a 30-pair excerpt either load or raise ValueError (never another
    exception): quotes, tabs, newlines, NUL and non-UTF-8 bytes are what the mutations insert."""
    pytest.importorskip("hypothesis")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    excerpt = b"".join(DEV.read_bytes().splitlines(keepends=True)[:31])
    path = tmp_path / "fuzz.tsv"
    special = st.sampled_from([b'"', b"\t", b"\n", b"\r", b"\x00", b"\xff", b"2", b""])
    edits = st.lists(st.tuples(st.integers(0, len(excerpt) - 1), special), max_size=6)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(edits)
    def check(changes):
        data = bytearray(excerpt)
        for pos, new in sorted(changes, reverse=True):
            data[pos : pos + 1] = new
        path.write_bytes(bytes(data))
        try:
            got = load_rte(path)
        except ValueError as exc:
            assert str(path) in str(exc)
        else:
            assert got.n_pairs == len(got.sentence2) == got.entailment.size >= 2

    check()
