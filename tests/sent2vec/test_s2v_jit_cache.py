"""thread=1 training trains the same bits whether its kernels were just compiled in this process,
compiled by the child process a first run starts for the training loop, or loaded from numba's
on-disk cache (with ``fastmath`` kernels a compiling and a loading process differed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sentvec

SAMPLE = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt"

# trains in a fresh interpreter; prints the matrices' digest, the loss and whether the job loop
# of the target update was compiled in this process or loaded from the cache
_CHILD = """
import hashlib, json, subprocess, sys
import sentvec._jit
from sentvec.sent2vec import kernels
if sys.argv[2] == "broken-child":  # the compile child starts but fails: the parent compiles
    sentvec._jit.compile_in_child = lambda code: subprocess.Popen(
        [sys.executable, "-c", "raise SystemExit(3)"])
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


def _train(corpus: Path, cache: Path, child: str) -> dict:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(cache),
        "SENTVEC_COMPILE_CHILD": "0" if child == "none" else "1",
        "PYTHONPATH": os.pathsep.join(
            [str(Path(sentvec.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
        ),
    }
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(corpus), child],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_compiled_and_cache_loaded_kernels_train_the_same_bits(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[:800]) + "\n", encoding="utf-8"
    )
    # empty cache, the compile child fails: this process compiles the kernels itself
    here = _train(corpus, tmp_path / "cache-a", "broken-child")
    # empty cache, a working child compiles the training loop; this process loads it
    child = _train(corpus, tmp_path / "cache-b", "child")
    warm = _train(corpus, tmp_path / "cache-b", "none")  # everything from the cache
    assert here["misses"] > 0 and here["hits"] == 0
    assert child["hits"] > 0 and child["misses"] == 0
    assert warm["hits"] > 0 and warm["misses"] == 0
    assert here["digest"] == child["digest"] == warm["digest"]
    assert here["loss"] == child["loss"] == warm["loss"]
