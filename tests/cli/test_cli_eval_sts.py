"""Tests of ``sentvec eval-sts`` through ``sentvec.cli.main``.

A small data tree (the first 60 STS-B test pairs and 60 SICK test pairs, copied from the packaged
SentEval files) and the 2-layer MiniLM keep every run to a few seconds. Scores are checked
against an independent recomputation: scipy's Spearman of numpy cosines of ``encode`` vectors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
from scipy.stats import spearmanr  # noqa: E402

from sentvec._data import PACKAGE_DATA_DIR  # noqa: E402
from sentvec.cli import main  # noqa: E402

N_PAIRS = 40


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("sts-data")
    src = PACKAGE_DATA_DIR / "downstream"
    stsb = (src / "STS/STSBenchmark/sts-test.csv").read_text(encoding="utf-8").splitlines(True)
    sick = (src / "SICK/SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines(True)
    (root / "downstream/STS/STSBenchmark").mkdir(parents=True)
    (root / "downstream/SICK").mkdir(parents=True)
    (root / "downstream/STS/STSBenchmark/sts-test.csv").write_text(
        "".join(stsb[:N_PAIRS]), encoding="utf-8"
    )
    (root / "downstream/SICK/SICK_test_annotated.txt").write_text(
        "".join(sick[: N_PAIRS + 1]), encoding="utf-8"
    )
    return root


@pytest.fixture
def use_tiny(monkeypatch, tiny_minilm):
    """Make --model resolve to the session's 2-layer MiniLM (no reload per test)."""
    import sentvec.encoders.loading as mod

    calls = []

    def fake_load(model, **overrides):
        calls.append((model, {k: v for k, v in overrides.items() if v is not None}))
        opts = {k: v for k, v in overrides.items() if v is not None}
        return tiny_minilm.with_options(**opts) if opts else tiny_minilm

    monkeypatch.setattr(mod, "load_encoder", fake_load)
    return calls


def _pairs(small_data, task):
    from sentvec.evaluation import load_sts

    (t,) = load_sts(task, data_dir=small_data)
    sub = t.subsets[0]
    return list(sub.sent1), list(sub.sent2), sub.gold


def _oracle(encoder, small_data, tasks):
    """Spearman x 100 per task from encode() vectors, float64 cosines, scipy."""
    pairs = {t: _pairs(small_data, t) for t in tasks}
    sentences = sorted({s for a, b, _ in pairs.values() for s in a + b})
    X = encoder.encode(sentences).astype(np.float64)  # float64: CLS cosines here are ~1 - 1e-7
    row = {s: i for i, s in enumerate(sentences)}
    out = {}
    for t, (a, b, gold) in pairs.items():
        A, B = X[[row[s] for s in a]], X[[row[s] for s in b]]
        cos = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
        out[t] = 100 * spearmanr(cos, gold).statistic
    return out


