"""Sent2Vec (Pagliardini, Gupta & Jaggi, NAACL 2018): training, inference and the official format.

* ``model``: :class:`Sent2Vec` (encode, load / save, directory format), :class:`PreparedSentences`;
* ``trainer``: :func:`train_sent2vec`, :class:`Sent2VecTrainer` (negative sampling, subsampling,
  dropoutK); ``hogwild``: one run on lock-free threads over ``kernels`` (numba),
  :class:`TrainingDivergedError`;
* ``dictionary``: vocabulary and hashed n-gram buckets in the official order;
* ``binfile``: the official ``.bin`` format, read and written bit for bit;
* ``corpus``, ``preprocessing``: corpus conversion and text preparation;
* ``reports``: :class:`TrainingReport`, :class:`EpochReport`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentvec._lazy import attach

# public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "Sent2Vec": "sentvec.sent2vec.model",
    "EncodeStats": "sentvec.sent2vec.encode_stats",
    "PreparedSentences": "sentvec.sent2vec.model",
    "Sent2VecTrainer": "sentvec.sent2vec.trainer",
    "TrainingDivergedError": "sentvec.exceptions",
    "TrainingReport": "sentvec.sent2vec.reports",
    "EpochReport": "sentvec.sent2vec.reports",
    "train_sent2vec": "sentvec.sent2vec.trainer",
    "Dictionary": "sentvec.sent2vec.dictionary",
    "ModelFormatError": "sentvec.exceptions",
    "QuantizedModelError": "sentvec.exceptions",
    "BinModel": "sentvec.sent2vec.binfile",
    "read_bin": "sentvec.sent2vec.binfile",
    "write_bin": "sentvec.sent2vec.binfile",
    "is_bin_file": "sentvec.sent2vec.binfile",
    "Preprocessing": "sentvec.sent2vec.preprocessing",
    "MosesTokenizer": "sentvec.sent2vec.moses",
}

__all__, __getattr__, __dir__ = attach(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from sentvec.exceptions import (  # noqa: F401
        ModelFormatError,
        QuantizedModelError,
        TrainingDivergedError,
    )
    from sentvec.sent2vec.binfile import BinModel, is_bin_file, read_bin, write_bin  # noqa: F401
    from sentvec.sent2vec.dictionary import Dictionary  # noqa: F401
    from sentvec.sent2vec.encode_stats import EncodeStats  # noqa: F401
    from sentvec.sent2vec.model import PreparedSentences, Sent2Vec  # noqa: F401
    from sentvec.sent2vec.moses import MosesTokenizer  # noqa: F401
    from sentvec.sent2vec.preprocessing import Preprocessing  # noqa: F401
    from sentvec.sent2vec.reports import EpochReport, TrainingReport  # noqa: F401
    from sentvec.sent2vec.trainer import Sent2VecTrainer, train_sent2vec  # noqa: F401
