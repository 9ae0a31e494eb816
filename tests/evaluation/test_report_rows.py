"""``sentence_encoder_report``: a Sent2Vec model's part of the reproduction report, from Python,
equal to the rows the table functions give on its own vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentvec._data import PACKAGE_DATA_DIR

BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
N_PAIRS = 40


@pytest.fixture(scope="module")
def stsb_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("sts-data")
    src = PACKAGE_DATA_DIR / "downstream/STS/STSBenchmark/sts-test.csv"
    lines = src.read_text(encoding="utf-8").splitlines(True)
    (root / "downstream/STS/STSBenchmark").mkdir(parents=True)
    (root / "downstream/STS/STSBenchmark/sts-test.csv").write_text(
        "".join(lines[:N_PAIRS]), encoding="utf-8"
    )
    return root


@pytest.mark.filterwarnings("ignore:score_sts")
@pytest.mark.filterwarnings("ignore:Whitening")
def test_a_sent2vec_models_rows_with_post_processing(stsb_data):
    from sentvec import Sent2Vec
    from sentvec.encoders.sif import SIFEncoder, USIFEncoder
    from sentvec.evaluation import (
        load_sts,
        postprocessing_rows,
        sent2vec_rows,
        sentence_encoder_report,
        sif_rows,
        unique_sentences,
    )

    model = Sent2Vec.load(BIN)
    tasks = load_sts(["STSB"], data_dir=stsb_data)
    block = sentence_encoder_report(model, "S", tasks, post_processing=True, whitening_k=8)
    sentences = unique_sentences(tasks)
    emb = model.encode(sentences)
    want = sent2vec_rows("S", emb, tasks, sentences)
    assert [(r.model, r.whitening) for r in block.rows] == [("S", False), ("S", True)]
    assert [r.result.average for r in block.rows] == [r.result.average for r in want]
    post = postprocessing_rows("S", "sentence vectors", emb, tasks, sentences, whitening_k=8)
    encs = [cls.from_sent2vec(model, common_component="year") for cls in (SIFEncoder, USIFEncoder)]
    post += sif_rows("S", "unigram word vectors", encs, tasks, sentences)
    got = [(p.vectors, p.method, p.detail, p.result.average) for p in block.postprocessing]
    assert got == [(p.vectors, p.method, p.detail, p.result.average) for p in post]
    assert len(block.notes) == 1 and "dictionary counts" in block.notes[0]
    assert block.info["model"] == "S" and block.info["n_sentences"] == len(sentences)
    assert not block.info["cache_hit"]
    plain = sentence_encoder_report(model, "S", tasks)
    assert plain.postprocessing == [] and plain.notes == []
