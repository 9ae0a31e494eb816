"""Static models trained against a transformer teacher (``sentvec train-static``).

Modules by step: :mod:`~sentvec.static_training.featurize` (the teacher's vectors of corpus
sentences, as resumable ``.npy`` shards).
"""

from sentvec.static_training.featurize import (
    FEATURES_FORMAT,
    FeaturesMismatchError,
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
]
