"""TransformerEncoder: sentence vectors from a pre-trained transformer (WhiteningBERT, Sect. 3).

A sentence vector pools the token vectors of chosen hidden states (``mean`` = token=AVG, ``cls``,
or ``max``) and averages the pooled vectors of the chosen layers, ``s = (s^1 + s^L) / 2`` for the
paper's "L1+L12". Whitening is a separate post-processing step (:class:`sentvec.Whitening`).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sentvec._validation import check_choice, check_positive_int, check_sentences
from sentvec.encoders.base import (
    PRECISIONS,
    TRANSFORMER_BACKENDS,
    TruncationWarning,
    precision_for_backend,
)
from sentvec.encoders.devices import resolve_device as _resolve_device
from sentvec.encoders.hf_loading import load_model_and_tokenizer
from sentvec.encoders.models import resolve_model
from sentvec.encoders.pooling import (
    MEAN_MODES,
    POOLING_MODES,
    MeanMode,
    Pooling,
    normalize_layers,
    pool,
    pool_all_layers,
    pool_layers,
)
from sentvec.encoders.token_batches import (
    _check_unicode,
    _tokenizer_lock,
    length_sorted_batches,
)
from sentvec.encoders.transformer_files import (
    DEFAULT_LAYERS,
    DEFAULT_POOLING,
    length_limits,
    write_encoder_dir,
)
from sentvec.encoders.transformer_files import read_encoder_config as _read_encoder_config

DEFAULT_BATCH_SIZE = 32

#: ``show_progress_bar=None`` shows a bar for at least this many distinct sentences (TTY only).
AUTO_PROGRESS_MIN_SENTENCES = 1000
#: Distinct sentences tokenized and length-sorted together (bounds memory for huge inputs).
_CHUNK_SENTENCES = 32768


def bfloat16_is_fast(device: str | torch.device) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware.

    True for a CUDA device that supports bfloat16 and for a CPU with AMX-BF16 tiles or
    AVX512-BF16 instructions (the CPU's flags: the probe that commands use without torch,
    ``transformer_files.cpu_multiplies_bfloat16``, so that both resolve ``"auto"`` alike;
    torch's own probes where the flags cannot be read); False elsewhere, where bfloat16 would
    be emulated and slower than float32.

    Parameters
    ----------
    device : str or torch.device

    Returns
    -------
    bool
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if dev.type != "cpu":
        return False
    from sentvec.encoders.transformer_files import cpu_multiplies_bfloat16

    fast = cpu_multiplies_bfloat16()
    if fast is not None:
        return fast
    # torch's own CPU feature probes (underscore names, hence the guard)
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def resolve_precision(precision: str, device: str | torch.device) -> str:
    """``precision`` with ``"auto"`` resolved for ``device``: ``"bfloat16"`` where the device
    multiplies bfloat16 in hardware (:func:`bfloat16_is_fast`), else ``"float32"``.

    Parameters
    ----------
    precision : {"auto", "float32", "bfloat16", "int8"}
    device : str or torch.device

    Returns
    -------
    {"float32", "bfloat16", "int8"}

    Raises
    ------
    ValueError
        ``precision`` not one of :data:`PRECISIONS`.
    """
    check_choice("precision", precision, PRECISIONS)
    if precision != "auto":
        return precision
    return "bfloat16" if bfloat16_is_fast(device) else "float32"


def _length_limits(model: Any, tokenizer: Any, model_dir: str | None) -> tuple[int, int]:
    """(hard limit, default) input length: :func:`~sentvec.encoders.transformer_files.length_limits`."""
    return length_limits(
        getattr(model.config, "max_position_embeddings", None),
        getattr(tokenizer, "model_max_length", None),
        model_dir,
    )


class TransformerEncoder:
    """Sentence encoder over a Hugging Face encoder-only transformer (BERT, MPNet, RoBERTa, ...).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An encoder returning ``last_hidden_state`` and, on request, ``hidden_states``.
    tokenizer : transformers tokenizer
        Its ``__call__`` must add the model's special tokens ([CLS] ... [SEP] for BERT).
    pooling : {"mean", "cls", "max"}, default "mean"
        Token pooling: masked mean over all real tokens including [CLS] and [SEP] (token=AVG),
        first token's hidden vector (token=CLS, not ``pooler_output``), or masked max.
    layers : int or sequence of int, default (1, -1)
        Hugging Face ``hidden_states`` indices (0 = embedding output, l = transformer layer l,
        negatives count from the end). Each chosen layer is pooled and the pooled vectors are
        averaged; the default is the paper's L1 + L_last.
    max_length : int, optional
        Longest input in tokens (special tokens included); longer inputs are truncated with one
        :class:`TruncationWarning` per call giving the count. Default: the model's limit
        (``max_seq_length`` of a sentence-transformers config, else the tokenizer's
        ``model_max_length`` capped by the position embeddings).
    mean_mode : {"exact", "paper"}, default "exact"
        ``"paper"`` divides the masked sum by n + 0.01 as the WhiteningBERT code does.
    device : str or torch.device, optional
        Default: ``"cuda"`` if available, else ``"cpu"``. The model is moved there.
    name_or_path : str, optional
        What the model was loaded from, for :meth:`config_dict`.
    backend : {"torch", "onnx"}, default "torch"
        Runs the forward passes with torch, or with ONNX Runtime on the CPU
        (:mod:`sentvec.encoders.onnx_backend`: the model is exported once, with every hidden
        state as an output, and the graph cached under ``onnx_cache_dir``). Pooling is the same
        code for both; vectors agree to about 1e-5 (float32 rounding of another kernel order).
    onnx_cache_dir : path-like, optional
        Root of the ONNX graph cache (default ``$SENTVEC_CACHE`` or ``~/.cache/sentvec``).
    precision : {"float32", "bfloat16", "int8", "auto"}, default "float32"
        The forward pass's matrix products. ``"bfloat16"`` runs the model under
        ``torch.autocast`` with bfloat16: linear layers and attention products multiply in
        bfloat16, while the weights, layer norms, softmax, the hidden states handed to pooling,
        pooling itself, layer averaging and whitening stay float32 (the cast back happens at
        each layer norm, so pooled vectors never see bfloat16 values directly). ``"auto"`` is
        bfloat16 where the device multiplies it in hardware (:func:`bfloat16_is_fast`: a CPU
        with AMX or AVX512-BF16, a CUDA device with bfloat16), float32 elsewhere. The resolved
        value is :attr:`precision` and is part of :meth:`config_dict` (so the vector cache keys
        on it). The ONNX backend runs float32 or ``"int8"`` (only it: dynamic quantization).

    Raises
    ------
    ValueError
        Unknown ``pooling``, ``mean_mode``, ``backend`` or ``precision`` (the message lists
        the options); ``precision="bfloat16"`` with ``backend="onnx"``, ``"int8"`` without; a
        layer index out of range (the message names the valid range); ``max_length`` above the
        model's limit; ``backend="onnx"`` with a device other than the CPU; a ``device`` that
        is not a torch device or that this torch build cannot use (CUDA or MPS absent).
    ImportError
        ``backend="onnx"`` without onnxruntime (``pip install 'sentvec[onnx]'``).
    RuntimeError
        ``backend="onnx"`` and the model could not be exported (or quantized), or its graph
        disagrees with torch (checked on a small batch on every load).

    Notes
    -----
    Torch's thread count is left as the user set it. Empty and whitespace-only strings are valid
    inputs: they tokenize to ``[CLS] [SEP]`` and get that sequence's vector. Layers are combined
    by averaging the per-layer pooled vectors (the paper's ``s = (s^1 + s^L) / 2``); for mean and
    CLS pooling this equals averaging the token vectors first, for max pooling it does not, and
    sentvec pools first so that ``encode`` agrees with :meth:`encode_layers`.

    References
    ----------
    .. [1] J. Huang, D. Tang, W. Zhong, S. Lu, L. Shou, M. Gong, D. Jiang, N. Duan.
       "WhiteningBERT: An Easy Unsupervised Sentence Embedding Approach", Findings of EMNLP
       2021, arXiv:2104.01767 (Sect. 3; code github.com/Jun-jie-Huang/WhiteningBERT, d1ef06a).
    """

    #: Text variant of the STS data this encoder is evaluated on by default (tokenized and
    #: lower-cased SentEval files, as in WhiteningBERT's evaluation).
    preferred_text_variant = "senteval"

    #: Pipeline component type (see ``sentvec.encoders.pipeline.ENCODER_LOADERS``).
    encoder_type = "transformer"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        pooling: Pooling = DEFAULT_POOLING,
        layers: int | Sequence[int] = DEFAULT_LAYERS,
        max_length: int | None = None,
        mean_mode: MeanMode = "exact",
        device: str | torch.device | None = None,
        name_or_path: str | None = None,
        backend: str = "torch",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
        precision: str = "float32",
        _model_dir: str | None = None,
        _source_model: str | None = None,
        _onnx: Any = None,
    ) -> None:
        self._pooling: Pooling = check_choice("pooling", pooling, POOLING_MODES)
        self.backend: str = check_choice("backend", backend, TRANSFORMER_BACKENDS)
        self._mean_mode: MeanMode = check_choice("mean_mode", mean_mode, MEAN_MODES)
        config = model.config
        self.num_layers = int(config.num_hidden_layers)
        self.hidden_size = int(config.hidden_size)
        raw_layers = (layers,) if isinstance(layers, (int, np.integer)) else tuple(layers)
        self._layer_idx = normalize_layers(raw_layers, self.num_layers + 1)  # validates
        self._layers_arg = tuple(int(x) for x in raw_layers)
        self._model_dir = _model_dir
        hard_limit, default_limit = _length_limits(model, tokenizer, _model_dir)
        if max_length is None:
            self._max_length = default_limit
        else:
            max_length = check_positive_int("max_length", max_length, minimum=2)
            if max_length > hard_limit:
                raise ValueError(
                    f"max_length={max_length} is invalid; this model accepts at most "
                    f"{hard_limit} tokens"
                )
            self._max_length = max_length
        if self.backend == "onnx":
            if device is not None and torch.device(device).type != "cpu":
                raise ValueError(
                    f"backend='onnx' runs on the CPU only, not on device={str(device)!r}; "
                    "use backend='torch' for other devices"
                )
            device = "cpu"
        self.device = _resolve_device(device)
        #: The forward pass's resolved precision: ``"float32"``, ``"bfloat16"`` or ``"int8"``.
        self.precision: str = precision_for_backend(
            self.backend, precision, resolve_precision(precision, self.device)
        )
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.name_or_path = (
            name_or_path or getattr(config, "_name_or_path", None) or type(model).__name__
        )
        self._source_model = _source_model
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._onnx = None
        if self.backend == "onnx":
            from sentvec.encoders.onnx_backend import OnnxForward

            if _onnx is not None and _onnx.precision != self.precision:  # with_options(precision)
                onnx_cache_dir, _onnx = onnx_cache_dir or _onnx.cache_root, None
            self._onnx = _onnx or OnnxForward(
                self.model, pad_id=self._pad_id, cache_dir=onnx_cache_dir, precision=self.precision
            )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike[str],
        *,
        pooling: Pooling | None = None,
        layers: int | Sequence[int] | None = None,
        max_length: int | None = None,
        mean_mode: MeanMode | None = None,
        device: str | torch.device | None = None,
        backend: str = "torch",
        onnx_cache_dir: str | os.PathLike[str] | None = None,
        precision: str = "float32",
        **model_kwargs: Any,
    ) -> TransformerEncoder:
        """Load an encoder from an alias, a local Hugging Face directory or a hub name.

        Parameters
        ----------
        name_or_path : str or path-like
            ``"minilm"`` / ``"mpnet"`` (and their long names, see
            :mod:`sentvec.encoders.models`), a local model directory (possibly written by
            :meth:`save_pretrained`), or a hub name passed to ``transformers`` unchanged.
        pooling, layers, max_length, mean_mode
            ``None`` takes the value saved in the directory's ``sentvec_encoder.json`` if there
            is one, else the defaults ``"mean"``, ``(1, -1)``, the model's limit, ``"exact"``.
        device : str or torch.device, optional
        backend : {"torch", "onnx"}, default "torch"
            See :class:`TransformerEncoder` (not saved with the model: a deployment choice).
        onnx_cache_dir : path-like, optional
            Root of the ONNX graph cache for ``backend="onnx"``.
        precision : {"float32", "bfloat16", "int8", "auto"}, default "float32"
            See :class:`TransformerEncoder` (not saved with the model: a deployment choice).
        **model_kwargs
            Passed to ``transformers.AutoModel.from_pretrained`` (e.g. ``dtype``, or
            ``num_hidden_layers=2`` to keep only the first two layers). ``local_files_only``
            defaults to True: nothing is downloaded from a model hub; ``use_safetensors``
            defaults to True: only ``model.safetensors`` weights are read, never a pickled
            ``pytorch_model.bin``.

        Raises
        ------
        FileNotFoundError
            A path that does not exist or is not a model directory (no download is attempted),
            or an alias whose packages are not installed.
        OSError
            ``transformers`` could not load a hub name (not in the local hub cache).
        ModelFormatError
            (a ``ValueError``) A local model directory whose weights, config or tokenizer files
            transformers cannot read (damaged or truncated).
        ValueError
            Bad ``pooling``, ``layers``, ``mean_mode`` or ``max_length``; a ``device`` this
            torch build cannot use.
        """
        if pooling is not None:
            check_choice("pooling", pooling, POOLING_MODES)
        if mean_mode is not None:
            check_choice("mean_mode", mean_mode, MEAN_MODES)
        check_choice("backend", backend, TRANSFORMER_BACKENDS)
        check_choice("precision", precision, PRECISIONS)
        resolved = resolve_model(name_or_path)
        is_local = os.path.isdir(resolved)
        saved = _read_encoder_config(resolved) if is_local else {}
        _resolve_device(device)  # a device this torch cannot use fails before the weights load
        model, tokenizer = load_model_and_tokenizer(name_or_path, resolved, model_kwargs)
        return cls(
            model,
            tokenizer,
            pooling=pooling or saved.get("pooling", DEFAULT_POOLING),
            layers=layers if layers is not None else tuple(saved.get("layers", DEFAULT_LAYERS)),
            max_length=max_length if max_length is not None else saved.get("max_length"),
            mean_mode=mean_mode or saved.get("mean_mode", "exact"),
            device=device,
            name_or_path=str(name_or_path),
            backend=backend,
            onnx_cache_dir=onnx_cache_dir,
            precision=precision,
            _model_dir=resolved if is_local else None,
            _source_model=saved.get("source_model"),
        )

    def with_options(self, **changes: Any) -> TransformerEncoder:
        """A new encoder sharing this one's model and tokenizer, with some options changed.

        Accepts ``pooling``, ``layers``, ``max_length``, ``mean_mode``, ``precision``; no
        weights are copied (and an ONNX Runtime session is shared).
        """
        allowed = {"pooling", "layers", "max_length", "mean_mode", "precision"}
        unknown = set(changes) - allowed
        if unknown:
            raise TypeError(
                f"with_options() got unexpected options {sorted(unknown)}; allowed: {sorted(allowed)}"
            )
        opts: dict[str, Any] = {
            "pooling": self._pooling,
            "layers": self._layers_arg,
            "max_length": self._max_length,
            "mean_mode": self._mean_mode,
            "precision": self.precision,
        }
        opts.update(changes)
        return type(self)(
            self.model,
            self.tokenizer,
            device=self.device,
            name_or_path=self.name_or_path,
            backend=self.backend,
            _onnx=self._onnx,
            _model_dir=self._model_dir,
            _source_model=self._source_model,
            **opts,
        )

    # ------------------------------------------------------------------ description
    @property
    def pooling(self) -> Pooling:
        """Token pooling mode."""
        return self._pooling

    @property
    def layers(self) -> tuple[int, ...]:
        """Hidden-state indices as given (may be negative)."""
        return self._layers_arg

    @property
    def layer_indices(self) -> tuple[int, ...]:
        """Hidden-state indices in ``[0, num_layers]``."""
        return self._layer_idx

    @property
    def max_length(self) -> int:
        """Longest input in tokens (special tokens included); longer inputs are truncated."""
        return self._max_length

    @property
    def mean_mode(self) -> MeanMode:
        return self._mean_mode

    def get_sentence_embedding_dimension(self) -> int:
        """Dimension d of the sentence vectors (the model's hidden size)."""
        return self.hidden_size

    def input_token_embeddings(self) -> np.ndarray:
        """The model's input token embedding matrix (before position embeddings and LayerNorm).

        Returns
        -------
        ndarray of shape (vocab_size, hidden_size), float32
            Row ``i`` is the embedding of token id ``i`` (a copy). Used by
            :meth:`sentvec.encoders.sif.SIFEncoder.from_transformer`.
        """
        weight = self.model.get_input_embeddings().weight
        return np.array(weight.detach().to("cpu", dtype=torch.float32).numpy(), dtype=np.float32)

    def config_dict(self) -> dict[str, Any]:
        """JSON-serialisable description for result records.

        ``"backend"`` is present only for ``backend="onnx"`` and ``"precision"`` only for
        bfloat16, so that records and vector-cache keys of the default torch float32 encoder
        stay what they were.
        """
        desc = {
            "encoder": type(self).__name__,
            "model": self.name_or_path,
            "model_path": self._model_dir,
            "source_model": self._source_model,
            "model_type": getattr(self.model.config, "model_type", None),
            "pooling": self._pooling,
            "layers": list(self._layers_arg),
            "layer_indices": list(self._layer_idx),
            "mean_mode": self._mean_mode,
            "max_length": self._max_length,
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
            "text_variant": self.preferred_text_variant,
        }
        if self.backend != "torch":
            desc["backend"] = self.backend
        if self.precision != "float32":
            desc["precision"] = self.precision
        return desc

    def __repr__(self) -> str:
        return (
            f"TransformerEncoder({self.name_or_path!r}, pooling={self._pooling!r}, "
            f"layers={self._layers_arg}, max_length={self._max_length}, device='{self.device}'"
            + (f", backend={self.backend!r}" if self.backend != "torch" else "")
            + (f", precision={self.precision!r})" if self.precision != "float32" else ")")
        )

    # ------------------------------------------------------------------ encoding
    def encode(
        self,
        sentences: str | Sequence[str],
        *,
        batch_size: int | None = None,
        show_progress_bar: bool | None = None,
        normalize: bool | None = None,
    ) -> np.ndarray:
        """Encode sentences into vectors.

        Parameters
        ----------
        sentences : str or sequence of str
            Empty and whitespace-only strings are valid; they encode as ``[CLS] [SEP]``.
        batch_size : int, optional
            Sentences per forward pass; None (the default) is 32. Inputs are sorted by token count first; batches of short
            sentences are enlarged to about ``32 * batch_size`` tokens (at most 4x the
            sentences), so a batch of long inputs is never larger than usual.
        show_progress_bar : bool, optional
            ``None``: shown for at least 1,000 distinct sentences when stderr is a terminal.
        normalize : bool, optional
            Scale each vector to unit L2 norm; None (the default) is False.

        Returns
        -------
        ndarray of shape (n, d), dtype float32
            ``(0, d)`` for an empty list, ``(d,)`` for a single string. Each distinct sentence
            is encoded once; its vector does not depend on the other sentences of the call.

        Raises
        ------
        TypeError
            If ``sentences`` is not a str or a sequence of str.
        ValueError
            If a sentence holds a lone surrogate (how Python represents an undecodable byte).

        Warns
        -----
        TruncationWarning
            Once per call if any input is longer than ``max_length`` tokens, with the count.
        """
        items, single = check_sentences(sentences)
        need_all = self._layer_idx != (self.num_layers,)

        def fn(out: Any, mask: torch.Tensor) -> torch.Tensor:
            if not need_all:
                return pool(
                    out.last_hidden_state.float(), mask, self._pooling, mean_mode=self._mean_mode
                )
            hs = [h.float() for h in out.hidden_states]
            return pool_layers(hs, mask, self._pooling, self._layer_idx, mean_mode=self._mean_mode)

        batch = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        vecs = self._run(items, fn, (self.hidden_size,), need_all, batch, show_progress_bar)
        if normalize:
            norms = np.linalg.norm(vecs, axis=1, keepdims=True)
            vecs = vecs / np.maximum(norms, np.finfo(np.float32).tiny)
        return vecs[0] if single else vecs

    def encode_layers(
        self,
        sentences: str | Sequence[str],
        *,
        pooling: Pooling | Sequence[Pooling] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        show_progress_bar: bool | None = None,
    ) -> np.ndarray | dict[str, np.ndarray]:
        """Pooled vectors of every hidden state, from one forward pass per distinct sentence.

        Parameters
        ----------
        sentences : str or sequence of str
        pooling : str or tuple of str, optional
            One mode (default: the encoder's) or several, e.g. ``("cls", "mean")``.
        batch_size, show_progress_bar
            As in :meth:`encode`.

        Returns
        -------
        ndarray of shape (n, L + 1, d), dtype float32, or dict
            ``out[:, l]`` is the vector of hidden state l (0 = embedding output), equal to
            ``encode`` with ``layers=(l,)``; averaging ``out[:, [i, j]]`` over axis 1 equals
            ``layers=(i, j)``. With a tuple of poolings: a dict pooling -> such an array.
            A single string gives shape (L + 1, d).

        Raises
        ------
        TypeError
            If ``sentences`` is not a str or a sequence of str.
        ValueError
            Unknown or empty ``pooling``, or a sentence holding a lone surrogate.
        """
        if pooling is None:
            modes: tuple[Pooling, ...] = (self._pooling,)
            as_dict = False
        elif isinstance(pooling, str):
            modes, as_dict = (pooling,), False
        else:
            modes, as_dict = tuple(pooling), True
            if not modes:
                raise ValueError(
                    f"pooling=() is invalid; name at least one of {sorted(POOLING_MODES)}"
                )
        modes = tuple(check_choice("pooling", m, POOLING_MODES) for m in modes)
        items, single = check_sentences(sentences)
        K = self.num_layers + 1

        def fn(out: Any, mask: torch.Tensor) -> torch.Tensor:
            hs = [h.float() for h in out.hidden_states]
            return torch.stack(
                [pool_all_layers(hs, mask, m, mean_mode=self._mean_mode) for m in modes], dim=1
            )  # (B, P, K, d)

        arr = self._run(
            items, fn, (len(modes), K, self.hidden_size), True, batch_size, show_progress_bar
        )
        if single:
            arr = arr[0]
        if not as_dict:
            return arr[..., 0, :, :]
        return {m: np.ascontiguousarray(arr[..., i, :, :]) for i, m in enumerate(modes)}

    def hidden_states(
        self, input_ids: np.ndarray, attention_mask: np.ndarray
    ) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        """Every hidden state of one padded batch of token ids, from this encoder's backend
        (torch in :attr:`precision`, or ONNX Runtime) on its device: the forward pass of
        :meth:`encode` for ids tokenized elsewhere (``sentvec distill``'s token rows).

        Parameters
        ----------
        input_ids, attention_mask : ndarray of shape (B, T), int64
            Ids as the model takes them (special tokens included, padding anywhere the mask
            is 0).

        Returns
        -------
        hidden_states : tuple of L + 1 Tensors of shape (B, T, d), float32
        attention_mask : Tensor of shape (B, T), int64, on :attr:`device`
            For :mod:`sentvec.encoders.pooling`.
        """
        mask_t = torch.from_numpy(attention_mask).to(self.device)
        with torch.inference_mode():
            if self._onnx is not None:
                res = self._onnx(input_ids, attention_mask, True)
            else:
                res = self._forward(input_ids, mask_t, True)
            states = tuple(h.float() for h in res.hidden_states)
        return states, mask_t

    # ------------------------------------------------------------------ internals
    def count_tokens(self, sentences: Sequence[str]) -> np.ndarray:
        """Tokens of each sentence as :meth:`encode` tokenizes it, before truncation.

        Parameters
        ----------
        sentences : sequence of str

        Returns
        -------
        ndarray of shape (n,), int64
            Special tokens included; a count above :attr:`max_length` means :meth:`encode`
            truncates that sentence to ``max_length`` tokens.
        """
        ids = self._untruncated_ids(list(sentences))
        return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))

    def _token_ids(self, texts: list[str], **truncation: Any) -> list[list[int]]:
        """The tokenizer's ids of ``texts``, special tokens added, under the tokenizer's lock:
        the truncation given here is set on the tokenizer for this call (see
        ``_TOKENIZER_LOCKS``), so no other thread's call may run in between."""
        with _tokenizer_lock(self.tokenizer):
            return list(
                self.tokenizer(
                    texts,
                    add_special_tokens=True,
                    padding=False,
                    return_attention_mask=False,
                    return_token_type_ids=False,
                    verbose=False,
                    **truncation,
                )["input_ids"]
            )

    def _untruncated_ids(self, texts: list[str]) -> list[list[int]]:
        return self._token_ids(texts, truncation=False)

    def _tokenize(self, texts: list[str]) -> tuple[list[list[int]], int, int]:
        """Token ids per text (special tokens added, truncated to max_length).

        Returns the id lists, the number of truncated texts and the longest original length.
        """
        ids = self._untruncated_ids(texts)
        limit = self._max_length
        too_long = [i for i, x in enumerate(ids) if len(x) > limit]
        longest = max((len(ids[i]) for i in too_long), default=0)
        if too_long:
            cut = self._token_ids([texts[i] for i in too_long], truncation=True, max_length=limit)
            for i, x in zip(too_long, cut, strict=True):
                ids[i] = x
        return ids, len(too_long), longest

    def _batches(self, lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
        """Positions in batches of similar token length, longest first
        (:func:`~sentvec.encoders.token_batches.length_sorted_batches`)."""
        return length_sorted_batches(lengths, batch_size)

    def _run(
        self,
        items: list[str],
        fn: Callable[[Any, torch.Tensor], torch.Tensor],
        row_shape: tuple[int, ...],
        hidden_states: bool,
        batch_size: int,
        show_progress_bar: bool | None,
    ) -> np.ndarray:
        """Encode the distinct items once; return fn's rows for every item, float32."""
        batch_size = check_positive_int("batch_size", batch_size)
        index: dict[str, int] = {}
        inverse = np.fromiter(
            (index.setdefault(s, len(index)) for s in items), dtype=np.int64, count=len(items)
        )
        unique = list(index)
        _check_unicode(unique, items)
        out = np.empty((len(unique), *row_shape), dtype=np.float32)
        if show_progress_bar is None:
            show_progress_bar = len(unique) >= AUTO_PROGRESS_MIN_SENTENCES and sys.stderr.isatty()
        n_truncated, longest = 0, 0
        from sentvec._progress import progress_bar

        with (
            progress_bar(
                total=len(unique), desc="Encoding", unit="sent", show=bool(show_progress_bar)
            ) as bar,
            torch.inference_mode(),
        ):
            for c0 in range(0, len(unique), _CHUNK_SENTENCES):
                chunk = unique[c0 : c0 + _CHUNK_SENTENCES]
                ids, n_cut, long_ = self._tokenize(chunk)
                n_truncated += n_cut
                longest = max(longest, long_)
                lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
                for batch in self._batches(lengths, batch_size):
                    T = int(lengths[batch].max())
                    input_ids = np.full((len(batch), T), self._pad_id, dtype=np.int64)
                    mask = np.zeros((len(batch), T), dtype=np.int64)
                    for r, j in enumerate(batch):
                        row = ids[j]
                        input_ids[r, : len(row)] = row
                        mask[r, : len(row)] = 1
                    mask_t = torch.from_numpy(mask).to(self.device)
                    if self._onnx is not None:
                        res = self._onnx(input_ids, mask, hidden_states)
                    else:
                        res = self._forward(input_ids, mask_t, hidden_states)
                    out[c0 + batch] = fn(res, mask_t).to("cpu", torch.float32).numpy()
                    bar.update(len(batch))
        if n_truncated:
            warnings.warn(
                TruncationWarning.counted(n_truncated, len(unique), longest, self._max_length),
                stacklevel=3,
            )
        # all items distinct: inverse is 0..n-1, so skip the copy (280 MB for MiniLM's layers)
        return out if len(unique) == len(items) else out[inverse]

    def _forward(self, input_ids: np.ndarray, mask: torch.Tensor, hidden_states: bool) -> Any:
        """The torch forward pass of one padded batch, in :attr:`precision`.

        Only the model runs under autocast: the hidden states it returns are float32 (each
        layer ends in a float32 layer norm), and pooling, layer averaging and whitening run
        outside it, in float32.
        """
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.precision == "bfloat16"):
            res = self.model(
                input_ids=torch.from_numpy(input_ids).to(self.device),
                attention_mask=mask,
                output_hidden_states=hidden_states,
                return_dict=True,
            )
        if self.precision != "float32":  # a model whose last op is not a layer norm
            states = res.hidden_states
            if states is not None and any(h.dtype != torch.float32 for h in states):
                res.hidden_states = tuple(h.float() for h in states)
            if res.last_hidden_state.dtype != torch.float32:
                res.last_hidden_state = res.last_hidden_state.float()
        return res

    @classmethod
    def load(cls, path: str | os.PathLike[str], **kwargs: Any) -> TransformerEncoder:
        """Same as :meth:`from_pretrained` (the name every sentvec component loads by).

        Returns
        -------
        TransformerEncoder
            With the pooling, layers, max_length and mean_mode :meth:`save` wrote, unless
            ``kwargs`` override them.
        """
        return cls.from_pretrained(path, **kwargs)

    # ------------------------------------------------------------------ saving
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Same as :meth:`save_pretrained` (the name every sentvec component saves by)."""
        return self.save_pretrained(path)

    def save_pretrained(self, path: str | os.PathLike[str]) -> Path:
        """Write the model, tokenizer and ``sentvec_encoder.json`` into directory ``path``.

        The files are written into a temporary sibling directory first; a new ``path`` appears
        in one rename, an existing one has each file replaced atomically (other files in it are
        kept). Weights are saved as safetensors (no pickle). :meth:`from_pretrained` on ``path``
        restores the pooling, layers, max_length and mean_mode.

        Returns
        -------
        Path
            ``path``.
        """
        return write_encoder_dir(
            path,
            self.model,
            self.tokenizer,
            {
                "pooling": self._pooling,
                "layers": list(self._layers_arg),
                "max_length": self._max_length,
                "mean_mode": self._mean_mode,
                "source_model": self._source_model or self.name_or_path,
            },
        )
