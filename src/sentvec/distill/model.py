"""A distilled static model (:class:`DistilledModel`): its rows, tokenizer and record, written as
a Model2Vec directory (or sentvec's bigram format) with ``distill.json`` and a model card.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_directory, atomic_write_json, atomic_write_text
from sentvec._validation import check_choice

__all__ = ["DistilledModel", "model_card", "DISTILL_RECORD"]

#: The distill record written next to the model.
DISTILL_RECORD = "distill.json"


@dataclass
class DistilledModel:
    """A distilled static model: rows, tokenizer and the record of how they were made.

    Attributes
    ----------
    embeddings : ndarray of shape (V, k), float32
        Row ``i`` is token id ``i``; weights and whitening are folded in.
    tokenizer_json : str
        The ``tokenizers`` JSON (the teacher's, truncation and padding off).
    record : dict
        Teacher, corpus, counts, settings, wall times.
    bigrams : ndarray of shape (n_bigrams, 2), int64, optional
        Token-id pairs of the last ``n_bigrams`` rows (``--bigrams``): the model is then a
        :class:`sentvec.encoders.static_bigrams.BigramStaticEncoder`, saved in its format.
    """

    embeddings: np.ndarray
    tokenizer_json: str
    record: dict[str, Any] = field(default_factory=dict)
    bigrams: np.ndarray | None = None

    def save(self, path: str | os.PathLike[str], *, dtype: str = "float16") -> Path:
        """Write a Model2Vec directory atomically (see the module docstring); with bigram rows,
        a :class:`~sentvec.encoders.static_bigrams.BigramStaticEncoder` directory instead.

        Parameters
        ----------
        path : path-like
            A new or empty directory, or an earlier ``distill`` output (replaced whole).
        dtype : {"float16", "float32"}, default "float16" (as Model2Vec stores)

        Raises
        ------
        FileExistsError, ValueError
            ``path`` holds something else; nothing is written.
        """
        check_choice("dtype", dtype, ("float16", "float32"))
        encoder = self.to_encoder(dtype=dtype)
        with atomic_directory(path, marker=DISTILL_RECORD, kind="a sentvec distill output") as root:
            if self.bigrams is not None:
                encoder.write_into(root)
            else:
                encoder.save(root)  # the Model2Vec files (StaticEncoder: the one writer of them)
            atomic_write_text(root / "README.md", model_card(self.record))
            atomic_write_json(root / DISTILL_RECORD, self.record)
        return Path(path)

    def to_encoder(self, *, dtype: str = "float32") -> Any:
        """The model as a :class:`sentvec.encoders.StaticEncoder` (L2-normalised output, as
        the saved Model2Vec config says), or a ``BigramStaticEncoder`` with bigram rows."""
        from tokenizers import Tokenizer

        from sentvec.encoders import StaticEncoder

        if self.bigrams is not None:
            from sentvec.encoders import BigramStaticEncoder

            return BigramStaticEncoder(
                self.embeddings.astype(dtype),
                Tokenizer.from_str(self.tokenizer_json),
                self.bigrams,
                normalize=True,
                source=f"sentvec distill of {_teacher_name(self.record)}",
            )
        settings = self.record.get("settings", {})
        return StaticEncoder(
            self.embeddings.astype(dtype),
            Tokenizer.from_str(self.tokenizer_json),
            normalize=True,
            source=f"sentvec distill of {self.record.get('teacher', {}).get('model')}",
            config={
                "tokenizer_name": _teacher_name(self.record),
                "apply_pca": int(self.embeddings.shape[1]),
                "sif_coefficient": self.record.get("weights", {}).get("a"),
                "seq_length": 1000000,
                "pooling": "mean",
                "sentvec_distill": {
                    k: settings.get(k) for k in ("pooling", "weighting", "whiten", "layers")
                },
            },
        )


def _teacher_name(record: dict[str, Any]) -> Any:
    """The teacher as the user named it (``minilm``, a path as given), else its loaded path."""
    teacher = record.get("teacher", {})
    return teacher.get("name") or teacher.get("model")


def model_card(record: dict[str, Any]) -> str:
    """The README.md of a distilled model: what it is, how it loads, the distill record.

    A model with bigram rows is sentvec's own format (``BigramStaticEncoder``), which Model2Vec
    and sentence-transformers cannot read: its card says so. The teacher is named as the user
    gave it (an alias such as ``minilm``), not by a local path.
    """
    teacher_rec = record.get("teacher", {})
    teacher = _teacher_name(record)
    bigrams = bool(record.get("settings", {}).get("bigrams"))
    rows = "\n".join(
        f"| {k} | `{json.dumps(v, default=str)}` |" for k, v in record.items() if k != "teacher"
    )
    if bigrams:
        front = "library_name: sentvec\ntags: [sentvec, static-embeddings]"
        how = (
            "A sentence vector is the mean of its tokens' rows and the rows of the token bigrams "
            "it contains (Sent2Vec's sentence vector; token weights and whitening are folded into "
            "the rows), L2-normalised. This is sentvec's own format: load it with "
            "`sentvec.load_encoder(DIR)` (Model2Vec and sentence-transformers cannot read it).\n\n"
        )
    else:
        front = "library_name: model2vec\ntags: [model2vec, sentvec, static-embeddings]"
        how = (
            "A sentence vector is the mean of its tokens' rows (token weights and whitening are "
            "folded into the rows), L2-normalised. Load it with `sentvec.load_encoder(DIR)`, "
            "`model2vec.StaticModel.from_pretrained(DIR)` or sentence-transformers' "
            "`StaticEmbedding.from_model2vec(DIR)`.\n\n"
        )
    return (
        f"---\n{front}\nbase_model: {teacher}\n---\n\n"
        f"# Static model distilled from {teacher} by `sentvec distill`\n\n"
        + how
        + "## Distill record\n\n| item | value |\n|---|---|\n"
        f"| teacher | `{json.dumps(teacher_rec, default=str)}` |\n{rows}\n"
    )