def _table_rows(out):
    """label -> list of cells of the plain-text table."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Model"))
    header = lines[start].split()
    assert header == ["Model", "STSB", "SICK", "STS12", "STS13", "STS14", "STS15", "STS16", "Avg"]
    rows = {}
    for ln in lines[start + 1 :]:
        if not ln.strip():
            break
        cells = ln.split()
        rows[" ".join(cells[:-8])] = cells[-8:]
    return rows


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_table1_block(small_data, use_tiny, tiny_minilm, capsys, tmp_path):
    out_json = tmp_path / "t1.json"
    code = main(
        ["eval-sts", "--tasks", "STSB,SICK", "--data", str(small_data), "--json", str(out_json)]
        + ["--precision", "float32"]  # the oracle below encodes in float32
    )
    assert code == 0
    assert use_tiny == [("minilm", {"precision": "float32"})]  # default model
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert list(rows) == ["CLS L2", "AVG L2", "AVG L1", "AVG L1+L2", "AVG L1+L2 + whitening"]
    for cells in rows.values():
        assert cells[2:7] == ["-"] * 5
        stsb, sick, avg = float(cells[0]), float(cells[1]), float(cells[7])
        assert avg == pytest.approx((stsb + sick) / 2, abs=0.006)
    assert f"STSB {N_PAIRS}, SICK {N_PAIRS}" in out and "text: senteval" in out
    assert "aggregation: mean" in out and re.search(r"wall \d+\.\d s", out)
    # independent oracle for the unwhitened rows
    for label, opts in [
        ("CLS L2", dict(pooling="cls", layers=(-1,))),
        ("AVG L2", dict(layers=(-1,))),
        ("AVG L1", dict(layers=(1,))),
        ("AVG L1+L2", dict(layers=(1, -1))),
    ]:
        want = _oracle(
            tiny_minilm.with_options(**opts), small_data, ["STSBenchmark", "SICKRelatedness"]
        )
        assert float(rows[label][0]) == pytest.approx(want["STSBenchmark"], abs=0.006)
        assert float(rows[label][1]) == pytest.approx(want["SICKRelatedness"], abs=0.006)
    data = json.loads(out_json.read_text())
    assert data["mode"] == "table1" and len(data["rows"]) == 5
    assert data["n_pairs"] == {"STSBenchmark": N_PAIRS, "SICKRelatedness": N_PAIRS}
    white = data["rows"][4]["result"]
    assert (
        white["whitening"]["mode"] == "year"
        and white["whitening"]["fit_sizes"]["STSBenchmark"] == 2 * N_PAIRS
    )
    assert data["rows"][0]["result"]["metadata"]["pooling"] == "cls"
    assert float(rows["AVG L1+L2 + whitening"][0]) == pytest.approx(
        white["task_scores"]["STSBenchmark"], abs=0.006
    )


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_single_configuration_matches_table_row(small_data, use_tiny, capsys, tmp_path):
    args = ["eval-sts", "--tasks", "stsb,sick", "--data", str(small_data)]
    assert main(args) == 0
    table = _table_rows(capsys.readouterr().out)
    out_json = tmp_path / "one.json"
    assert main(args + ["--pooling", "cls", "--layers", "-1", "--json", str(out_json)]) == 0
    assert use_tiny[-1][1] == {"pooling": "cls", "layers": (-1,), "precision": "auto"}
    rows = _table_rows(capsys.readouterr().out)
    assert list(rows) == ["CLS L2"]
    assert rows["CLS L2"] == table["CLS L2"]
    res = json.loads(out_json.read_text())
    assert res["metadata"]["pooling"] == "cls" and res["whitening"]["mode"] == "none"
    assert main(args + ["--layers", "1,-1", "--whiten", "year"]) == 0
    rows = _table_rows(capsys.readouterr().out)
    assert rows == {"AVG L1+L2 + whitening": table["AVG L1+L2 + whitening"]}


def test_whiten_with_corpus_file_and_saved_whitening(
    small_data, use_tiny, tiny_minilm, capsys, tmp_path
):
    from sentvec.evaluation import load_sts, score_sts, unique_sentences
    from sentvec.whitening import Whitening

    corpus = (
        (PACKAGE_DATA_DIR / "corpus/enwiki-2015-sentences-sample10k.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:80]
    )
    path = tmp_path / "corpus.txt"
    path.write_text(
        "\n".join(corpus[:40]) + "\n\n" + "\n".join(corpus[40:]) + "\n", encoding="utf-8"
    )
    out_json = tmp_path / "w.json"
    args = ["eval-sts", "--tasks", "STSB", "--data", str(small_data), "--layers", "1,-1"]
    args += ["--precision", "float32"]  # the oracle below encodes in float32
    assert (
        main(args + ["--whiten", str(path), "--n-components", "16", "--json", str(out_json)]) == 0
    )
    rows = _table_rows(capsys.readouterr().out)
    assert list(rows) == ["AVG L1+L2 + whitening (k=16)"]
    res = json.loads(out_json.read_text())
    assert res["whitening"]["mode"] == "corpus" and res["whitening"]["fit_size"] == 80
    assert res["metadata"]["whitening_corpus_blank_lines_skipped"] == 1
    # oracle: fit on the encoded corpus, score the STS-B vectors
    w = Whitening(16).fit(tiny_minilm.encode(corpus))
    tasks = load_sts("STSBenchmark", data_dir=small_data)
    sents = unique_sentences(tasks)
    want = score_sts(tasks, sents, tiny_minilm.encode(sents), whitening=w)
    assert float(rows["AVG L1+L2 + whitening (k=16)"][0]) == pytest.approx(want.average, abs=0.006)
    # the same transform saved to a directory gives the same row
    w.save(tmp_path / "wdir")
    assert main(args + ["--whiten", str(tmp_path / "wdir")]) == 0
    rows2 = _table_rows(capsys.readouterr().out)
    assert list(rows2.values()) == list(rows.values())
    # and so does a saved pipeline holding it (as `encode --whitening` accepts)
    from sentvec.encoders import Pipeline

    Pipeline(tiny_minilm, w).save(tmp_path / "pipe")
    assert main(args + ["--whiten", str(tmp_path / "pipe")]) == 0
    assert list(_table_rows(capsys.readouterr().out).values()) == list(rows.values())


def test_errors_exit_2_with_a_message(small_data, use_tiny, capsys, tmp_path):
    base = ["eval-sts", "--tasks", "STSB", "--data", str(small_data)]
    assert main(base + ["--whiten", str(tmp_path / "missing.txt")]) == 2
    assert "not 'none', 'year', an existing text file" in capsys.readouterr().err
    assert main(base + ["--layers", "1", "--n-components", "8"]) == 2
    assert "--n-components needs" in capsys.readouterr().err
    assert main(base + ["--layers", "1,7"]) == 2
    assert "valid hidden_states indices are -3..2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(base + ["--pooling", "avg"])
    assert "invalid choice: 'avg'" in capsys.readouterr().err


def test_model_path_is_resolved_for_real(small_data, tiny_minilm_dir, tmp_path, capsys):
    base = ["eval-sts", "--tasks", "STSB", "--data", str(small_data)]
    assert main(base + ["--model", str(tmp_path / "no-such-model")]) == 2
    assert "not found" in capsys.readouterr().err
    model = ["--model", str(tiny_minilm_dir), "--layers=-1", "--markdown"]
    assert main(base + model + ["--precision", "float32"]) == 0
    out = capsys.readouterr().out
    assert "| Model | STSB | SICK |" in out and "| AVG  L2 |" in out
    assert "(2 layers x 384, float32)" in out  # the size and the precision that ran
    assert main(base + model + ["--precision", "bfloat16"]) == 0
    assert "(2 layers x 384, bfloat16)" in capsys.readouterr().out


def test_n_components_above_the_width_fails_before_encoding(
    small_data, use_tiny, tiny_minilm, monkeypatch, capsys
):
    from sentvec.encoders.transformer import TransformerEncoder
    from sentvec.evaluation.layers import analyze_layers

    def no_forward(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    monkeypatch.setattr(TransformerEncoder, "_run", no_forward)
    d = tiny_minilm.get_sentence_embedding_dimension()
    base = ["eval-sts", "--tasks", "STSB", "--data", str(small_data)]
    for extra in (["--layers", "1", "--whiten", "year"], []):  # one configuration; Table 1
        assert main(base + extra + ["--n-components", str(d + 1)]) == 2
        assert f"the vectors have {d} dimensions" in capsys.readouterr().err
    with pytest.raises(ValueError, match=f"have {d} dimensions"):
        analyze_layers(tiny_minilm, n_components=d + 1)
    with pytest.raises(ValueError, match="whitening='white'"):
        analyze_layers(tiny_minilm, whitening="white")


# ------------------------------------------------------------------ the pooled-vector cache
@pytest.fixture(autouse=True)
def _private_cache(monkeypatch, tmp_path):
    """Every run of this module caches under the test's own directory, never ~/.cache."""
    monkeypatch.setenv("SENTVEC_CACHE", str(tmp_path / "default-cache"))


