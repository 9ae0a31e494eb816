"""ONNX Runtime backend of :class:`sentvec.TransformerEncoder` (``backend="onnx"``).

The torch model is exported once with ``torch.onnx.export`` to a graph whose outputs are every
hidden state (``hidden_state_0`` = embedding output ... ``hidden_state_L``), with dynamic batch
and token axes, and cached under ``<cache root>/onnx/<key>/model.onnx`` (cache root: the
``cache_dir`` argument, else ``$SENTVEC_CACHE``, else ``~/.cache/sentvec``, as for
:mod:`sentvec.cache`). The key is a SHA-256 of the weights, the model config and the torch,
transformers and export-format versions, so a changed or fine-tuned model never reuses a stale
graph; every load also runs one small batch through both backends and re-exports a graph that
disagrees (damaged weights). ``precision="int8"`` runs the graph's dynamic int8 quantization,
cached beside it under its own key. Pooling and layer averaging stay in
:mod:`sentvec.encoders.pooling`, shared with the torch backend; only the forward pass differs.

Why it exists (``docs/PERFORMANCE.md``): on 2 CPU cores ONNX Runtime's forward passes of
MiniLM ran 1.14-1.23x faster than torch's on sentvec's own batches; its hidden states differ from
torch's by at most ~7e-6.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from sentvec._extras import require_extra
from sentvec._io import atomic_open, atomic_write_bytes
from sentvec._validation import check_choice

__all__ = [
    "OnnxForward",
    "onnx_cache_key",
    "export_onnx",
    "quantize_int8",
    "int8_cache_key",
    "ONNX_EXPORT_VERSION",
    "ONNX_PRECISIONS",
]

#: Bumped whenever the exported graph changes (inputs, outputs, opset, attention path).
ONNX_EXPORT_VERSION = 1
ONNX_OPSET = 17
#: Largest allowed max abs difference between ONNX Runtime's and torch's hidden states in the
#: check made right after an export (a wrongly traced graph is off by ~1, not by 1e-5).
EXPORT_CHECK_TOL = 1e-4
#: Precisions of the ONNX backend: the exported float32 graph, or its dynamic int8 quantization.
ONNX_PRECISIONS = ("float32", "int8")
#: Bumped whenever :func:`quantize_int8`'s settings change.
INT8_QUANTIZATION_VERSION = 1
#: Smallest allowed cosine between an int8 graph's hidden state of a token and torch's, over
#: every hidden state and real token of the check batch (random token ids). On MiniLM the
#: quantization noise keeps it at 0.969-0.975 over five such batches (mean-pooled rows: 0.985
#: and up); a quarter of one quantized weight matrix overwritten gives 0.46 or less.
INT8_CHECK_MIN_COSINE = 0.9


def _require_onnxruntime() -> Any:
    require_extra("onnx", "backend='onnx'")
    import onnxruntime

    return onnxruntime


def onnx_cache_key(model: Any) -> str:
    """SHA-256 identifying the graph ``model`` exports to.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Hashed: every tensor of ``state_dict()`` (name, dtype, shape, bytes), the config as JSON,
        the torch and transformers versions and :data:`ONNX_EXPORT_VERSION`.

    Returns
    -------
    str
        64 hex digits.
    """
    import transformers

    h = hashlib.sha256()
    meta = {
        "export_version": ONNX_EXPORT_VERSION,
        "opset": ONNX_OPSET,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "class": type(model).__name__,
        "config": model.config.to_diff_dict(),
    }
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        h.update(memoryview(t.numpy()).cast("B"))
    return h.hexdigest()


class _AllHiddenStates(torch.nn.Module):
    """Wraps a Hugging Face encoder so that its outputs are the tuple of hidden states."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_hidden_states=True,
            return_dict=True,
        )
        return tuple(out.hidden_states)


