"""What a local transformer model directory says about its encoder, read from its files.

Torch-free: :func:`describe_pretrained` returns the description
:meth:`sentvec.TransformerEncoder.config_dict` would give after ``from_pretrained`` (the same
dict, compared in ``tests/test_cache.py``) from ``config.json``, ``tokenizer_config.json``,
``sentence_bert_config.json`` and ``sentvec_encoder.json`` alone, so a command whose vectors are
already in the disk cache (``sentvec eval-sts``) finds them without loading the weights. The
readers of ``sentvec_encoder.json`` and of the input-length limits live here, and
:mod:`sentvec.encoders.transformer` uses them too (one definition).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentvec._io import atomic_write_json, make_temp
from sentvec._readers import json_int, read_json_object
from sentvec.encoders.base import precision_for_backend
from sentvec.encoders.pooling import Pooling
from sentvec.exceptions import ModelFormatError

#: File written by ``save_pretrained`` next to the Hugging Face files.
ENCODER_CONFIG_NAME = "sentvec_encoder.json"
ENCODER_CONFIG_FORMAT = "sentvec-transformer-encoder"
ENCODER_CONFIG_VERSION = 1

#: Defaults of :class:`sentvec.TransformerEncoder` (the paper's AVG of L1 + L_last).
DEFAULT_POOLING: Pooling = "mean"
DEFAULT_LAYERS: tuple[int, ...] = (1, -1)

__all__ = [
    "ENCODER_CONFIG_NAME",
    "DEFAULT_POOLING",
    "DEFAULT_LAYERS",
    "read_encoder_config",
    "length_limits",
    "describe_pretrained",
    "write_encoder_dir",
]


def read_encoder_config(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The options saved in ``model_dir/sentvec_encoder.json`` (``{}`` when there is none).

    Raises
    ------
    ModelFormatError
        (a ValueError) The file is not a regular file, not strict JSON, not a sentvec encoder
        config, or of a newer version.
    """
    path = Path(model_dir) / ENCODER_CONFIG_NAME
    if not os.path.lexists(path):
        return {}
    cfg = read_json_object(path, error=ModelFormatError)
    if cfg.get("format") != ENCODER_CONFIG_FORMAT:
        raise ModelFormatError(
            f"{str(path)!r} is not a sentvec encoder config (format != {ENCODER_CONFIG_FORMAT!r})"
        )
    version = json_int(cfg, "version", path, default=0, minimum=0, error=ModelFormatError)
    if (version or 0) > ENCODER_CONFIG_VERSION:
        raise ModelFormatError(
            f"{str(path)!r} has version {version}; this sentvec reads up to "
            f"{ENCODER_CONFIG_VERSION}"
        )
    return cfg


def _json_object(path: Path) -> dict[str, Any] | None:
    """The object in ``path``, or None when it is missing or damaged (then the description is
    uncertain; loading reports the damage)."""
    try:
        return read_json_object(path)
    except (OSError, ValueError):
        return None


def length_limits(
    max_position_embeddings: Any, tokenizer_max_length: Any, model_dir: str | None
) -> tuple[int, int]:
    """(hard limit, default) input length in tokens, special tokens included.

    Hard limit: the tokenizer's ``model_max_length`` when it is set, capped by the
    position-embedding table. Default: ``max_seq_length`` from a sentence-transformers
    ``sentence_bert_config.json`` when present and smaller (the length the model was trained and
    is used with), else the hard limit.
    """
    pos, tok = max_position_embeddings, tokenizer_max_length
    hard = tok if isinstance(tok, int) and 0 < tok < 1_000_000 else pos
    if not isinstance(hard, int) or hard <= 0:
        hard = 512
    if isinstance(pos, int) and pos > 0:
        hard = min(hard, pos)
    default = hard
    if model_dir is not None:
        st_config = Path(model_dir) / "sentence_bert_config.json"
        if st_config.is_file():
            seq = (_json_object(st_config) or {}).get("max_seq_length")
            if isinstance(seq, int) and 0 < seq < hard:
                default = seq
    return int(hard), int(default)


