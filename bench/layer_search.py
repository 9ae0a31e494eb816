"""Cost of the all-pairs layer search relative to evaluating one configuration.

Measured in the same run, each command in a fresh process with its own empty cache directory
(cold cache), ``--repeat`` times in alternating order (A B, B A, ...; use an even count so a
load drift on a shared machine cancels):

* peer:   ``sentvec eval-sts --model M --layers 1,-1 --whiten year --json ...``
          (one configuration: one forward pass + one scoring);
* search: ``sentvec layers --model M --max-combination 0``
          (one forward pass keeping every hidden state + every pair (i, j), i <= j, scored
          without and with per-year whitening: 2 x K(K+1)/2 scorings).

Prints both wall times and CPU times (user + system of the child process; less sensitive to
other load on a shared machine), their ratios (target <= 1.15), the layer run's own split
(vectors / pair scoring), then the per-call cost of ``score_sts`` (none / year) on the cached
vectors of the last run. Usage::

    python bench/layer_search.py [--model minilm] [--repeat 2] [--tasks STS12,...]
                                 [--record runs.jsonl]

Single runs on a shared 2-core machine spread widely (the forward pass alone, the same work in
both commands, varies by several seconds between processes), so the printout also gives a 95%
confidence interval of the mean per-run ratio (Student t). ``--record FILE`` appends every run
(wall, CPU, git revision) as a JSON line and prints the same statistics over all runs recorded
in that file for the current revision, to pool several benches.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(cmd: list[str], cache: Path) -> tuple[float, float]:
    """Run ``cmd`` with its own cache; return (wall seconds, CPU seconds user + system)."""
    env = dict(os.environ, SENTVEC_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _score_costs(model: str, tasks: list[str] | None, cache: Path, repeat: int = 3) -> str:
    os.environ["SENTVEC_CACHE"] = str(cache)
    from sentvec.cache import VectorCache, pooled_layer_vectors
    from sentvec.encoders import load_encoder
    from sentvec.evaluation import load_sts, unique_sentences
    from sentvec.evaluation.layers import CombinationScorer

    enc = load_encoder(model)
    task_list = load_sts(tasks)
    sents = unique_sentences(task_list)
    vecs, hit, _ = pooled_layer_vectors(
        enc,
        sents,
        pooling="mean",
        cache=VectorCache(cache),
        text_variant=task_list[0].variant,
        show_progress_bar=False,
    )
    import warnings

    warnings.simplefilter("ignore", UserWarning)  # singular single layers: counted, not news
    out = []
    # load the compiled kernels first: their one-off start-up is not a per-combination cost
    CombinationScorer(vecs["mean"], task_list, sents, n_jobs=1).score(1, "year")
    for w in ("none", "year"):
        for n_jobs in (1, None):
            sc = CombinationScorer(vecs["mean"], task_list, sents, n_jobs=n_jobs)
            combos = [(1, 6), (0, 6), (2, 5), (1, 2, 6)][: repeat + 1]
            t0 = time.perf_counter()
            sc.score_many(combos, w)
            per = (time.perf_counter() - t0) / len(combos)
            out.append(
                f"score_sts whitening={w:<4} n_jobs={sc.n_jobs}: {per:.3f} s per "
                f"combination (mean of {len(combos)})"
            )
    return "\n".join(out) + ("" if hit else "\n(note: vectors were recomputed)")


def _interval(ratios: list[float]) -> str:
    """Mean of the per-run ratios with its 95% Student-t confidence interval."""
    from scipy.stats import t as student_t

    m = statistics.fmean(ratios)
    if len(ratios) < 2:
        return f"{m:.3f}"
    half = student_t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
    return f"{m:.3f} (95% CI {m - half:.3f} .. {m + half:.3f}, n={len(ratios)})"


def _summary(peers: list[tuple[float, float]], searches: list[tuple[float, float]]) -> str:
    wall = [s[0] / p[0] for s, p in zip(searches, peers, strict=True)]
    cpu = [s[1] / p[1] for s, p in zip(searches, peers, strict=True)]
    return (
        f"ratio of the means {statistics.fmean(s[0] for s in searches) / statistics.fmean(p[0] for p in peers):.3f} wall, "
        f"{statistics.fmean(s[1] for s in searches) / statistics.fmean(p[1] for p in peers):.3f} CPU; "
        f"mean per-run ratio: wall {_interval(wall)}, CPU {_interval(cpu)}; "
        f"median {statistics.median(wall):.3f} wall, {statistics.median(cpu):.3f} CPU"
    )


def _revision() -> str:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _record(
    path: Path, model: str, peers: list[tuple[float, float]], searches: list[tuple[float, float]]
) -> str:
    """Append this bench's runs to ``path``; statistics over all its runs of this revision."""
    rev = _revision()
    with path.open("a", encoding="utf-8") as fh:
        for (pw, pc), (sw, sc) in zip(peers, searches, strict=True):
            fh.write(
                json.dumps(
                    {
                        "revision": rev,
                        "model": model,
                        "eval_sts_wall": pw,
                        "eval_sts_cpu": pc,
                        "layers_wall": sw,
                        "layers_cpu": sc,
                    }
                )
                + "\n"
            )
    runs = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    runs = [r for r in runs if r.get("revision") == rev and r.get("model") == model]
    return f"all {len(runs)} runs recorded in {path} for revision {rev}: " + _summary(
        [(r["eval_sts_wall"], r["eval_sts_cpu"]) for r in runs],
        [(r["layers_wall"], r["layers_cpu"]) for r in runs],
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument(
        "--whiten",
        default="year",
        choices=("none", "year"),
        help="whitening of the eval-sts peer (default year)",
    )
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tasks", default=None, help="comma-separated STS tasks (default all)")
    ap.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="append the runs to this JSON-lines file and summarise all of its runs "
        "of the current git revision",
    )
    args = ap.parse_args()
    py = [sys.executable, "-m", "sentvec"]
    task_args = ["--tasks", args.tasks] if args.tasks else []
    peers, searches, splits = [], [], []
    with tempfile.TemporaryDirectory(prefix="sentvec-bench-") as tmp:
        root = Path(tmp)
        last_cache = root
        for r in range(args.repeat):
            peer_cache, search_cache = root / f"peer{r}", root / f"search{r}"
            out = root / f"layers{r}"
            peer_cmd = py + [
                "eval-sts",
                "--model",
                args.model,
                "--layers",
                "1,-1",
                "--whiten",
                args.whiten,
                "--json",
                str(root / f"peer{r}.json"),
                *task_args,
            ]
            search_cmd = py + [
                "layers",
                "--model",
                args.model,
                "--max-combination",
                "0",
                "--out",
                str(out),
                "--quiet",
                *task_args,
            ]
            # A-B, B-A, A-B, ...: a load drift on the shared machine cancels over pairs of runs
            if r % 2 == 0:
                peers.append(_run(peer_cmd, peer_cache))
                searches.append(_run(search_cmd, search_cache))
            else:
                searches.append(_run(search_cmd, search_cache))
                peers.append(_run(peer_cmd, peer_cache))
            data = json.loads(next(out.glob("*-layers.json")).read_text())
            splits.append(data["timings"])
            last_cache = search_cache
            peer_t = json.loads((root / f"peer{r}.json").read_text())["metadata"].get(
                "timing_s", {}
            )
            lt = data["timings"]
            print(
                "  eval-sts own split: "
                + ", ".join(f"{k} {v:.1f} s" for k, v in peer_t.items())
                + f"; layers own split: vectors {lt['forward_s']:.1f} s, pairs "
                f"{lt['pairs_s']:.1f} s, total before plots {lt['total_s']:.1f} s",
                flush=True,
            )
            (pw, pc), (sw, sc) = peers[-1], searches[-1]
            print(
                f"run {r + 1}: eval-sts {pw:.1f} s wall / {pc:.1f} s CPU; layers (all pairs) "
                f"{sw:.1f} s wall / {sc:.1f} s CPU; ratio {sw / pw:.2f} wall, "
                f"{sc / pc:.2f} CPU",
                flush=True,
            )
        t = splits[-1]
        n_pairs = len(data["pairs"])
        pw = statistics.fmean(p[0] for p in peers)
        pc = statistics.fmean(p[1] for p in peers)
        sw = statistics.fmean(s[0] for s in searches)
        sc = statistics.fmean(s[1] for s in searches)
        print(
            f"\nmodel {args.model}: {data['n_hidden_states']} hidden states, "
            f"{data['n_sentences']} sentences, {n_pairs} pair scorings (none + year)"
        )
        print(
            f"eval-sts --layers 1,-1 --whiten {args.whiten}: mean {pw:.1f} s wall, {pc:.1f} s CPU"
        )
        print(
            f"layers --max-combination 0:               mean {sw:.1f} s wall, "
            f"{sc:.1f} s CPU (last run: vectors {t['forward_s']:.1f} s, pair scoring "
            f"{t['pairs_s']:.1f} s)"
        )
        print(
            f"RATIO search / one configuration = {sw / pw:.2f} wall, {sc / pc:.2f} CPU "
            f"(means over {args.repeat} runs in alternating order; target <= 1.15)"
        )
        print(_summary(peers, searches))
        if args.record is not None:
            print(_record(args.record, args.model, peers, searches))
        print(_score_costs(args.model, args.tasks.split(",") if args.tasks else None, last_cache))


if __name__ == "__main__":
    main()
