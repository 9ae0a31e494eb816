"""CLI sub-commands eval-transfer, search and encode, run through ``sentvec.cli.main`` with the
official tiny Sent2Vec reference model and checked against the public API / numpy oracles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
BIGRAM = str(REF / "tiny-bigram.bin")
UNIGRAM = str(REF / "tiny-unigram.bin")

pytestmark = pytest.mark.filterwarnings("ignore:.*(in-vocabulary|all-zero):UserWarning")


@pytest.fixture(scope="module")
def model():
    from sentvec.encoders import load_encoder

    return load_encoder(BIGRAM)


@pytest.fixture()
def corpus(tmp_path):
    lines = (REF / "train-sample.txt").read_text(encoding="utf-8").split("\n")[:400]
    p = tmp_path / "corpus.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p, lines


def _small_data(root: Path) -> Path:
    """TREC (300 train / 100 test) and MRPC (200 / 100 pairs) cut from the shipped files."""
    from sentvec._data import data_dir

    src = data_dir() / "downstream"
    for task, files in {
        "TREC": {"train_5500.label": 300, "TREC_10.label": 100},
        "MRPC": {"msr_paraphrase_train.txt": 201, "msr_paraphrase_test.txt": 101},
    }.items():
        (root / "downstream" / task).mkdir(parents=True)
        for name, n in files.items():
            raw = (src / task / name).read_bytes().split(b"\n")[:n]
            (root / "downstream" / task / name).write_bytes(b"\n".join(raw) + b"\n")
    return root


def test_eval_transfer_cli_matches_api(tmp_path, capsys, model):
    from sentvec.evaluation.transfer import evaluate_transfer

    data = _small_data(tmp_path / "data")
    out = tmp_path / "res.json"
    rc = main(
        [
            "eval-transfer",
            "--model",
            BIGRAM,
            "--tasks",
            "trec,MSRP",
            "--data",
            str(data),
            "--inner-kfold",
            "3",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "| Model | MRPC (acc / F1) | MR | CR | SUBJ | MPQA | TREC | Avg | SST2 |" in text
    payload = json.loads(out.read_text())
    by_task = {r["task"]: r for r in payload["results"]}
    assert (by_task["TREC"]["n_train"], by_task["TREC"]["n_test"]) == (300, 100)
    assert (by_task["MRPC"]["n_train"], by_task["MRPC"]["n_test"]) == (200, 100)
    api = evaluate_transfer(model, "TREC", data_dir=data, inner_kfold=3)
    assert by_task["TREC"]["accuracy"] == pytest.approx(api.accuracy)
    assert by_task["MRPC"]["f1"] is not None
    row = f"{by_task['MRPC']['accuracy']:.1f} / {by_task['MRPC']['f1']:.1f}"
    assert row in text and f"{api.accuracy:.1f}" in text

    with pytest.raises(SystemExit):
        main(["eval-transfer", "--model", BIGRAM, "--tasks", "STS12"])
    assert "unknown task 'STS12'" in capsys.readouterr().err


def test_search_cli_reuses_index_and_matches_oracle(tmp_path, capsys, corpus, model):
    path, lines = corpus
    index = tmp_path / "idx"
    args = [
        "search",
        "--model",
        BIGRAM,
        "--corpus",
        str(path),
        "--index",
        str(index),
        "-k",
        "5",
        "--query",
        lines[10],
        "--query",
        "the war ended in 1945 .",
        "--json",
    ]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "built index of 400 lines" in first.err and "searched 2 queries in" in first.err
    res = json.loads(first.out)["queries"]

    X = model.encode(lines)
    Q = model.encode([lines[10], "the war ended in 1945 ."])
    norm = lambda A: A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-30)  # noqa: E731
    S = norm(Q.astype(np.float64)) @ norm(X.astype(np.float64)).T
    top = np.argsort(-S, axis=1, kind="stable")[:, :5]
    for q, block in enumerate(res):
        assert [h["line"] for h in block["results"]] == (top[q] + 1).tolist()
        assert [h["text"] for h in block["results"]] == [lines[i] for i in top[q]]
        assert np.allclose([h["score"] for h in block["results"]], S[q, top[q]], atol=1e-5)
    assert res[0]["results"][0]["line"] == 11  # the query is corpus line 11

    assert main(args) == 0
    assert "reusing index (400 lines)" in capsys.readouterr().err
    assert main(args[:9] + ["--query", lines[10]]) == 0
    assert "searched 1 query in" in capsys.readouterr().err  # not "1 queries"
    assert main(args[:-1]) == 0  # plain-text output
    plain = capsys.readouterr().out
    assert plain.startswith(f"query: {lines[10]}\n   1") and "line       11" in plain

    path.write_text("\n".join(lines[:399]) + "\n", encoding="utf-8")  # changed corpus
    assert main(args) == 0
    assert "built index of 399 lines" in capsys.readouterr().err
    assert main(args[:2] + [UNIGRAM] + args[3:]) == 0  # changed model
    assert "built index" in capsys.readouterr().err
    assert main(args + ["--backend", "faiss"]) == 0  # changed backend
    assert "built index" in capsys.readouterr().err

    other = tmp_path / "not-an-index"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    rc = main(
        ["search", "--model", BIGRAM, "--corpus", str(path), "--index", str(other), "--query", "x"]
    )
    assert rc == 2 and "not a sentvec search index" in capsys.readouterr().err
    assert (other / "keep.txt").exists()


def test_encode_cli_resume_whitening_and_refusal(tmp_path, capsys, corpus, model):
    from sentvec.encode_files import load_embeddings
    from sentvec.whitening import Whitening

    path, lines = corpus
    out = tmp_path / "out"
    base = [
        "encode",
        "--model",
        BIGRAM,
        "--input",
        str(path),
        "--output",
        str(out),
        "--shard-size",
        "150",
        "--quiet",
    ]
    assert main(base) == 0
    assert "400 lines [0, 400) -> 3 shards of dim 16" in capsys.readouterr().out
    assert np.array_equal(load_embeddings(out), model.encode(lines))
    assert main(base) == 0
    assert "(0 encoded, 3 reused" in capsys.readouterr().out

    assert main(base[:2] + [UNIGRAM] + base[3:]) == 2
    assert "different encoder" in capsys.readouterr().err
    assert main(base[:2] + [UNIGRAM] + base[3:] + ["--overwrite"]) == 0
    capsys.readouterr()

    w = Whitening(n_components=4).fit(model.encode(lines))
    w.save(tmp_path / "w")
    wout = tmp_path / "wout"
    assert (
        main(
            base[:6]
            + [
                str(wout),
                "--whitening",
                str(tmp_path / "w"),
                "--start-line",
                "100",
                "--end-line",
                "250",
                "--quiet",
            ]
        )
        == 0
    )
    assert "150 lines [100, 250) -> 1 shards of dim 4" in capsys.readouterr().out
    assert np.allclose(load_embeddings(wout), w.transform(model.encode(lines[100:250])), atol=1e-5)


def _first_search(capsys, path, index, query, k):
    """Run a JSON search that builds ``index``; return its arguments and its output."""
    args = [
        "search",
        "--model",
        BIGRAM,
        "--corpus",
        str(path),
        "--index",
        str(index),
        "-k",
        str(k),
        "--query",
        query,
        "--json",
    ]
    assert main(args) == 0
    return args, json.loads(capsys.readouterr().out)


def test_search_cli_rebuilds_a_damaged_index(tmp_path, capsys, corpus):
    path, lines = corpus
    index = tmp_path / "idx"
    args, good = _first_search(capsys, path, index, lines[5], 3)
    emb = index / "embeddings.npy"
    emb.write_bytes(emb.read_bytes()[:40])  # truncated by a crash or a full disk
    # the stored checksum catches damaged vectors before they are read
    with pytest.warns(UserWarning, match="do not match the checksums"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "built index of 400 lines" in out.err
    assert json.loads(out.out) == good
    np.save(emb, np.full(np.load(emb).shape, np.nan, dtype=np.float32))  # readable, but NaN
    with pytest.warns(UserWarning, match="checksums .*embeddings.npy changed"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "reusing index" not in out.err and "built index of 400 lines" in out.err
    assert json.loads(out.out) == good and np.isfinite(np.load(emb)).all()
    (index / "fingerprint.json").write_text("[]", encoding="utf-8")  # damaged, not just stale
    with pytest.warns(UserWarning, match="holds a JSON list"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "built index of 400 lines" in out.err
    assert json.loads(out.out) == good


def test_encode_cli_re_encodes_a_nan_shard_and_names_a_directory_input(tmp_path, capsys, corpus):
    from sentvec.encode_files import load_embeddings, read_manifest

    path, _ = corpus
    out = tmp_path / "out"
    base = [
        "encode",
        "--model",
        BIGRAM,
        "--input",
        str(path),
        "--output",
        str(out),
        "--shard-size",
        "150",
        "--quiet",
    ]
    assert main(base) == 0
    good = load_embeddings(out, mmap=False).copy()
    shard = out / read_manifest(out).shards[1].file
    arr = np.load(shard)
    arr[0, 0] = np.nan
    np.save(shard, arr)
    capsys.readouterr()
    with pytest.warns(UserWarning, match="is damaged: 1 non-finite values .*; re-encoding it"):
        assert main(base) == 0
    assert "(1 encoded, 2 reused" in capsys.readouterr().out
    np.testing.assert_array_equal(load_embeddings(out), good)
    assert (
        main(
            [
                "encode",
                "--model",
                BIGRAM,
                "--input",
                str(tmp_path),
                "--output",
                str(tmp_path / "o2"),
                "--quiet",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "is a directory; give a text file" in err and "not found" not in err


@pytest.mark.parametrize("flag", ["--kfold", "--inner-kfold"])
def test_eval_transfer_folds_must_be_at_least_two(flag, capsys):
    with pytest.raises(SystemExit):
        main(["eval-transfer", "--model", BIGRAM, flag, "1"])
    err = capsys.readouterr().err
    assert "expected an integer >= 2, got '1'" in err


def test_search_cli_queries_file_bom_and_bad_bytes(tmp_path, capsys, corpus):
    # a queries file read like every other input: a leading UTF-8 BOM is dropped, a byte that
    # is not UTF-8 is an error naming the file and line
    path, lines = corpus
    index = tmp_path / "idx"
    q = tmp_path / "q.txt"
    q.write_bytes(b"\xef\xbb\xbf" + lines[10].encode("utf-8") + b"\n\n")
    args = [
        "search",
        "--model",
        BIGRAM,
        "--corpus",
        str(path),
        "--index",
        str(index),
        "-k",
        "1",
        "--queries",
        str(q),
        "--json",
    ]
    assert main(args) == 0
    (block,) = json.loads(capsys.readouterr().out)["queries"]
    assert block["query"] == lines[10] and block["results"][0]["line"] == 11
    q.write_bytes(b"fine\ncaf\xe9\n")
    assert main(args) != 0
    assert "line 2 is not valid UTF-8" in capsys.readouterr().err


def test_search_cli_rebuilds_an_index_dir_missing_its_config(tmp_path, capsys, corpus):
    # only the fingerprint and vectors left (search_index.json deleted): a damaged index of
    # ours, rebuilt in place; a foreign file in the directory still makes it refuse, before
    # any encoding
    path, lines = corpus
    index = tmp_path / "idx"
    args, good = _first_search(capsys, path, index, lines[3], 2)
    (index / "search_index.json").unlink()
    with pytest.warns(UserWarning, match="checksums .*search_index.json missing"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "built index of 400 lines" in out.err and json.loads(out.out) == good
    (index / "search_index.json").unlink()
    (index / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.warns(UserWarning, match="search_index.json missing"):
        assert main(args) != 0
    assert "refusing to replace it" in capsys.readouterr().err
    assert (index / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_search_cli_next_to_a_read_only_corpus_searches_without_saving(
    tmp_path, capsys, corpus, monkeypatch
):
    # root ignores permission bits, so the unwritable folder is simulated at the write check
    import sentvec.search as search_mod

    def read_only(path, **kwargs):
        raise PermissionError(f"cannot write index directory {str(path)!r}: not writable")

    path, lines = corpus
    args = [
        "search",
        "--model",
        BIGRAM,
        "--corpus",
        str(path),
        "-k",
        "2",
        "--query",
        lines[3],
        "--json",
    ]
    assert main(args) == 0  # the oracle run, index saved next to the corpus
    good = json.loads(capsys.readouterr().out)
    shutil.rmtree(path.with_name(path.name + ".sentvec-index"))
    monkeypatch.setattr(search_mod, "check_output_path", read_only)
    with pytest.warns(UserWarning, match="searching without saving the index"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == good and "(in memory, not saved)" in out.err
    assert not path.with_name(path.name + ".sentvec-index").exists()
    # an explicit --index that cannot be written fails before the corpus is encoded
    assert main(args + ["--index", str(tmp_path / "idx")]) != 0
    assert "not writable" in capsys.readouterr().err
