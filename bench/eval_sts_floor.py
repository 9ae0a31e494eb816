"""The main job against its forward-pass floor: ``sentvec eval-sts`` (Table 1 block) end to end.

Two fresh processes per repeat, alternating which goes first (medians over ``--repeats``):

* **command**: ``sentvec eval-sts --no-progress`` as a user runs it (default model minilm, the
  seven STS tasks, one forward pass per distinct sentence with CLS + mean pooling of every
  hidden state, five scored rows); wall time measured from outside, plus the command's own split
  (load, encode, scoring) parsed from its ``time:`` line;
* **floor**: the same model's forward passes alone (``model(input_ids, attention_mask,
  output_hidden_states=True)``) over exactly the padded batches sentvec builds for those
  sentences (its own token-count batching), timed around the forward calls only; no imports,
  loading, tokenisation, pooling, scoring or output in the figure. Import + model load and
  tokenisation are reported beside it.

The ratio ``command wall / floor`` says how much of the command is not the model's own
arithmetic. Usage::

    python bench/eval_sts_floor.py [--repeats 3] [--model minilm] [--batch-size 32]
                                   [--model-backend torch|onnx]

With ``--model-backend onnx`` the command runs ``--model-backend onnx`` and the floor is the ONNX
Runtime session's forward passes over the same batches (the graph exported and cached first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def _floor_child(model: str, batch_size: int, backend: str) -> None:
    t0 = time.perf_counter()
    import numpy as np
    import torch

    from sentvec.encoders import load_encoder
    from sentvec.evaluation import load_sts, unique_sentences

    enc = load_encoder(model, backend=backend)
    t_load = time.perf_counter() - t0
    sentences = unique_sentences(load_sts(variant="senteval"))
    t0 = time.perf_counter()
    ids = enc.tokenizer(
        sentences,
        add_special_tokens=True,
        truncation=True,
        max_length=enc.max_length,
        padding=False,
        return_attention_mask=False,
        return_token_type_ids=False,
    )["input_ids"]
    lengths = np.array([len(x) for x in ids])
    batches = []
    for batch in enc._batches(lengths, batch_size):  # sentvec's own batching (bench only)
        T = int(lengths[batch].max())
        input_ids = np.full((len(batch), T), enc.tokenizer.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(batch), T), dtype=np.int64)
        for r, j in enumerate(batch):
            input_ids[r, : len(ids[j])] = ids[j]
            mask[r, : len(ids[j])] = 1
        batches.append((torch.from_numpy(input_ids), torch.from_numpy(mask)))
    t_tok = time.perf_counter() - t0
    forward = 0.0
    with torch.inference_mode():
        for input_ids, mask in batches:
            t0 = time.perf_counter()
            if backend == "onnx":
                enc._onnx(input_ids.numpy(), mask.numpy(), True)  # bench only
            else:
                enc.model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    output_hidden_states=True,
                    return_dict=True,
                )
            forward += time.perf_counter() - t0
    print(
        json.dumps(
            {
                "load_s": t_load,
                "tokenize_batch_s": t_tok,
                "forward_s": forward,
                "n_sentences": len(sentences),
                "n_batches": len(batches),
            }
        )
    )


def _command(model: str, batch_size: int, backend: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "sentvec",
        "eval-sts",
        "--model",
        model,
        "--batch-size",
        str(batch_size),
        "--model-backend",
        backend,
        "--no-progress",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"eval-sts failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    m = re.search(
        r"time: load ([\d.]+) s;.*?\) ([\d.]+) s; scoring ([\d.]+) s; wall ([\d.]+) s", proc.stdout
    )
    split = (
        dict(
            zip(
                ("load_s", "encode_s", "score_s", "inner_wall_s"),
                map(float, m.groups()),
                strict=True,
            )
        )
        if m
        else {}
    )
    return {"wall_s": wall, **split}


def _floor(model: str, batch_size: int, backend: str) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "--model",
        model,
        "--batch-size",
        str(batch_size),
        "--model-backend",
        backend,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"floor child failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--model-backend", choices=("torch", "onnx"), default="torch")
    ap.add_argument("--json", default=None, help="also write the runs here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _floor_child(args.model, args.batch_size, args.model_backend)
        return 0
    runs: dict[str, list[dict]] = {"command": [], "floor": []}
    for r in range(args.repeats):
        order = [("command", _command), ("floor", _floor)]
        if r % 2:
            order.reverse()
        for name, fn in order:
            load = os.getloadavg()[0]
            res = fn(args.model, args.batch_size, args.model_backend)
            res["loadavg_1min"] = load
            runs[name].append(res)
        c, f = runs["command"][-1], runs["floor"][-1]
        print(
            f"run {r + 1}: eval-sts wall {c['wall_s']:.1f} s (load {c.get('load_s', 0):.1f}, "
            f"encode {c.get('encode_s', 0):.1f}, scoring {c.get('score_s', 0):.1f}); floor: "
            f"forward {f['forward_s']:.1f} s (import + load {f['load_s']:.1f}, tokenise + "
            f"batch {f['tokenize_batch_s']:.1f}); ratio {c['wall_s'] / f['forward_s']:.3f} "
            f"(load avg {c['loadavg_1min']:.1f} / {f['loadavg_1min']:.1f})",
            flush=True,
        )

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in runs[name] if key in x)

    ratios = [
        c["wall_s"] / f["forward_s"] for c, f in zip(runs["command"], runs["floor"], strict=True)
    ]
    print(
        f"median over {args.repeats}: eval-sts wall {med('command', 'wall_s'):.1f} s = load "
        f"{med('command', 'load_s'):.1f} + encode {med('command', 'encode_s'):.1f} + scoring "
        f"{med('command', 'score_s'):.1f} + process start/exit; forward-pass floor "
        f"{med('floor', 'forward_s'):.1f} s; RATIO command / floor "
        f"{statistics.median(ratios):.3f} (target <= 1.10)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"runs": runs, "ratios": ratios}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