def _padded_batch(
    lengths: tuple[int, ...], pad_id: int, vocab_size: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Random token ids (int64, rows of ``lengths`` padded to the longest) and their mask."""
    rng = np.random.default_rng(seed)
    ids = np.full((len(lengths), max(lengths)), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for r, n in enumerate(lengths):
        ids[r, :n] = rng.integers(1, vocab_size, n)
        mask[r, :n] = 1
    return ids, mask


def export_onnx(model: Any, path: str | os.PathLike[str], *, pad_id: int = 0) -> Path:
    """Export ``model`` to an ONNX graph with every hidden state as an output (atomic write).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An encoder-only model on any device; a CPU copy with the eager attention
        implementation is exported (the SDPA path traces its mask handling as constants of the
        example's shape and gives wrong hidden states for other shapes).
    path : path-like
        The ``.onnx`` file to write (its folder is created).
    pad_id : int, default 0
        Padding token id used in the example batch.

    Returns
    -------
    Path
        ``path``. Inputs ``input_ids`` and ``attention_mask`` (int64, shape (batch, tokens));
        outputs ``hidden_state_0`` ... ``hidden_state_L`` (float32, (batch, tokens, d)).

    Raises
    ------
    RuntimeError
        If the export fails (the message names the model class).
    OSError
        If ``path`` cannot be written (the message names the graph cache and the ways round).
    """
    path = Path(path)
    export_model = copy.deepcopy(model).to("cpu").float().eval()
    if hasattr(export_model, "set_attn_implementation"):
        export_model.set_attn_implementation("eager")
    n_out = int(model.config.num_hidden_layers) + 1
    names = [f"hidden_state_{i}" for i in range(n_out)]
    # two rows of different lengths: the export must trace the masked path
    example = tuple(
        torch.from_numpy(a)
        for a in _padded_batch((7, 4), pad_id, int(model.config.vocab_size), seed=0)
    )
    buf = io.BytesIO()
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _AllHiddenStates(export_model),
                example,
                buf,  # type: ignore[arg-type]  # a binary file object works (torch's docs)
                input_names=["input_ids", "attention_mask"],
                output_names=names,
                dynamic_axes={
                    n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", *names)
                },
                opset_version=ONNX_OPSET,
                dynamo=False,
            )
    except Exception as exc:
        raise RuntimeError(
            f"could not export {type(model).__name__} to ONNX ({exc}); use backend='torch'"
        ) from exc
    try:
        with atomic_open(path, "wb") as fh:  # the usual file mode, never a half-written graph
            fh.write(buf.getbuffer())
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"cannot write the ONNX graph cache {str(path.parent.parent)!r} ({exc}); "
            "point $SENTVEC_CACHE (or onnx_cache_dir / --cache-dir) at a writable directory, "
            "or use the torch backend",
        ) from exc
    return path


def int8_cache_key(float_key: str) -> str:
    """SHA-256 identifying the int8 graph quantized from the float32 graph ``float_key``.

    Parameters
    ----------
    float_key : str
        :func:`onnx_cache_key` of the model.

    Returns
    -------
    str
        64 hex digits; also hashes :data:`INT8_QUANTIZATION_VERSION` and the onnxruntime
        version (whose quantizer writes the graph).
    """
    ort = _require_onnxruntime()
    meta = {
        "float_key": float_key,
        "quantization_version": INT8_QUANTIZATION_VERSION,
        "onnxruntime": ort.__version__,
    }
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()


def quantize_int8(float_path: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """Dynamic int8 quantization of an ONNX graph (atomic write).

    ``onnxruntime.quantization.quantize_dynamic`` with int8 weights, one scale per output
    channel, on the MatMul nodes only (where the time goes; activations are quantized per
    batch at run time). Per-tensor scales moved MiniLM's mean-pooled vectors to cosine 0.93
    from torch's, per-channel ones to 0.994 (``docs/results/performance.md``).

    Parameters
    ----------
    float_path : path-like
        The float32 graph (from :func:`export_onnx`).
    path : path-like
        The ``.onnx`` file to write.

    Returns
    -------
    Path
        ``path``; same inputs and outputs as ``float_path``.

    Raises
    ------
    RuntimeError
        If the quantization fails (the message names the graph).
    OSError
        If ``path`` cannot be written.
    """
    _require_onnxruntime()
    import logging
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="sentvec-int8-") as tmp:
        out = Path(tmp) / "model.onnx"
        root_logger = logging.getLogger()
        level = root_logger.level
        root_logger.setLevel(logging.ERROR)  # the quantizer logs a pre-processing hint
        try:
            quantize_dynamic(
                Path(float_path),
                out,
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                weight_type=QuantType.QInt8,
            )
        except Exception as exc:
            raise RuntimeError(
                f"could not quantize the ONNX graph {str(float_path)!r} to int8 ({exc}); "
                "use precision='float32'"
            ) from exc
        finally:
            root_logger.setLevel(level)
        atomic_write_bytes(path, out.read_bytes())
    return path


def min_token_cosine(ours: Any, ref: Any, mask: np.ndarray) -> float:
    """Smallest cosine between matching token vectors of two lists of hidden states.

    Parameters
    ----------
    ours, ref : sequences of ndarray of shape (batch, tokens, d), float32
    mask : ndarray of shape (batch, tokens)
        Only tokens with a non-zero mask count.

    Returns
    -------
    float
        In [-1, 1]; NaN where a vector is all zeros or not finite (never passes a ``>=``).
    """
    m = mask.astype(bool)
    worst = 1.0
    for a, b in zip(ours, ref, strict=True):
        x, y = a[m].astype(np.float64), b[m].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = (x * y).sum(-1) / (np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1))
        if not np.all(np.isfinite(cos)):
            return float("nan")
        worst = min(worst, float(cos.min()))
    return worst


class OnnxForward:
    """Forward passes of a Hugging Face encoder through ONNX Runtime (CPU).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The torch model; exported on first use, then read from the cache.
    pad_id : int
        Padding token id (for the export's example batch and check).
    cache_dir : path-like, optional
        Cache root (default :func:`sentvec._environment.default_cache_dir`); graphs go to
        ``<root>/onnx/<key>/model.onnx``.
    threads : int, optional
        ONNX Runtime intra-op threads (default ``torch.get_num_threads()``, so the two backends
        use the same cores). Idle threads do not spin-wait.
    precision : {"float32", "int8"}, default "float32"
        ``"int8"`` runs the float32 graph's dynamic int8 quantization (:func:`quantize_int8`),
        built once from it and cached beside it as ``model.int8-<key>.onnx``
        (:func:`int8_cache_key`).

    Raises
    ------
    sentvec._extras.MissingExtraError
        onnxruntime or onnx is not installed (an ``ImportError`` naming the ``onnx`` extra).
    ValueError
        ``precision`` not one of :data:`ONNX_PRECISIONS`.
    RuntimeError
        The export or quantization failed, or the new graph's hidden states disagree with
        torch's on a check batch of another shape: float32 by more than
        :data:`EXPORT_CHECK_TOL`, int8 at a token cosine below :data:`INT8_CHECK_MIN_COSINE`.
    OSError
        The graph cache is not writable and holds no usable graph.

    Warns
    -----
    UserWarning
        A cached graph that ONNX Runtime cannot read (corrupt, truncated), or whose hidden
        states fail the check against torch (damaged weights), is exported (or quantized)
        again. The check (one forward pass of a 3 x 11 batch in both backends) runs on every
        load.
    """

    def __init__(
        self,
        model: Any,
        *,
        pad_id: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        precision: str = "float32",
    ) -> None:
        ort = _require_onnxruntime()
        from sentvec._environment import default_cache_dir

        #: ``"float32"`` (the exported graph) or ``"int8"`` (its dynamic int8 quantization).
        self.precision: str = check_choice("precision", precision, ONNX_PRECISIONS)
        self.num_outputs = int(model.config.num_hidden_layers) + 1
        self.key = onnx_cache_key(model)
        root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.cache_root = root  # the cache root the graphs were found in or written to
        #: The float32 graph (exported from torch); the int8 graph is quantized from it.
        self.float_path = root / "onnx" / self.key[:32] / "model.onnx"
        #: The graph this instance runs.
        self.path = self.float_path
        if self.precision == "int8":
            self.path = self.float_path.with_name(
                f"model.int8-{int8_cache_key(self.key)[:16]}.onnx"
            )
        self.threads = int(threads) if threads is not None else torch.get_num_threads()
        self.exported = False  # the float32 graph was exported by this load
        self.quantized = False  # the int8 graph was built by this load
        if self.precision == "int8":
            self.session: Any = self._cached_session(ort, self.path, model, pad_id)
            if self.session is None:
                self._float_session(ort, model, pad_id)  # a checked float32 graph to quantize
                quantize_int8(self.float_path, self.path)
                self.quantized = True
                self.session = self._checked_new_session(ort, self.path, model, pad_id)
        else:
            self.session = self._float_session(ort, model, pad_id)
        self._names = [o.name for o in self.session.get_outputs()]
        if len(self._names) != self.num_outputs:
            raise RuntimeError(
                f"ONNX graph {str(self.path)!r} has {len(self._names)} outputs, "
                f"expected {self.num_outputs} hidden states"
            )

    def _float_session(self, ort: Any, model: Any, pad_id: int) -> Any:
        """A session of the checked float32 graph: the cached one, else a fresh export."""
        session = self._cached_session(ort, self.float_path, model, pad_id)
        if session is None:
            export_onnx(model, self.float_path, pad_id=pad_id)
            self.exported = True
            session = self._checked_new_session(ort, self.float_path, model, pad_id)
        return session

    def _cached_session(self, ort: Any, path: Path, model: Any, pad_id: int) -> Any:
        """A session of the cached graph ``path`` that passes the check, else None (warns if
        the graph exists but is unreadable or fails the check)."""
        if not path.is_file():
            return None
        try:
            session = self._session(ort, path)
            self._check_against(session, path, model, pad_id)
            return session
        except Exception as exc:  # onnxruntime raises its own exception types
            warnings.warn(
                f"cached ONNX graph {str(path)!r} is unreadable or damaged ({exc}); "
                + ("quantizing it again" if path != self.float_path else "exporting it again"),
                UserWarning,
                stacklevel=4,
            )
            return None

    def _checked_new_session(self, ort: Any, path: Path, model: Any, pad_id: int) -> Any:
        """A session of the graph just written to ``path``; the graph is removed if it fails."""
        try:
            session = self._session(ort, path)
            self._check_against(session, path, model, pad_id)
        except Exception:
            path.unlink(missing_ok=True)
            raise
        return session

    def _session(self, ort: Any, path: Path) -> Any:
        so = ort.SessionOptions()
        # basic: the fastest level measured on MiniLM (docs/PERFORMANCE.md); no spin-waiting, so
        # an idle pool never steals the cores from the rest of the process
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 3
        return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def _check_against(self, session: Any, path: Path, model: Any, pad_id: int) -> None:
        """Compare the graph ``path`` with torch on a batch of another shape than the export
        example: float32 by :data:`EXPORT_CHECK_TOL`, int8 by :data:`INT8_CHECK_MIN_COSINE`."""
        ids, mask = _padded_batch((11, 5, 3), pad_id, int(model.config.vocab_size), seed=1)
        ours = session.run(None, {"input_ids": ids, "attention_mask": mask})
        with torch.inference_mode():
            ref = model.to("cpu")(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                output_hidden_states=True,
                return_dict=True,
            ).hidden_states
        if path != self.float_path:
            cos = min_token_cosine(ours, [b.float().numpy() for b in ref], mask)
            if not cos >= INT8_CHECK_MIN_COSINE:
                raise RuntimeError(
                    f"the int8 ONNX graph {str(path)!r} of {type(model).__name__} gives hidden "
                    f"states at cosine {cos:.4f} from torch's (bound {INT8_CHECK_MIN_COSINE}); "
                    "use precision='float32'"
                )
            return
        m = mask[..., None].astype(bool)
        diff = max(
            float(np.abs(np.where(m, a - b.float().numpy(), 0)).max())
            for a, b in zip(ours, ref, strict=True)
        )
        if not diff <= EXPORT_CHECK_TOL:
            raise RuntimeError(
                f"the ONNX export of {type(model).__name__} gives hidden states off by {diff:.3g} "
                f"from torch's (tolerance {EXPORT_CHECK_TOL}); use backend='torch'"
            )

    def __call__(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, hidden_states: bool
    ) -> SimpleNamespace:
        """One forward pass.

        Parameters
        ----------
        input_ids, attention_mask : ndarray of shape (batch, tokens), int64
        hidden_states : bool
            Return every hidden state; otherwise only the last one is fetched.

        Returns
        -------
        namespace
            ``last_hidden_state`` (torch float32 tensor (batch, tokens, d)) and, with
            ``hidden_states``, ``hidden_states`` (tuple of L + 1 such tensors), as the fields of
            a Hugging Face model output.
        """
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        names = self._names if hidden_states else self._names[-1:]
        outs = [torch.from_numpy(a) for a in self.session.run(names, feeds)]
        return SimpleNamespace(
            last_hidden_state=outs[-1], hidden_states=tuple(outs) if hidden_states else None
        )
