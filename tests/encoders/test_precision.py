"""Forward-pass precision of TransformerEncoder: bfloat16 matrix products under autocast, float32
everywhere else (hidden states, pooling, layer averaging), the resolved precision recorded in the
description (so the vector cache keys on it), and ``--precision`` on every command that loads a
transformer. Oracle: the same encoder in float32."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sentvec.encoders import bfloat16_is_fast, resolve_precision  # noqa: E402
from sentvec.encoders.transformer import TransformerEncoder  # noqa: E402
from sentvec.encoders.transformer_files import resolved_precision_without_torch  # noqa: E402

SENTS = [
    "a man is playing a guitar .",
    "the cat sat on the mat , looking at the dog outside .",
    "it 's raining",
    "",
]


@pytest.fixture(scope="module")
def pair(tiny_minilm):
    """The tiny 2-layer MiniLM in float32 and in bfloat16, sharing weights."""
    model, tok = tiny_minilm.model, tiny_minilm.tokenizer
    kw = {"pooling": "mean", "layers": (1, -1), "device": "cpu"}
    return (
        TransformerEncoder(model, tok, precision="float32", **kw),
        TransformerEncoder(model, tok, precision="bfloat16", **kw),
    )


def test_bfloat16_multiplies_in_bfloat16_and_pools_in_float32(pair):
    f32, bf16 = pair
    seen = []
    linear = bf16.model.encoder.layer[0].attention.self.query
    handle = linear.register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    try:
        a = f32.encode(SENTS)
        b = bf16.encode(SENTS)
        layers = bf16.encode_layers(SENTS, pooling=("mean", "cls"))
    finally:
        handle.remove()
    assert seen == [torch.float32, torch.bfloat16, torch.bfloat16]
    assert a.dtype == b.dtype == np.float32
    assert all(v.dtype == np.float32 for v in layers.values())
    # the weights are never converted: the float32 encoder sharing them is unchanged
    assert next(f32.model.parameters()).dtype == torch.float32
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() > 0.999
    assert not np.array_equal(a, b)  # bfloat16 really ran
    np.testing.assert_array_equal(b, (layers["mean"][:, 1] + layers["mean"][:, 2]) / np.float32(2))


def test_the_resolved_precision_is_in_the_description(pair, tiny_minilm):
    f32, bf16 = pair
    assert "precision" not in f32.config_dict()  # float32 keys stay what they were
    assert bf16.config_dict()["precision"] == "bfloat16"
    assert bf16.with_options(pooling="cls").precision == "bfloat16"
    auto = TransformerEncoder(tiny_minilm.model, tiny_minilm.tokenizer, precision="auto")
    assert auto.precision == ("bfloat16" if bfloat16_is_fast("cpu") else "float32")
    assert "precision=" in repr(bf16) and "precision" not in repr(f32)


def test_auto_without_torch_agrees_with_torchs_probe():
    assert resolved_precision_without_torch("auto", "cpu") == resolve_precision("auto", "cpu")
    assert resolved_precision_without_torch("bfloat16", "cuda") == "bfloat16"
    assert resolved_precision_without_torch("auto", "cuda") is None  # uncertain: load torch


def test_bad_precisions_are_refused(tiny_minilm):
    with pytest.raises(ValueError, match="precision"):
        resolve_precision("float16", "cpu")
    with pytest.raises(ValueError, match="precision"):
        TransformerEncoder(tiny_minilm.model, tiny_minilm.tokenizer, precision="half")


def test_every_command_that_takes_a_device_takes_a_precision():
    from sentvec.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    with_device = []
    for name, sub in subparsers.choices.items():
        options = {o for a in sub._actions for o in a.option_strings}
        if "--device" in options:
            with_device.append(name)
            # export fits its whitening in float32: the precision the exported model runs in
            # sentence-transformers, TEI and infinity
            assert ("--precision" in options) == (name != "export"), name
    assert {"eval-sts", "encode", "search", "serve", "layers", "eval-rte"} <= set(with_device)


def test_eval_sts_records_and_keys_on_the_precision(tiny_minilm_dir, tmp_path, capsys):
    import json

    from _helpers import small_sts_dir

    from sentvec.cli import main

    small_data = small_sts_dir(tmp_path / "data", sts13_lines=5, stsb_lines=40)

    base = ["eval-sts", "--model", str(tiny_minilm_dir), "--tasks", "STSB", "--layers", "1,-1"]
    base += ["--data", str(small_data), "--cache-dir", str(tmp_path / "c")]
    results = {}
    for precision in ("bfloat16", "float32", "bfloat16"):
        out = tmp_path / f"{precision}.json"
        assert main([*base, "--precision", precision, "--json", str(out)]) == 0
        capsys.readouterr()
        results.setdefault(precision, []).append(json.loads(out.read_text())["metadata"])
    first, again = results["bfloat16"]
    (f32,) = results["float32"]
    assert first["precision"] == "bfloat16" and "precision" not in f32
    # float32 never reads bfloat16's cached vectors; the second bfloat16 run does
    assert not first["cache_hit"] and not f32["cache_hit"] and again["cache_hit"]


@pytest.mark.parametrize("fast", [True, False])
def test_the_cli_default_is_auto_and_keys_the_cache_as_the_encoder_does(
    fast, tiny_minilm_dir, tmp_path, capsys, monkeypatch
):
    """A command without ``--precision`` runs bfloat16 exactly where :func:`bfloat16_is_fast`
    says the CPU multiplies it; the run that keys the cache without loading torch resolves
    ``auto`` alike, so it reads the entries of the explicit precision and never the other's."""
    import json

    from _helpers import small_sts_dir

    from sentvec.cli import main
    from sentvec.encoders import transformer_files

    monkeypatch.setattr(transformer_files, "cpu_multiplies_bfloat16", lambda: fast)
    assert bfloat16_is_fast("cpu") is fast
    same, other = ("bfloat16", "float32") if fast else ("float32", "bfloat16")
    data = small_sts_dir(tmp_path / "data", sts13_lines=5, stsb_lines=40)
    base = ["eval-sts", "--model", str(tiny_minilm_dir), "--tasks", "STSB", "--layers", "1,-1"]
    base += ["--data", str(data), "--cache-dir", str(tmp_path / "c")]
    meta = []
    for extra in ([], [], ["--precision", same], ["--precision", other]):
        out = tmp_path / f"run{len(meta)}.json"
        assert main([*base, *extra, "--json", str(out)]) == 0
        capsys.readouterr()
        meta.append(json.loads(out.read_text())["metadata"])
    default, again, explicit, contrary = meta
    assert default.get("precision", "float32") == same
    assert [m["cache_hit"] for m in meta] == [False, True, True, False]


def test_precision_float32_on_the_command_line_gives_the_float32_vectors(
    tiny_minilm_dir, tmp_path, capsys
):
    from sentvec.cli import main
    from sentvec.encode_files import load_embeddings

    lines = [s for s in SENTS if s] * 3
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    enc = TransformerEncoder.from_pretrained(tiny_minilm_dir, device="cpu")
    got = {}
    for precision in ("float32", "bfloat16", None):
        out = tmp_path / f"out-{precision}"
        extra = [] if precision is None else ["--precision", precision]
        argv = ["encode", "--model", str(tiny_minilm_dir), "--input", str(path)]
        assert main([*argv, "--output", str(out), "--quiet", *extra]) == 0
        capsys.readouterr()
        got[precision] = load_embeddings(out)
    assert np.array_equal(got["float32"], enc.encode(lines))
    bf16 = TransformerEncoder.from_pretrained(tiny_minilm_dir, device="cpu", precision="bfloat16")
    assert np.array_equal(got["bfloat16"], bf16.encode(lines))
    assert np.array_equal(got[None], got[resolve_precision("auto", "cpu")])
