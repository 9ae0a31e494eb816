"""thread=1 training trains the same bits whether its kernels were just compiled or loaded from
numba's on-disk cache (issue 21: with ``fastmath`` kernels the two processes differed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sentvec

SAMPLE = Path(__file__).parent / "data" / "sent2vec-reference" / "train-sample.txt"

# trains in a fresh interpreter; prints the matrices' digest, the loss and whether the job loop
# of the target update was compiled in this process or loaded from the cache
_CHILD = """
import hashlib, json, sys
from sentvec.sent2vec import kernels
from sentvec.sent2vec.trainer import Sent2VecTrainer

tr = Sent2VecTrainer(dim=16, bucket=2000, min_count=2, min_count_label=2, neg=5, dropout_k=2,
                     epoch=1, thread=1, update="target", show_progress_bar=False)
m = tr.fit(sys.argv[1])
st = kernels._JOBS["fast"].stats
print(json.dumps({"digest": hashlib.sha256(m.input_matrix.tobytes()
                                           + m.output_matrix.tobytes()).hexdigest(),
                  "loss": tr.report_.epochs[-1].loss,
                  "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values())}))
"""


def _train(corpus: Path, cache: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(Path(sentvec.__file__).parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(corpus)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_compiled_and_cache_loaded_kernels_train_the_same_bits(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[:800]) + "\n",
                      encoding="utf-8")
    cache = tmp_path / "numba-cache"
    cold = _train(corpus, cache)  # empty cache: compiles the kernels (and fills the cache)
    warm = _train(corpus, cache)  # loads them from the cache
    assert cold["misses"] > 0 and cold["hits"] == 0
    assert warm["hits"] > 0 and warm["misses"] == 0
    assert warm["digest"] == cold["digest"]
    assert warm["loss"] == cold["loss"]
