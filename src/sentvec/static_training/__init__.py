"""Static models trained against a transformer teacher (``sentvec train-static``).

Modules by step: :mod:`~sentvec.static_training.featurize` (the teacher's vectors of corpus
sentences, as resumable ``.npy`` shards), :mod:`~sentvec.static_training.train` (the losses and
the row training), :mod:`~sentvec.static_training.api` (:func:`train_static`, the whole recipe).
"""

from sentvec.exceptions import FeaturesMismatchError
from sentvec.static_training.api import train_static
from sentvec.static_training.featurize import (
    FEATURES_FORMAT,
    featurize_corpus,
    load_features,
    read_features_manifest,
)

__all__ = [
    "FEATURES_FORMAT",
    "FeaturesMismatchError",
    "featurize_corpus",
    "load_features",
    "read_features_manifest",
    "train_static",
]