#: CPU flags (``/proc/cpuinfo``) of the instructions that multiply bfloat16 in hardware: the
#: ones torch's own probes report (:func:`sentvec.encoders.bfloat16_is_fast`).
_BFLOAT16_CPU_FLAGS = frozenset({"amx_tile", "avx512_bf16"})


def cpu_multiplies_bfloat16() -> bool | None:
    """Whether this machine's CPU multiplies bfloat16 in hardware, from its flags (Linux
    ``/proc/cpuinfo``: AMX tiles or AVX512-BF16), without importing torch.

    The one CPU probe of both :func:`resolved_precision_without_torch` and
    :func:`sentvec.encoders.bfloat16_is_fast`, so that a command which keys the vector cache
    without loading the model resolves ``precision="auto"`` exactly as the encoder that wrote
    the entries did.

    Returns
    -------
    bool or None
        None where the flags cannot be read (no ``/proc/cpuinfo``: not Linux); the caller then
        asks torch.
    """
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return bool(set(line.partition(":")[2].split()) & _BFLOAT16_CPU_FLAGS)
    except OSError:
        return None
    return None


def resolved_precision_without_torch(precision: str, device: str | None) -> str | None:
    """What :func:`sentvec.encoders.transformer.resolve_precision` gives, without importing
    torch: ``precision`` itself unless it is ``"auto"``; for ``"auto"``, ``"bfloat16"`` or
    ``"float32"`` from the CPU's flags (:func:`cpu_multiplies_bfloat16`) when the forward pass
    surely runs on the CPU (``device="cpu"``, or no device and no NVIDIA driver on the machine),
    else None (uncertain: the caller loads torch)."""
    if precision != "auto":
        return precision
    on_cpu = device == "cpu" or (
        device is None
        and not os.path.exists("/proc/driver/nvidia")
        and not os.path.exists("/dev/nvidiactl")
    )
    if not on_cpu:
        return None
    fast = cpu_multiplies_bfloat16()
    if fast is None:
        return None
    return "bfloat16" if fast else "float32"


