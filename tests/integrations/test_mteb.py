"""The MTEB adapter (sentvec.integrations.mteb) against MTEB's own STS evaluator.

The STS task is built from the STS-B test split shipped with sentvec (nothing is downloaded),
run with ``mteb.evaluate``, and its ``main_score`` (cosine Spearman) is compared with sentvec's
``evaluate_sts(..., aggregation="all")`` on the same pairs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

mteb = pytest.importorskip("mteb")
datasets = pytest.importorskip("datasets")


class _Memo:
    """Encoder wrapper that encodes each distinct sentence once and counts the calls, so the two
    evaluations below score bit-identical vectors (the comparison is then of scoring only)."""

    def __init__(self, encoder):
        self.encoder, self.cache, self.calls = encoder, {}, 0

    def config_dict(self):
        return self.encoder.config_dict()

    def get_sentence_embedding_dimension(self):
        return self.encoder.get_sentence_embedding_dimension()

    def encode(self, sentences, **kwargs):
        self.calls += 1
        todo = [s for s in dict.fromkeys(sentences) if s not in self.cache]
        if todo:
            for s, v in zip(todo, self.encoder.encode(todo, **kwargs), strict=True):
                self.cache[s] = v
        return np.stack([self.cache[s] for s in sentences])


def _stsb_task(sts_task):
    from mteb.abstasks.sts import AbsTaskSTS
    from mteb.abstasks.task_metadata import TaskMetadata

    sub = sts_task.subsets[0]
    data = datasets.Dataset.from_dict(
        {
            "sentence1": list(sub.sent1),
            "sentence2": list(sub.sent2),
            "score": [float(g) for g in sub.gold],
        }
    )

    class LocalSTSB(AbsTaskSTS):
        min_score, max_score = 0, 5
        metadata = TaskMetadata(
            name="SentvecLocalSTSB",
            description="STS-B test split shipped with sentvec",
            dataset={"path": "sentvec/local-stsb", "revision": "local"},
            reference=None,
            type="STS",
            category="t2t",
            modalities=["text"],
            eval_splits=["test"],
            eval_langs=["eng-Latn"],
            main_score="cosine_spearman",
            date=None,
            domains=None,
            task_subtypes=None,
            license=None,
            annotations_creators=None,
            dialect=None,
            sample_creation=None,
            bibtex_citation="",
        )

        def load_data(self, **kwargs):
            self.dataset = {"default": datasets.DatasetDict({"test": data})}
            self.data_loaded = True

    return LocalSTSB()


@pytest.fixture(scope="module")
def whitened_pipeline(tiny_minilm):
    import sentvec
    from sentvec._data import data_dir

    path = data_dir() / "corpus" / "enwiki-2015-sentences-sample10k.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    corpus = [ln.strip() for ln in lines if ln.strip()][:300]
    w = sentvec.Whitening(64).fit(tiny_minilm.encode(corpus))
    return sentvec.Pipeline(tiny_minilm, w)


def test_mteb_evaluate_matches_evaluate_sts(whitened_pipeline):
    import sentvec
    from sentvec.integrations.mteb import MTEBEncoder

    (task,) = sentvec.load_sts("STSBenchmark", split="test")
    memo = _Memo(whitened_pipeline)
    ours = sentvec.evaluate_sts(memo, [task], aggregation="all")
    model = MTEBEncoder(memo, name="sentvec/tiny-minilm-whitened")
    assert isinstance(model, mteb.models.EncoderProtocol)
    meta = MTEBEncoder(whitened_pipeline).mteb_model_meta
    assert (meta.embed_dim, meta.name, meta.similarity_fn_name) == (
        64,
        "sentvec/model-mean-L1+L2-whiten64",
        "cosine",
    )  # last path component
    res = mteb.evaluate(
        model,
        _stsb_task(task),
        cache=None,
        show_progress_bar=False,
        encode_kwargs={"batch_size": 16},
    )
    (task_result,) = res.task_results
    main = task_result.get_score()  # main_score averaged over splits and subsets (one each)
    assert memo.calls == 3  # evaluate_sts once, MTEB once per side: the adapter was used
    # MTEB's cosine is sklearn's paired_cosine_distances on float32 vectors, sentvec's is
    # float64: the rounding differs by ~1e-7, far below the gap between neighbouring cosines,
    # so the ranks (and Spearman) agree to ~1e-9 x 100
    print(
        f"\nMTEB main_score x 100 = {100 * main:.10f}, evaluate_sts(all) = "
        f"{ours.task_scores['STSBenchmark']:.10f}"
    )
    assert abs(100 * main - ours.task_scores["STSBenchmark"]) <= 1e-6 * 100
    assert 40 < ours.task_scores["STSBenchmark"] < 95  # measured 50.62: a real model


def test_encode_1x_signature_and_dataloader(tiny_minilm):
    import torch

    from sentvec.integrations.mteb import MTEBEncoder

    sents = ["A man plays a guitar.", "", "Two dogs run through a field."]
    ref = tiny_minilm.encode(sents)
    model = MTEBEncoder(tiny_minilm)
    # mteb 1.x: a list of str plus task_name / prompt_type keywords
    got = model.encode(sents, task_name="STSBenchmark", prompt_type=None, batch_size=2)
    np.testing.assert_array_equal(got, ref)
    # mteb 2.x: a DataLoader of {"text": [...]} batches
    loader = torch.utils.data.DataLoader([{"text": s} for s in sents], batch_size=2)
    np.testing.assert_array_equal(
        model.encode(loader, task_metadata=None, hf_split="test", hf_subset="default"), ref
    )
    unit = MTEBEncoder(tiny_minilm, normalize=True).encode(sents)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-6)
    cos = model.similarity_pairwise(ref[:2], ref[1:])
    want = [
        float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        for a, b in zip(ref[:2], ref[1:], strict=True)
    ]
    np.testing.assert_allclose(cos, want, rtol=1e-6)
    np.testing.assert_allclose(np.diag(model.similarity(ref, ref)), 1.0, rtol=1e-6)
    with pytest.raises(TypeError, match="encode method"):
        MTEBEncoder(object())
    with pytest.raises(TypeError, match="text"):
        model.encode([{"image": 1}])


def test_not_imported_by_sentvec():
    import subprocess
    import sys

    code = (
        "import sys, sentvec; sentvec.Pipeline; "
        "assert 'mteb' not in sys.modules and 'sentence_transformers' not in sys.modules; "
        "assert 'sentvec.integrations.mteb' not in sys.modules; "
        "from sentvec.integrations import MTEBEncoder; assert 'mteb' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
