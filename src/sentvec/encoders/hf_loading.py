"""Reading a Hugging Face model and tokenizer for :class:`sentvec.TransformerEncoder`.

Local files only (sentvec never downloads a model), safetensors weights only (a pickled
checkpoint is never offered to ``torch.load``), and what ``transformers`` raises on a damaged
directory turned into a ``ModelFormatError`` naming it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["load_model_and_tokenizer"]


def _pickled_weights_only(directory: str | os.PathLike[str]) -> bool:
    """True if a model directory has ``pytorch_model*.bin`` weights and no safetensors."""
    d = Path(directory)
    return not any(d.glob("*.safetensors")) and any(d.glob("pytorch_model*.bin"))


def load_model_and_tokenizer(
    name_or_path: str | os.PathLike[str], resolved: str, model_kwargs: dict[str, Any]
) -> tuple[Any, Any]:
    """``transformers``' model and tokenizer of ``resolved`` (``name_or_path`` after its alias).

    Parameters
    ----------
    name_or_path : str or path-like
        What the caller gave (named in errors).
    resolved : str
        A local model directory or a hub name.
    model_kwargs : dict
        Passed to ``AutoModel.from_pretrained``; ``local_files_only`` and ``use_safetensors``
        default to True (set here).

    Returns
    -------
    model, tokenizer

    Raises
    ------
    ModelFormatError
        A local directory with pickled weights only, or files transformers cannot read.
    OSError
        A hub name that is not in the local hub cache.
    """
    from transformers import AutoModel, AutoTokenizer

    is_local = os.path.isdir(resolved)
    # sentvec never downloads weights: a hub name loads only from the user's hub cache
    model_kwargs.setdefault("local_files_only", True)
    # weights sentvec did not write are read from safetensors only: a pickled checkpoint
    # (pytorch_model.bin) is never even offered to torch.load
    model_kwargs.setdefault("use_safetensors", True)
    if is_local and model_kwargs["use_safetensors"] and _pickled_weights_only(resolved):
        from sentvec.exceptions import ModelFormatError

        raise ModelFormatError(
            f"{str(name_or_path)!r} holds pickled weights only (pytorch_model.bin, no "
            "model.safetensors); sentvec reads safetensors weights only, since loading a "
            "pickle can run code. If you trust the file, convert it once with transformers "
            "(AutoModel.from_pretrained(DIR, use_safetensors=False).save_pretrained(DIR))"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            resolved, local_files_only=model_kwargs["local_files_only"]
        )
        model = AutoModel.from_pretrained(resolved, **model_kwargs)
    except (ImportError, MemoryError, FileNotFoundError):
        raise
    except Exception as exc:  # what transformers, tokenizers and safetensors raise varies
        if not is_local:
            if isinstance(exc, OSError):
                raise OSError(
                    f"could not load {str(name_or_path)!r}: it is not a sentvec alias or a "
                    "local directory, and it is not in the Hugging Face cache (sentvec "
                    "never downloads models; fetch it yourself, e.g. `hf download NAME` with "
                    "huggingface-hub, or pass a local model directory)"
                ) from exc
            raise
        from sentvec.exceptions import ModelFormatError

        raise ModelFormatError(
            f"{str(resolved)!r}: transformers cannot load this model directory (is a "
            "weights, config or tokenizer file damaged or truncated?): "
            f"{type(exc).__name__}: {str(exc)[:300]}"
        ) from exc
    return model, tokenizer
