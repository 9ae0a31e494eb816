"""TransformerEncoder(backend="onnx"): ONNX Runtime forward passes against torch's.

The oracle is the torch backend itself, run in the test on the same sentences: the vectors of
every pooling with layers (1, -1), and the pooled vectors of every hidden state, must agree to
1e-5. The sentences give batches of other shapes than the export's example batch (a
graph traced with the shape baked in gives errors of order 1, not 1e-6).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("torch")

TOL = 1e-5

SENTENCES = [
    "",
    "   ",
    "a",
    "The cat sat on the mat.",
    "naïve café — ünïcödé ✓ 文字",
    "word " * 300,
] + [f"sentence {i} " + "more words " * (i % 23) for i in range(40)]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def minilm_pair(minilm_path, onnx_cache):
    """The full 6-layer MiniLM with both backends (one export into the module's cache)."""
    from sentvec.encoders.transformer import TransformerEncoder

    torch_enc = TransformerEncoder.from_pretrained(minilm_path, device="cpu")
    onnx_enc = TransformerEncoder.from_pretrained(
        minilm_path, backend="onnx", onnx_cache_dir=onnx_cache
    )
    return torch_enc, onnx_enc


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_onnx_vectors_match_torch_for_every_pooling(minilm_pair, pooling):
    torch_enc, onnx_enc = minilm_pair
    with pytest.warns(UserWarning, match="truncated"):
        ref = torch_enc.with_options(pooling=pooling, layers=(1, -1)).encode(
            SENTENCES, batch_size=8
        )
    with pytest.warns(UserWarning, match="truncated"):
        got = onnx_enc.with_options(pooling=pooling, layers=(1, -1)).encode(SENTENCES, batch_size=8)
    assert got.dtype == np.float32 and got.shape == ref.shape == (len(SENTENCES), 384)
    assert float(np.abs(got - ref).max()) <= TOL


def test_onnx_last_layer_alone_matches_torch(minilm_pair):
    """layers=-1 fetches one output of the graph instead of all seven."""
    torch_enc, onnx_enc = minilm_pair
    ref = torch_enc.with_options(layers=-1).encode(SENTENCES[6:], batch_size=16)
    got = onnx_enc.with_options(layers=-1).encode(SENTENCES[6:], batch_size=16)
    assert float(np.abs(got - ref).max()) <= TOL


def test_onnx_every_hidden_state_matches_torch(minilm_pair):
    torch_enc, onnx_enc = minilm_pair
    ref = torch_enc.encode_layers(SENTENCES[6:], pooling=("mean", "cls", "max"))
    got = onnx_enc.encode_layers(SENTENCES[6:], pooling=("mean", "cls", "max"))
    for mode in ref:
        assert got[mode].shape == (len(SENTENCES) - 6, 7, 384)
        assert float(np.abs(got[mode] - ref[mode]).max()) <= TOL, mode


def test_onnx_graph_is_cached_and_keyed_by_the_weights(minilm_pair, onnx_cache, tiny_minilm):
    from sentvec.encoders.onnx_backend import OnnxForward

    _, onnx_enc = minilm_pair
    again = OnnxForward(onnx_enc.model, cache_dir=onnx_cache)
    assert not again.exported and again.path == onnx_enc._onnx.path
    # a model with other weights (the first two layers only) gets its own graph
    other = OnnxForward(tiny_minilm.model, cache_dir=onnx_cache)
    assert other.exported and other.path != again.path and len(other._names) == 3
    # with_options shares the session; config_dict names the backend (vector-cache keys differ)
    assert onnx_enc.with_options(pooling="cls")._onnx is onnx_enc._onnx
    assert onnx_enc.config_dict()["backend"] == "onnx"
    assert "backend" not in minilm_pair[0].config_dict()


def test_a_corrupt_cached_graph_is_exported_again(tiny_minilm, tmp_path):
    from sentvec.encoders.onnx_backend import OnnxForward

    first = OnnxForward(tiny_minilm.model, cache_dir=tmp_path)
    data = first.path.read_bytes()
    first.path.write_bytes(data[: len(data) // 3])  # truncated
    with pytest.warns(UserWarning, match="unreadable"):
        second = OnnxForward(tiny_minilm.model, cache_dir=tmp_path)
    assert second.exported and second.path.stat().st_size == len(data)
    enc = tiny_minilm.with_options()
    ref = enc.encode(SENTENCES[:20])
    from sentvec.encoders.transformer import TransformerEncoder

    onnx_enc = TransformerEncoder(
        tiny_minilm.model,
        tiny_minilm.tokenizer,
        backend="onnx",
        onnx_cache_dir=tmp_path,
        layers=(1, -1),
        max_length=tiny_minilm.max_length,
    )
    assert float(np.abs(onnx_enc.encode(SENTENCES[:20]) - ref).max()) <= TOL


def test_onnx_backend_refuses_bad_options(tiny_minilm, tmp_path):
    from sentvec.encoders.transformer import TransformerEncoder

    with pytest.raises(ValueError, match="CPU only"):
        TransformerEncoder(
            tiny_minilm.model,
            tiny_minilm.tokenizer,
            backend="onnx",
            device="cuda",
            onnx_cache_dir=tmp_path,
        )
    with pytest.raises(ValueError, match="backend"):
        TransformerEncoder(tiny_minilm.model, tiny_minilm.tokenizer, backend="tensorrt")


def test_cli_model_backend_onnx_matches_torch(tiny_minilm_dir, tmp_path, monkeypatch):
    from sentvec.cli import main
    from sentvec.encode_files import load_embeddings

    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES[6:]) + "\n", encoding="utf-8")
    outs = {}
    for backend in ("torch", "onnx"):
        out = tmp_path / f"vec-{backend}"
        assert (
            main(
                [
                    "encode",
                    "--model",
                    str(tiny_minilm_dir),
                    "--input",
                    str(corpus),
                    "--output",
                    str(out),
                    "--model-backend",
                    backend,
                    "--precision",
                    "float32",  # the two forward passes compared in one precision
                    "--no-progress",
                ]
            )
            == 0
        )
        outs[backend] = load_embeddings(out)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["encoder"].get("backend", "torch") == backend
    assert outs["onnx"].shape == (len(SENTENCES) - 6, 384)
    assert float(np.abs(outs["onnx"] - outs["torch"]).max()) <= TOL
    assert any((tmp_path / "cache" / "onnx").rglob("model.onnx"))


def test_cli_model_backend_is_refused_for_sent2vec(tmp_path, capsys):
    from sentvec.cli import main

    model = "tests/data/sent2vec-reference/tiny-bigram.bin"
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n", encoding="utf-8")
    rc = main(
        [
            "encode",
            "--model",
            model,
            "--input",
            str(corpus),
            "--output",
            str(tmp_path / "o"),
            "--model-backend",
            "onnx",
            "--no-progress",
        ]
    )
    assert rc == 2
    assert "backend" in capsys.readouterr().err


def test_a_cached_graph_with_damaged_weights_is_caught_and_exported_again(tiny_minilm, tmp_path):
    """A graph that still parses but computes wrong hidden states must not be used."""
    import os

    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from sentvec.encoders.onnx_backend import OnnxForward

    first = OnnxForward(tiny_minilm.model, cache_dir=tmp_path)
    assert oct(first.path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # not mkstemp's 0600
    graph = onnx.load(str(first.path))
    init = max(graph.graph.initializer, key=lambda t: int(np.prod(t.dims)))  # a big weight
    w = numpy_helper.to_array(init).copy()
    w[: max(1, len(w) // 4)] = 0.42
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(graph, str(first.path))
    with pytest.warns(UserWarning, match="damaged"):
        second = OnnxForward(tiny_minilm.model, cache_dir=tmp_path)
    assert second.exported and os.path.getsize(second.path) > 0
    from sentvec.encoders.transformer import TransformerEncoder

    ref = tiny_minilm.encode(SENTENCES[6:30])
    got = TransformerEncoder(
        tiny_minilm.model,
        tiny_minilm.tokenizer,
        backend="onnx",
        onnx_cache_dir=tmp_path,
        layers=(1, -1),
        max_length=tiny_minilm.max_length,
        _onnx=second,
    ).encode(SENTENCES[6:30])
    assert float(np.abs(got - ref).max()) <= TOL


def test_an_unwritable_graph_cache_names_the_cache_and_the_way_out(tiny_minilm, tmp_path):
    from sentvec.encoders.onnx_backend import OnnxForward

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")  # the cache root is a file: nothing can be created under it
    with pytest.raises(OSError, match="ONNX graph cache.*SENTVEC_CACHE"):
        OnnxForward(tiny_minilm.model, cache_dir=blocker)


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------------------- int8
#: Bound on the int8 graph's pooled vectors against torch float32's, per row: cosine. Measured
#: on MiniLM sentences: per-channel int8 MatMuls keep rows at 0.994 and up (2 layers: higher).
INT8_MIN_ROW_COSINE = 0.99


def _row_cosines(a, b):
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_int8_graph_is_quantized_once_and_cached_beside_the_float_graph(tiny_minilm, tmp_path):
    import os

    from sentvec.encoders.onnx_backend import OnnxForward

    first = OnnxForward(tiny_minilm.model, cache_dir=tmp_path, precision="int8")
    assert first.exported and first.quantized  # the float32 graph first, then its int8 form
    assert first.path.parent == first.float_path.parent and first.path != first.float_path
    assert first.float_path.is_file() and first.path.is_file()
    assert oct(first.path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # atomic_write_*
    assert first.path.stat().st_size < first.float_path.stat().st_size
    mtime = os.stat(first.path).st_mtime_ns
    again = OnnxForward(tiny_minilm.model, cache_dir=tmp_path, precision="int8")
    assert not again.exported and not again.quantized and again.path == first.path
    assert os.stat(first.path).st_mtime_ns == mtime
    # the float32 graph is still the float32 one, and no temporary files are left
    f32 = OnnxForward(tiny_minilm.model, cache_dir=tmp_path)
    assert not f32.exported and f32.path == first.float_path
    assert sorted(p.name for p in first.path.parent.iterdir()) == sorted(
        [first.path.name, "model.onnx"]
    )


def test_int8_vectors_stay_close_to_float32_but_are_quantized(tiny_minilm, tmp_path):
    from sentvec.encoders.transformer import TransformerEncoder

    ref = tiny_minilm.encode(SENTENCES[6:])
    enc = TransformerEncoder(
        tiny_minilm.model,
        tiny_minilm.tokenizer,
        backend="onnx",
        precision="int8",
        onnx_cache_dir=tmp_path,
        layers=(1, -1),
        max_length=tiny_minilm.max_length,
    )
    got = enc.encode(SENTENCES[6:])
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert float(_row_cosines(got, ref).min()) >= INT8_MIN_ROW_COSINE
    assert float(np.abs(got - ref).max()) > 100 * TOL  # really the int8 graph, not float32
    assert enc.precision == "int8" and enc.config_dict()["precision"] == "int8"
    assert "precision='int8'" in repr(enc)


def test_with_options_never_shares_a_session_of_another_precision(tiny_minilm, tmp_path):
    from sentvec.encoders.transformer import TransformerEncoder

    f32 = TransformerEncoder(
        tiny_minilm.model, tiny_minilm.tokenizer, backend="onnx", onnx_cache_dir=tmp_path
    )
    int8 = f32.with_options(precision="int8")
    assert int8._onnx.precision == "int8" and int8._onnx.path.parent == f32._onnx.path.parent
    assert int8.with_options(pooling="cls")._onnx is int8._onnx
    back = int8.with_options(precision="float32")
    assert back._onnx.precision == "float32" and back._onnx.path == f32._onnx.path
    assert "precision" not in back.config_dict()
    ref = f32.encode(SENTENCES[6:20])
    assert float(np.abs(back.encode(SENTENCES[6:20]) - ref).max()) <= TOL


def test_int8_needs_the_onnx_backend_and_bfloat16_stays_refused_there(tiny_minilm, tmp_path):
    from sentvec.encoders.transformer import TransformerEncoder

    with pytest.raises(ValueError, match="int8.*backend='onnx'"):
        TransformerEncoder(tiny_minilm.model, tiny_minilm.tokenizer, precision="int8")
    with pytest.raises(ValueError, match="int8.*backend='onnx'"):
        tiny_minilm.with_options(precision="int8")
    with pytest.raises(ValueError, match="bfloat16.*needs backend='torch'"):
        TransformerEncoder(
            tiny_minilm.model,
            tiny_minilm.tokenizer,
            backend="onnx",
            precision="bfloat16",
            onnx_cache_dir=tmp_path,
        )
    auto = TransformerEncoder(
        tiny_minilm.model,
        tiny_minilm.tokenizer,
        backend="onnx",
        precision="auto",
        onnx_cache_dir=tmp_path,
    )
    assert auto.precision == "float32"  # auto never picks int8


def test_a_damaged_int8_graph_is_caught_and_quantized_again(tiny_minilm, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    from sentvec.encoders.onnx_backend import OnnxForward

    first = OnnxForward(tiny_minilm.model, cache_dir=tmp_path, precision="int8")
    good = first.path.read_bytes()
    graph = onnx.load(str(first.path))
    quantized = [t for t in graph.graph.initializer if t.name.endswith("_quantized")]
    init = max(quantized, key=lambda t: int(np.prod(t.dims)))  # a big int8 weight matrix
    w = numpy_helper.to_array(init).copy()
    w[: max(1, len(w) // 4)] = 42
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(graph, str(first.path))
    with pytest.warns(UserWarning, match="damaged.*quantizing it again"):
        second = OnnxForward(tiny_minilm.model, cache_dir=tmp_path, precision="int8")
    assert second.quantized and not second.exported  # the float32 graph was fine
    assert second.path.read_bytes() == good  # the quantizer is deterministic


def test_a_broken_int8_graph_is_never_accepted(tiny_minilm, tmp_path, monkeypatch):
    """A quantizer that writes a wrong graph: the check against torch refuses it and removes it."""
    from sentvec.encoders import onnx_backend

    real = onnx_backend.quantize_int8

    def quantize_then_damage(float_path, path):
        out = real(float_path, path)
        onnx = pytest.importorskip("onnx")
        from onnx import numpy_helper

        graph = onnx.load(str(out))
        quantized = [t for t in graph.graph.initializer if t.name.endswith("_quantized")]
        for init in quantized:
            w = numpy_helper.to_array(init).copy()
            w[: max(1, len(w) // 2)] = -42
            init.CopyFrom(numpy_helper.from_array(w, init.name))
        onnx.save(graph, str(out))
        return out

    monkeypatch.setattr(onnx_backend, "quantize_int8", quantize_then_damage)
    with pytest.raises(RuntimeError, match="int8 ONNX graph.*cosine.*precision='float32'"):
        onnx_backend.OnnxForward(tiny_minilm.model, cache_dir=tmp_path, precision="int8")
    assert not list(tmp_path.rglob("model.int8-*"))


def test_cli_int8_is_keyed_apart_from_float32_in_the_vector_cache(
    tiny_minilm_dir, tmp_path, capsys
):
    from _helpers import small_sts_dir

    from sentvec.cli import main

    data = small_sts_dir(tmp_path / "data", sts13_lines=5, stsb_lines=40)
    base = ["eval-sts", "--model", str(tiny_minilm_dir), "--tasks", "STSB", "--layers", "1,-1"]
    base += ["--data", str(data), "--cache-dir", str(tmp_path / "c"), "--model-backend", "onnx"]
    runs = []
    for precision in ("int8", "float32", "int8"):
        out = tmp_path / f"{precision}-{len(runs)}.json"
        assert main([*base, "--precision", precision, "--json", str(out)]) == 0
        capsys.readouterr()
        runs.append(json.loads(out.read_text()))
    (int8, f32, again) = (r["metadata"] for r in runs)
    assert int8["precision"] == "int8" and "precision" not in f32
    # float32 never reads int8's cached vectors; the second int8 run does
    assert not int8["cache_hit"] and not f32["cache_hit"] and again["cache_hit"]
    assert runs[0]["task_scores"] != runs[1]["task_scores"]  # int8 really ran
    assert any((tmp_path / "c" / "onnx").rglob("model.int8-*.onnx"))
    # int8 without the ONNX backend: a usage error naming both options
    rc = main([*base[:-2], "--precision", "int8"])
    assert rc == 2 and "int8" in capsys.readouterr().err
