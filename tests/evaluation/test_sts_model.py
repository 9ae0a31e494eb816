"""``evaluate_sts_model`` and ``evaluate_table1``: a model named by its path, evaluated from Python,
loaded only when the vector cache cannot serve it.

The data are the first 30 STS-B test pairs (copied from the packaged SentEval files) and the model
the 2-layer MiniLM, so each evaluation takes a second or two.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("torch")

from sentvec._data import PACKAGE_DATA_DIR  # noqa: E402

N_PAIRS = 30


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


@pytest.fixture
def model_dir(tiny_minilm_dir, tmp_path, monkeypatch):
    """A private copy of the 2-layer MiniLM (its files' status is fresh: no racy-time guard)."""
    import sentvec.cache_keys as cache_keys_mod

    monkeypatch.setattr(cache_keys_mod, "_RACY_NS", 0)
    model = tmp_path / "model"
    shutil.copytree(tiny_minilm_dir, model)
    return model


@pytest.fixture
def loads(monkeypatch):
    """Every model load, by name."""
    import sentvec.encoders.loading as loading

    real = loading.load_encoder
    names = []

    def counted(name, **options):
        names.append(str(name))
        return real(name, **options)

    monkeypatch.setattr(loading, "load_encoder", counted)
    return names


@pytest.mark.filterwarnings("ignore:Whitening. the covariance")
def test_a_second_evaluation_with_the_same_cache_does_not_load_the_model(
    stsb_data, model_dir, loads, tmp_path
):
    from sentvec.cache import VectorCache
    from sentvec.evaluation import evaluate_sts_model

    cache = VectorCache(tmp_path / "cache")
    corpus = ["a man plays a guitar .", "the cat sat .", "it rains ."] * 10
    runs = [
        evaluate_sts_model(
            model_dir,
            ["STSB"],
            cache=cache,
            layers=(1, -1),
            whitening=corpus,
            n_components=8,
            data_dir=stsb_data,
        )
        for _ in range(2)
    ]
    assert loads == [str(model_dir)]  # the second evaluation never loaded the model
    assert [r.cache_hit for r in runs] == [False, True]
    first, second = (r.result for r in runs)
    assert second.task_scores == first.task_scores and second.subset_scores == first.subset_scores
    assert second.whitening == first.whitening
    assert second.metadata == first.metadata
    # without the cache the model is loaded and encodes again, and scores the same
    again = evaluate_sts_model(
        model_dir, ["STSB"], layers=(1, -1), whitening=corpus, n_components=8, data_dir=stsb_data
    )
    assert loads == [str(model_dir)] * 2 and not again.cache_hit
    assert again.result.task_scores == first.task_scores


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_a_second_table1_block_with_the_same_cache_does_not_load_the_model(
    stsb_data, model_dir, loads, tmp_path
):
    from sentvec.cache import VectorCache
    from sentvec.evaluation import evaluate_table1

    cache = VectorCache(tmp_path / "cache")
    blocks = [evaluate_table1(model_dir, ["STSB"], cache=cache, data_dir=stsb_data) for _ in "12"]
    assert loads == [str(model_dir)]
    assert [b.cache_hit for b in blocks] == [False, True]
    assert list(blocks[1].rows) == list(blocks[0].rows) and len(blocks[0].rows) == 5
    for label, result in blocks[0].rows.items():
        assert blocks[1].rows[label].task_scores == result.task_scores, label
    assert blocks[1].description == blocks[0].description


def test_postprocessor_for_sees_the_encoder_before_anything_is_encoded(
    stsb_data, model_dir, tmp_path
):
    from sentvec.cache import VectorCache
    from sentvec.encoders import output_dimension
    from sentvec.evaluation import evaluate_sts_model

    seen = []

    def refuse(encoder):
        seen.append(output_dimension(encoder))
        raise ValueError("refused")

    cache = VectorCache(tmp_path / "cache")
    with pytest.raises(ValueError, match="refused"):
        evaluate_sts_model(model_dir, ["STSB"], cache=cache, postprocessor_for=refuse)
    assert seen == [384] and not any((tmp_path / "cache").rglob("*.npy"))
    with pytest.raises(ValueError, match="not both"):
        evaluate_sts_model(model_dir, ["STSB"], postprocessor=object(), postprocessor_for=refuse)