def _forward_passes(monkeypatch):
    """Count the transformer forward-pass batches (TransformerEncoder._run calls)."""
    from sentvec.encoders.transformer import TransformerEncoder

    calls = []
    real = TransformerEncoder._run

    def counted(self, *args, **kwargs):
        calls.append(len(args[0]))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(TransformerEncoder, "_run", counted)
    return calls


def _without_timing(data):
    """A JSON result without its wall times and cache flag (everything else must be equal)."""
    if isinstance(data, dict):
        return {
            k: _without_timing(v) for k, v in data.items() if k not in ("timing_s", "cache_hit")
        }
    if isinstance(data, list):
        return [_without_timing(v) for v in data]
    return data


def _table_text(out):
    """The printed table (header lines and rows), without the timing line."""
    return [ln for ln in out.splitlines() if not ln.startswith(("time:", "wrote "))]


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_second_run_reads_the_cache_and_prints_a_bit_identical_table(
    small_data, use_tiny, monkeypatch, capsys, tmp_path
):
    passes = _forward_passes(monkeypatch)
    base = ["eval-sts", "--tasks", "STSB,SICK", "--data", str(small_data)]
    corpus = tmp_path / "corpus.txt"
    lines = (PACKAGE_DATA_DIR / "corpus/enwiki-2015-sentences-sample10k.txt").read_text(
        encoding="utf-8"
    )
    corpus.write_text("\n".join(lines.splitlines()[:60]) + "\n", encoding="utf-8")
    configs = [
        [],  # the Table 1 block
        ["--layers", "1,-1", "--whiten", "year", "--n-components", "16"],
        ["--layers", "1", "--whiten", str(corpus), "--postprocess", "abtt"],
    ]
    for i, extra in enumerate(configs):
        cache = ["--cache-dir", str(tmp_path / f"cache{i}")]
        runs = {}
        names = [("cold", cache), ("cached", cache)] + [("no-cache", ["--no-cache"])] * (i == 0)
        for name, opts in names:
            n_before = len(passes)
            out_json = tmp_path / f"{name}.json"
            assert main(base + extra + opts + ["--json", str(out_json)]) == 0, extra
            out = capsys.readouterr().out
            runs[name] = (_table_text(out), json.loads(out_json.read_text()), out)
            ran = len(passes) > n_before
            # the first run and --no-cache compute; the second reads every vector from disk
            assert ran == (name != "cached"), (extra, name)
        cold, cached = runs["cold"], runs["cached"]
        fresh = runs.get("no-cache", cold)
        assert "vectors from the cache" in cached[2] and "from the cache" not in cold[2]
        assert cached[0] == cold[0] == fresh[0]  # the printed table, digit for digit
        # every score, bit for bit (JSON floats round-trip exactly)
        assert _without_timing(cached[1]) == _without_timing(cold[1]) == _without_timing(fresh[1])
        if extra:
            assert cached[1]["metadata"]["cache_hit"] and not cold[1]["metadata"]["cache_hit"]
        else:
            assert cached[1]["cache_hit"] and not cold[1]["cache_hit"]
    assert not list((tmp_path / "default-cache").rglob("*.npy"))  # --cache-dir was used
    # the Table 1 run's entries (cls and mean pooling) serve every other configuration
    n_before = len(passes)
    cls_last = ["--pooling", "cls", "--layers=-1", "--aggregation", "all"]
    assert main(base + cls_last + ["--cache-dir", str(tmp_path / "cache0")]) == 0
    assert len(passes) == n_before and "vectors from the cache" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_eval_sts_reuses_the_vectors_of_a_layers_run(
    small_data, tiny_minilm_dir, monkeypatch, tmp_path, capsys
):
    """Same key as ``sentvec layers``: its per-layer vectors serve eval-sts, and the score of a
    combination is the one ``layers`` printed."""
    from sentvec.encoders.transformer import TransformerEncoder

    common = ["--tasks", "STSB,SICK", "--data", str(small_data), "--cache-dir", str(tmp_path / "c")]
    model = ["--model", str(tiny_minilm_dir)]
    assert main(["layers", *model, "--out", str(tmp_path / "o"), "--max-combination", "0",
                 "--quiet", *common]) == 0  # fmt: skip
    capsys.readouterr()
    analysis = json.loads((tmp_path / "o/model-mean-layers.json").read_text())
    pair = next(p for p in analysis["pairs"] if p["layers"] == [1, 2] and p["whitening"] == "none")

    def no_forward(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    monkeypatch.setattr(TransformerEncoder, "_run", no_forward)
    out_json = tmp_path / "e.json"
    assert main(["eval-sts", *model, "--layers", "1,-1", "--json", str(out_json), *common]) == 0
    assert "vectors from the cache" in capsys.readouterr().out
    assert json.loads(out_json.read_text())["average"] == pair["average"]


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_a_cache_hit_never_loads_the_model_and_changed_weights_miss(
    small_data, tiny_minilm_dir, monkeypatch, tmp_path, capsys
):
    """The Table 1 block's second run reads the key from the model files (no model load, no
    forward pass) and prints the cold run's table bit for bit; weights rewritten with the same
    size and modification time are a miss, never the old vectors."""
    import os
    import shutil

    import sentvec.cache_keys as cache_keys_mod
    import sentvec.encoders.loading as mod

    monkeypatch.setattr(cache_keys_mod, "_RACY_NS", 0)  # the copied files' status is fresh
    model = tmp_path / "model"
    shutil.copytree(tiny_minilm_dir, model)
    real_load = mod.load_encoder
    loads = []

    def counted(name, **overrides):
        loads.append(name)
        return real_load(name, **overrides)

    monkeypatch.setattr(mod, "load_encoder", counted)
    base = ["eval-sts", "--model", str(model), "--tasks", "STSB,SICK", "--data", str(small_data)]
    base += ["--cache-dir", str(tmp_path / "c")]
    runs = []
    for _ in range(2):
        out_json = tmp_path / f"r{len(runs)}.json"
        assert main(base + ["--json", str(out_json)]) == 0
        runs.append((_table_text(capsys.readouterr().out), json.loads(out_json.read_text())))
    assert loads == [str(model)]  # the second run did not load the model
    assert runs[1][1]["cache_hit"] and not runs[0][1]["cache_hit"]
    assert runs[1][0] == runs[0][0]
    assert _without_timing(runs[1][1]) == _without_timing(runs[0][1])
    # one configuration: the Table 1 run's entries serve it without loading the model either,
    # and it prints what a run that loads the model and encodes prints
    one = ["--layers", "1,-1", "--whiten", "year", "--n-components", "16"]
    assert main(base + one) == 0
    hit_out = capsys.readouterr().out
    assert loads == [str(model)] and "vectors from the cache" in hit_out
    assert main(base + one + ["--no-cache"]) == 0
    assert loads == [str(model)] * 2
    assert _table_text(hit_out) == _table_text(capsys.readouterr().out)
    # a corpus FILE for the whitening: its vectors are cached by the first run of it
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a man plays a guitar .\nthe cat sat .\nit rains .\n" * 10)
    one = ["--layers", "1", "--whiten", str(corpus), "--n-components", "8"]
    outs = []
    for _ in range(2):
        assert main(base + one) == 0
        outs.append(capsys.readouterr().out)
    assert loads == [str(model)] * 3 and "vectors from the cache" in outs[1]
    assert _table_text(outs[1]) == _table_text(outs[0])
    # one weight byte changed; size and modification time restored
    weights = model / "model.safetensors"
    st = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert main(base) == 0
    assert loads == [str(model)] * 4 and "vectors from the cache" not in capsys.readouterr().out


def test_a_model_without_layers_is_labelled_by_its_name(small_data, capsys):
    """A Sent2Vec or static model has no pooling or layers to name: the row names the model as
    the user gave it, not the encoder class."""
    model = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
    base = ["eval-sts", "--tasks", "STSB", "--data", str(small_data), "--no-cache"]
    assert main(base + ["--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert list(_table_rows(out)) == ["tiny-bigram.bin"]
    assert "model: " in out and "tiny-bigram.bin" in out.split("model: ")[1].splitlines()[0]


@pytest.mark.filterwarnings("ignore:score_sts. year whitening")
def test_a_run_over_fewer_tasks_is_served_by_the_cache_of_a_run_over_more(
    small_data, tiny_minilm_dir, monkeypatch, tmp_path, capsys
):
    """The Table 1 block over two tasks caches every vector that one configuration, or the
    block, over one of them needs: neither runs the model, and each prints what a run without
    the cache prints."""
    from sentvec.encoders.transformer import TransformerEncoder

    passes = _forward_passes(monkeypatch)
    counted = TransformerEncoder._run
    model = ["--model", str(tiny_minilm_dir), "--data", str(small_data)]
    cache = ["--cache-dir", str(tmp_path / "c")]
    assert main(["eval-sts", *model, "--tasks", "STSB,SICK", *cache]) == 0
    capsys.readouterr()

    def no_forward(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    for extra in (["--layers", "1,-1", "--whiten", "year"], []):
        args = ["eval-sts", *model, "--tasks", "SICK", *extra]
        monkeypatch.setattr(TransformerEncoder, "_run", no_forward)
        assert main([*args, *cache]) == 0, extra
        hit_out = capsys.readouterr().out
        assert "vectors from the cache" in hit_out, extra
        monkeypatch.setattr(TransformerEncoder, "_run", counted)
        n_before = len(passes)
        assert main([*args, "--no-cache"]) == 0
        assert len(passes) > n_before  # the reference run computes
        assert _table_text(hit_out) == _table_text(capsys.readouterr().out), extra


def test_a_cache_entry_changed_in_place_is_recomputed_with_one_warning(
    small_data, tiny_minilm_dir, monkeypatch, tmp_path, capsys
):
    """An entry's .npy changed in place (one value of the hidden state the Table 1 block reads,
    same size, same modification time) is not served: one warning, the cold run's table."""
    import os
    import warnings

    import sentvec.cache_keys as cache_keys_mod
    from sentvec.exceptions import CacheWarning

    monkeypatch.setattr(cache_keys_mod, "_RACY_NS", 0)
    base = ["eval-sts", "--model", str(tiny_minilm_dir), "--tasks", "STSB", "--data"]
    base += [str(small_data), "--cache-dir", str(tmp_path / "c"), "--no-progress"]
    assert main(base) == 0
    cold = _table_text(capsys.readouterr().out)
    npy = sorted((tmp_path / "c" / "vectors").glob("*.npy"))[0]
    stack = np.load(npy, mmap_mode="r")
    offset = os.path.getsize(npy) - stack.nbytes + (stack.shape[0] - 1) * stack[0].nbytes
    value = np.float32(stack[-1, 0, 0])
    del stack
    st = npy.stat()
    with open(npy, "r+b") as fh:  # the last hidden state's first value, nudged
        fh.seek(offset)
        fh.write(np.float32(value + np.float32(0.25)).tobytes())
    os.utime(npy, ns=(st.st_atime_ns, st.st_mtime_ns))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # as the command line shows them
        assert main(base) == 0
    damaged = [w for w in seen if issubclass(w.category, CacheWarning)]
    assert len(damaged) == 1, [str(w.message) for w in damaged]
    assert "does not match its SHA-256" in str(damaged[0].message)
    assert _table_text(capsys.readouterr().out) == cold
