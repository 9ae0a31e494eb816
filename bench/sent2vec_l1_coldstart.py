"""Why tau = 0.0005 collapses: the zero-initialised output matrix under the proximal step.

The output matrix starts at zero (official ``Matrix::zero``). Its first update per entry is
``lr * (label - sigmoid) * h_d`` with ``h`` the context mean of input rows uniform in
``+-1/dim``, so about ``0.1 * 0.577 / (dim * sqrt(n))`` for ``n`` context features; the
soft-threshold after it is ``tau * lr`` (1e-4 at tau = 0.0005, lr 0.2). An entry that does not
outgrow the threshold is set back to exactly zero, and an all-zero output row passes no gradient
to the input rows. This probe trains one pass over the first ``--lines`` sentences of the
reference corpus (reference flags except ``bucket``, ``epoch`` 1 and the ``dim`` values given)
and reports the share of exact zeros in the output matrix, among the rows that were trained
(nonzero at tau = 0), for each tau and dim.

Usage::

    nice python bench/sent2vec_l1_coldstart.py --lines 5000 --dims 100 700
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    from sent2vec_quality import FLAGS
    from sent2vec_train import corpus_path

    from sentvec.sent2vec.trainer import Sent2VecTrainer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--dims", type=int, nargs="+", default=[100, 700])
    ap.add_argument("--taus", type=float, nargs="+", default=[0.0, 5e-5, 5e-4])
    ap.add_argument("--bucket", type=int, default=100_000)
    args = ap.parse_args(argv)
    path = corpus_path(args.lines)
    rows = []
    for dim in args.dims:
        trained = None
        for tau in args.taus:
            flags = dict(FLAGS, dim=dim, epoch=1, bucket=args.bucket, l1=tau)
            t0 = time.perf_counter()
            model = Sent2VecTrainer(**flags, update="target", seed=1).fit(path)
            out = np.asarray(model.output_matrix)
            if trained is None:  # the first tau must be 0: rows the plain run moved
                trained = out.any(axis=1)
            rec = {
                "dim": dim,
                "tau": tau,
                "lines": args.lines,
                "output_zero_share_trained_rows": float(np.mean(out[trained] == 0)),
                "output_rows_all_zero": int(np.sum(~out[trained].any(axis=1))),
                "trained_rows": int(trained.sum()),
                "output_max_abs": float(np.abs(out).max()),
                "seconds": round(time.perf_counter() - t0, 1),
                "loadavg": os.getloadavg(),
            }
            rows.append(rec)
            print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
