"""Tokenlearn 0.2.1, the peer of ``sentvec train-static``, run by its own functions on a local
corpus and teacher (nothing from a hub), each stage timed.

Run it with the Python of a separate virtual environment that holds tokenlearn (it pins its own
model2vec and sentence-transformers)::

    python -m venv venv-tokenlearn
    venv-tokenlearn/bin/pip install tokenlearn==0.2.1 torch==2.13.0 \\
        --extra-index-url https://download.pytorch.org/whl/cpu
    venv-tokenlearn/bin/python bench/tokenlearn_peer.py --teacher MINILM_DIR \\
        --corpus enwiki-2015-sentences-1M.txt.xz --sentences 50000 --out tl50k

``MINILM_DIR`` is a sentence-transformers directory of all-MiniLM-L6-v2 (sentvec's ``minilm``
alias resolves to one: ``python -c "from sentvec.encoders.models import resolve_model;
print(resolve_model('minilm'))"``). The stages are what tokenlearn's own ``featurize`` and
``train`` commands do: ``featurize`` (the teacher's mean vector of each sentence, batch 32,
float32), ``create_vocab`` (56,000 corpus words by default), Model2Vec's ``distill`` with that
vocabulary and PCA to 256, ``train_model`` (AdamW, early stopping). Writes ``OUT/model`` (a
Model2Vec directory) and ``OUT/timings.json``; score the model with
``python bench/train_static.py --score-only OUT/model --test --out OUT/score``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--teacher", required=True, help="sentence-transformers model directory")
    ap.add_argument("--corpus", required=True, help="one sentence per line (.xz or plain)")
    ap.add_argument("--sentences", type=int, default=50_000)
    ap.add_argument("--vocab-size", type=int, default=56_000, help="tokenlearn's default")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = Path(args.out)
    t0 = time.perf_counter()
    import numpy as np
    from model2vec.distill import distill
    from sentence_transformers import SentenceTransformer
    from tokenlearn.featurize import featurize
    from tokenlearn.train import train_model
    from tokenlearn.utils import collect_means_and_texts, create_vocab

    opener = lzma.open if args.corpus.endswith(".xz") else open
    lines: list[str] = []
    with opener(args.corpus, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines.append(line.strip())
            if len(lines) >= args.sentences:
                break
    t_read = time.perf_counter()
    model = SentenceTransformer(args.teacher, device="cpu")
    feats = out / "features"
    featurize(
        iter({"text": t} for t in lines),
        model,
        str(feats),
        max_means=args.sentences,
        batch_size=32,
        text_key="text",
    )
    t_feat = time.perf_counter()
    texts, vecs = collect_means_and_texts(sorted(feats.glob("*.json")))
    vocab = create_vocab(texts=texts, vocab_size=args.vocab_size) if args.vocab_size else None
    static = distill(
        model_name=args.teacher,
        quantize_to="float32",
        vocabulary=vocab,
        pca_dims=256,
        trust_remote_code=True,
    )
    t_distill = time.perf_counter()
    static = train_model(static, texts, np.asarray(vecs), device="cpu", pca_dims=256)
    t_train = time.perf_counter()
    static.save_pretrained(str(out / "model"))
    timings = {
        "sentences": len(texts),
        "vocab_size": args.vocab_size,
        "read_s": t_read - t0,
        "featurize_s": t_feat - t_read,
        "distill_s": t_distill - t_feat,
        "train_s": t_train - t_distill,
        "total_s": time.perf_counter() - t0,
    }
    (out / "timings.json").write_text(json.dumps(timings, indent=1))
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
