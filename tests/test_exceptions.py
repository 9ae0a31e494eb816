"""``sentvec.exceptions`` is the one home of the public exception and warning classes; the
modules that raise them re-export the same class objects under their earlier import paths."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import sentvec
from sentvec import exceptions

ROOT = Path(sentvec.__file__).resolve().parent

# earlier import path -> the names it re-exports
EARLIER_HOMES = {
    "sentvec._io": ["DiskFullError", "DirectoryLockedError"],
    "sentvec._memory": ["InsufficientMemoryError"],
    "sentvec._extras": ["MissingExtraError"],
    "sentvec.sent2vec.binfile": ["ModelFormatError", "QuantizedModelError"],
    "sentvec.sent2vec.model": ["ModelFormatError", "InferenceOnlyError"],
    "sentvec.sent2vec.trainer": ["TrainingDivergedError"],
    "sentvec.sent2vec._sidecar": ["SidecarWarning"],
    "sentvec.encoders.base": ["TruncationWarning"],
    "sentvec.encoders.loading": ["EncoderOptionsError"],
    "sentvec.cache": ["CacheWarning"],
    "sentvec.serve.errors": ["ApiError"],
    "sentvec.serve.batching": ["QueueFullError", "BatcherClosedError"],
    "sentvec.integrations.sentence_transformers": ["ExportError"],
    "sentvec.cluster": ["PartitionError"],
    "sentvec.static_training.featurize": ["FeaturesMismatchError"],
}

_OPTIONAL = {
    "sentvec.serve.errors": "fastapi",
    "sentvec.serve.batching": "fastapi",
    "sentvec.integrations.sentence_transformers": "sentence_transformers",
    "sentvec.cluster": "distributed",
}


@pytest.mark.parametrize("module", sorted(EARLIER_HOMES))
def test_earlier_paths_reexport_the_same_classes(module):
    if module in _OPTIONAL:
        pytest.importorskip(_OPTIONAL[module])
    mod = importlib.import_module(module)
    for name in EARLIER_HOMES[module]:
        assert getattr(mod, name) is getattr(exceptions, name), f"{module}.{name}"


def test_every_listed_class_is_an_exception_defined_here():
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        assert isinstance(cls, type) and issubclass(cls, BaseException), name
        assert cls.__module__ == "sentvec.exceptions", name
    reexported = {n for names in EARLIER_HOMES.values() for n in names}
    assert reexported == set(exceptions.__all__)


def test_model_format_error_is_caught_by_its_earlier_path(tmp_path):
    from sentvec.encoders.static import StaticEncoder
    from sentvec.sent2vec.binfile import ModelFormatError

    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelFormatError):
        StaticEncoder.from_model2vec(tmp_path)