def describe_pretrained(
    name_or_path: str | os.PathLike[str],
    *,
    pooling: str | None = None,
    layers: int | Sequence[int] | None = None,
    max_length: int | None = None,
    mean_mode: str | None = None,
    backend: str = "torch",
    precision: str = "float32",
    device: str | None = None,
) -> dict[str, Any] | None:
    """``TransformerEncoder.from_pretrained(name_or_path, ...).config_dict()``, from the files.

    Parameters
    ----------
    name_or_path : str or path-like
        A model alias (``"minilm"``) or a local Hugging Face model directory.
    pooling, layers, max_length, mean_mode, backend, precision
        As :meth:`sentvec.TransformerEncoder.from_pretrained`.
    device : str, optional
        Only resolves ``precision="auto"`` (:func:`resolved_precision_without_torch`).

    Returns
    -------
    dict or None
        The description; None whenever it cannot be derived with certainty from the files (a
        hub name, a missing alias package, a config without ``hidden_size`` /
        ``num_hidden_layers`` / ``max_position_embeddings`` under those names, invalid
        options): the caller then loads the model, which also raises the proper errors.
    """
    from sentvec.encoders.models import resolve_model
    from sentvec.encoders.pooling import MEAN_MODES, POOLING_MODES, normalize_layers

    try:
        resolved = resolve_model(name_or_path)
        if not os.path.isdir(resolved):
            return None
        saved = read_encoder_config(resolved)
        cfg = _json_object(Path(resolved) / "config.json")
        tok_cfg = _json_object(Path(resolved) / "tokenizer_config.json") or {}
        if cfg is None or not (Path(resolved) / "model.safetensors").is_file():
            return None
        sizes = [
            cfg.get(k) for k in ("num_hidden_layers", "hidden_size", "max_position_embeddings")
        ]
        if not all(type(v) is int and v > 0 for v in sizes):
            return None
        num_layers, hidden, pos = (int(v) for v in sizes)  # type: ignore[arg-type]
        pooling = pooling or saved.get("pooling", DEFAULT_POOLING)
        mean_mode = mean_mode or saved.get("mean_mode", "exact")
        if pooling not in POOLING_MODES or mean_mode not in MEAN_MODES:
            return None
        if layers is None:
            layers = tuple(saved.get("layers", DEFAULT_LAYERS))
        raw = (layers,) if isinstance(layers, int) else tuple(layers)
        layer_idx = normalize_layers(raw, num_layers + 1)
        tok_max = tok_cfg.get("model_max_length", tok_cfg.get("max_len"))
        hard, default = length_limits(pos, tok_max, resolved)
        if max_length is None:
            max_length = saved.get("max_length")
        if max_length is None:
            max_length = default
        elif not isinstance(max_length, int) or not 2 <= max_length <= hard:
            return None
    except (OSError, ValueError, TypeError):
        return None
    desc: dict[str, Any] = {
        "encoder": "TransformerEncoder",
        "model": str(name_or_path),
        "model_path": resolved,
        "source_model": saved.get("source_model"),
        "model_type": cfg.get("model_type"),
        "pooling": pooling,
        "layers": [int(x) for x in raw],
        "layer_indices": list(layer_idx),
        "mean_mode": mean_mode,
        "max_length": int(max_length),
        "hidden_size": hidden,
        "num_layers": num_layers,
        "text_variant": "senteval",
    }
    if backend != "torch":
        desc["backend"] = backend
    resolved_precision = resolved_precision_without_torch(precision, device)
    if resolved_precision not in ("float32", "bfloat16"):
        return None  # int8 or unknown: the loaded encoder describes itself
    try:  # the encoder's own rule for a backend and a precision
        resolved_precision = precision_for_backend(backend, precision, resolved_precision)
    except ValueError:
        return None  # an invalid combination: loading reports it
    if resolved_precision != "float32":
        desc["precision"] = resolved_precision
    return desc


def write_encoder_dir(
    path: str | os.PathLike[str], model: Any, tokenizer: Any, settings: dict[str, Any]
) -> Path:
    """Write a transformer's model, tokenizer and ``sentvec_encoder.json`` into directory
    ``path`` (what ``TransformerEncoder.save_pretrained`` writes).

    The files are written into a temporary sibling directory first; a new ``path`` appears in
    one rename, an existing one has each file replaced atomically (other files in it are kept;
    ``sentvec_encoder.json`` last).

    Parameters
    ----------
    path : path-like
    model, tokenizer
        ``transformers`` objects with ``save_pretrained`` (weights saved as safetensors).
    settings : dict
        The encoder's settings (pooling, layers, max_length, mean_mode, source_model), written
        to ``sentvec_encoder.json`` after its format and version.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    FileExistsError
        ``path`` is a file.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{str(target)!r} exists and is not a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp(target, directory=True)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        atomic_write_json(
            tmp / ENCODER_CONFIG_NAME,
            {"format": ENCODER_CONFIG_FORMAT, "version": ENCODER_CONFIG_VERSION, **settings},
        )
        if not target.exists():
            os.replace(tmp, target)
            return target
        if not any(target.iterdir()):
            target.rmdir()
            os.replace(tmp, target)
            return target
        names = sorted(p.name for p in tmp.iterdir())
        names.remove(ENCODER_CONFIG_NAME)
        for name in [*names, ENCODER_CONFIG_NAME]:  # the sentvec config last
            dest = target / name
            if dest.is_dir() and not dest.is_symlink():
                shutil.rmtree(dest)
            os.replace(tmp / name, dest)
        return target
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
