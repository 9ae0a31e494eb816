"""STS evaluation of a model named by its alias or path, served from the vector cache when it can.

:func:`evaluate_sts_model` (one configuration) and :func:`evaluate_table1` (WhiteningBERT Table
1's block) take what ``load_encoder`` takes. A local transformer is first looked up in a
:class:`sentvec.cache.VectorCache` by its description, read from its files
(:func:`sentvec.encoders.describe_without_loading`): when the cache holds the pooled per-layer
vectors of every sentence needed, the model is never loaded and nothing is encoded. Otherwise the
model is loaded and its per-layer vectors come from the cache or one forward pass (and are
cached). ``sentvec eval-sts`` is these two functions with a printed report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec.encoders.base import Encoder, LayeredEncoder
from sentvec.evaluation.results import STSResult
from sentvec.evaluation.sts_data import STSTask, load_sts, unique_sentences

__all__ = ["Table1Evaluation", "STSModelEvaluation", "evaluate_table1", "evaluate_sts_model"]

#: The text variant a whitening corpus of sentences is cached under (read as given).
CORPUS_TEXT_VARIANT = "corpus:none"


@dataclass(frozen=True)
class Table1Evaluation:
    """The Table 1 block of one model (what :func:`evaluate_table1` returns).

    Attributes
    ----------
    rows : dict of str to STSResult
        Row label (``"CLS  L6"``, ..., ``"AVG  L1+L6 + whitening"``) to its result, in order.
    description : dict
        The encoder's ``config_dict()`` (read from its files on a cache hit).
    tasks : list of STSTask
    sentences : list of str
        ``unique_sentences(tasks)``: the rows that were scored.
    cache_hit : bool
        True when no forward pass ran (and, for a model given by name, none was loaded).
    timing_s : dict of str to float
        ``encode`` (reading or computing the vectors) and ``score`` seconds.
    """

    rows: dict[str, STSResult]
    description: dict[str, Any]
    tasks: list[STSTask]
    sentences: list[str]
    cache_hit: bool
    timing_s: dict[str, float]


@dataclass(frozen=True)
class STSModelEvaluation:
    """One configuration of one model on STS (what :func:`evaluate_sts_model` returns).

    Attributes
    ----------
    result : STSResult
    tasks : list of STSTask
        The tasks scored, as read (their text variant, pairs and sentences).
    cache_hit : bool
        True when no forward pass ran (and, for a model given by name, none was loaded).
    timing_s : dict of str to float
        ``load`` (describing or loading the model, reading the tasks) and ``encode_and_score``
        seconds.
    """

    result: STSResult
    tasks: list[STSTask]
    cache_hit: bool
    timing_s: dict[str, float]


def _load(model: str | os.PathLike[str], options: Mapping[str, Any]) -> Encoder:
    from sentvec.encoders.loading import load_encoder

    return load_encoder(model, **options)


def _read_tasks(
    tasks: Sequence[str] | None, data_dir: Any, variant: str | None, encoder: Encoder
) -> list[STSTask]:
    from sentvec.encoders.base import text_variant_of

    return load_sts(tasks, data_dir=data_dir, variant=variant or text_variant_of(encoder))


def _layer_vectors(
    encoder: Any,
    sentences: list[str],
    variant: str,
    pooling: Any,
    cache: Any,
    batch_size: int,
    show_progress_bar: bool | None,
    background_save: bool,
) -> tuple[dict[str, np.ndarray], bool, float]:
    """Pooled per-layer vectors of ``sentences`` from the vector cache, or one forward pass."""
    from sentvec.cache import pooled_layer_vectors

    return pooled_layer_vectors(
        encoder,
        sentences,
        pooling=pooling,
        text_variant=variant,
        cache=cache,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
        background_save=background_save,
    )


def _table1_from_cache(
    model: str | os.PathLike[str],
    tasks: Sequence[str] | None,
    cache: Any,
    n_components: int | None,
    data_dir: Any,
    variant: str | None,
    load_options: Mapping[str, Any],
) -> tuple[Any, ...] | None:
    """The Table 1 block's inputs from the vector cache, without loading the model: (description,
    tasks, sentences, per-layer vectors or None on a miss, seconds reading them), or None (not a
    local transformer, or the cache off): the caller loads the model unless the vectors came."""
    from sentvec.cache import cached_layer_vectors
    from sentvec.encoders.loading import describe_without_loading
    from sentvec.evaluation.layers import normalize_combination
    from sentvec.evaluation.table1 import TABLE1_CONFIGS
    from sentvec.whitening import check_n_components

    if cache is None or not cache.enabled:
        return None
    desc = describe_without_loading(model, **load_options)
    if desc is None or int(desc["num_layers"]) < 2:
        return None
    check_n_components(n_components, int(desc["hidden_size"]))
    task_list = load_sts(tasks, data_dir=data_dir, variant=variant or desc["text_variant"])
    sentences = unique_sentences(task_list)
    n_states = int(desc["num_layers"]) + 1
    used: dict[str, set[int]] = {}
    for _, pooling, layers in TABLE1_CONFIGS:
        used.setdefault(pooling, set()).update(normalize_combination(layers, n_states))
    t0 = time.perf_counter()
    per = cached_layer_vectors(
        desc,
        sentences,
        pooling=("cls", "mean"),
        text_variant=task_list[0].variant,
        cache=cache,
        layers=used,
    )
    return desc, task_list, sentences, per, time.perf_counter() - t0


def evaluate_table1(
    model: str | os.PathLike[str] | Encoder,
    tasks: Sequence[str] | None = None,
    *,
    cache: Any = None,
    n_components: int | None = None,
    aggregation: str = "mean",
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
    data_dir: Any = None,
    variant: str | None = None,
    load_options: Mapping[str, Any] | None = None,
    background_save: bool = False,
) -> Table1Evaluation:
    """WhiteningBERT Table 1's block for one transformer, from ONE forward pass or the cache.

    The five rows (CLS last layer; AVG last layer; AVG L1; AVG L1+L_last; AVG L1+L_last with
    per-year whitening) come from the ``cls`` and ``mean`` pooled vectors of every hidden state
    (:func:`sentvec.evaluation.table1_block`).

    Parameters
    ----------
    model : str, path or Encoder
        What :func:`sentvec.load_encoder` takes (a local transformer is looked up in ``cache``
        first, and not loaded on a hit), or a loaded encoder with ``encode_layers``.
    tasks : sequence of str, optional
        STS task names (default: all seven).
    cache : sentvec.cache.VectorCache, optional
        Where the pooled per-layer vectors are read and written; None: no cache.
    n_components : int, optional
        Dimensions kept by the whitening of the last row (checked against the width first).
    aggregation : {"mean", "wmean", "all"}
    batch_size : int
        Sentences per forward pass.
    show_progress_bar : bool, optional
    data_dir : path, optional
        Evaluation data root (default ``$SENTVEC_DATA`` or the packaged copy).
    variant : {"senteval", "raw"}, optional
        STS text fed to the model (default: the encoder's preference).
    load_options : mapping, optional
        Keyword arguments of :func:`sentvec.load_encoder` (device, precision, ...); they also
        key the cache lookup.
    background_save : bool
        Return while new cache entries are still being written; the caller then calls
        ``cache.finish_writes()`` (as :func:`sentvec.cache.pooled_layer_vectors`).

    Returns
    -------
    Table1Evaluation

    Raises
    ------
    TypeError
        The encoder has no ``encode_layers`` (no layers: see :func:`evaluate_sts_model`).
    ValueError
        Fewer than 2 layers, ``n_components`` above the width, bad task names.
    """
    from sentvec.evaluation.table1 import table1_block

    options = dict(load_options or {})
    name = model if isinstance(model, (str, os.PathLike)) else None
    cached = (
        None
        if name is None
        else _table1_from_cache(name, tasks, cache, n_components, data_dir, variant, options)
    )
    if cached is not None and cached[3] is not None:  # a cache hit: the model is never loaded
        desc, task_list, sentences, per, t_encode = cached
        hit = True
    else:
        encoder = _load(model, options) if isinstance(model, (str, os.PathLike)) else model
        desc = _check_table1_encoder(encoder, n_components)
        if cached is not None and cached[0] == desc:  # a miss: the STS data already read
            task_list, sentences = cached[1], cached[2]
        else:
            task_list = _read_tasks(tasks, data_dir, variant, encoder)
            sentences = unique_sentences(task_list)
        args = (cache, batch_size, show_progress_bar, background_save)
        per, hit, t_encode = _layer_vectors(
            encoder, sentences, task_list[0].variant, ("cls", "mean"), *args
        )
    t0 = time.perf_counter()
    k, how = n_components, aggregation
    rows = table1_block(per, task_list, sentences, n_components=k, aggregation=how, metadata=desc)
    return Table1Evaluation(
        rows=rows,
        description=desc,
        tasks=task_list,
        sentences=sentences,
        cache_hit=hit,
        timing_s={"encode": t_encode, "score": time.perf_counter() - t0},
    )


def _check_table1_encoder(encoder: Any, n_components: int | None) -> dict[str, Any]:
    """A loaded encoder's description, once it is known to give the Table 1 block: per-layer
    vectors of at least 2 layers, at least ``n_components`` wide."""
    from sentvec.encoders.base import describe_encoder, output_dimension
    from sentvec.whitening import check_n_components

    check_n_components(n_components, output_dimension(encoder))
    if not isinstance(encoder, LayeredEncoder):
        raise TypeError(
            f"{type(encoder).__name__} has no layers or token pooling: the Table 1 block "
            "needs encode_layers; evaluate its own vectors with evaluate_sts_model"
        )
    desc = describe_encoder(encoder)
    L = int(desc.get("num_layers") or encoder.num_layers)
    if L < 2:
        raise ValueError(
            f"the Table 1 block needs a model with at least 2 layers; this one has {L}"
        )
    return desc


def _sts_from_cache(
    model: str | os.PathLike[str],
    tasks: Sequence[str] | None,
    cache: Any,
    whitening: Any,
    data_dir: Any,
    variant: str | None,
    load_options: Mapping[str, Any],
) -> tuple[Any, ...] | None:
    """One configuration's inputs from the vector cache, without loading the model: (a
    ``DescribedEncoder``, tasks, the tasks' vectors, the whitening: a corpus of sentences
    replaced by its vectors), or None (not a local transformer, the cache off, or a miss)."""
    from sentvec.cache import cached_layer_vectors
    from sentvec.encoders.base import DescribedEncoder
    from sentvec.encoders.loading import describe_without_loading
    from sentvec.evaluation.layers import combine_layers

    if cache is None or not cache.enabled:
        return None
    desc = describe_without_loading(model, **load_options)
    if desc is None:
        return None
    described = DescribedEncoder(desc)
    task_list = _read_tasks(tasks, data_dir, variant, described)
    pooling, indices = desc["pooling"], desc["layer_indices"]
    texts = [(unique_sentences(task_list), task_list[0].variant)]
    if isinstance(whitening, list):  # a corpus of sentences: its vectors are cached too
        texts.append((whitening, CORPUS_TEXT_VARIANT))
    vectors = []
    for sentences, text_variant in texts:
        per = cached_layer_vectors(
            desc,
            sentences,
            pooling=(pooling,),
            text_variant=text_variant,
            cache=cache,
            layers={pooling: indices},
        )
        if per is None:
            return None
        vectors.append(combine_layers(per[pooling], indices))
    return described, task_list, vectors[0], vectors[1] if len(vectors) > 1 else whitening


def evaluate_sts_model(
    model: str | os.PathLike[str] | Encoder,
    tasks: Sequence[str] | None = None,
    *,
    cache: Any = None,
    pooling: str | None = None,
    layers: Sequence[int] | None = None,
    whitening: Any = "none",
    n_components: int | None = None,
    aggregation: str = "mean",
    postprocessor: Any = None,
    postprocessor_for: Callable[[Encoder], Any] | None = None,
    zero_vectors: str = "senteval",
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
    data_dir: Any = None,
    variant: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    load_options: Mapping[str, Any] | None = None,
    background_save: bool = False,
) -> STSModelEvaluation:
    """One configuration of a model on STS, the model loaded only when the cache cannot serve it.

    A local transformer given by name whose pooled per-layer vectors of the tasks' sentences
    (and of a whitening corpus given as sentences) are all in ``cache`` is never loaded: it is
    scored as a :class:`sentvec.encoders.DescribedEncoder`, with the scores a loaded model
    gives. Otherwise the model is loaded; an encoder with ``encode_layers`` then reads and writes
    its per-layer vectors in ``cache``, any other is encoded by
    :func:`sentvec.evaluation.evaluate_sts`.

    Parameters
    ----------
    model : str, path or Encoder
        What :func:`sentvec.load_encoder` takes, or a loaded encoder (no ``pooling``, ``layers``).
    cache : sentvec.cache.VectorCache, optional
        None: no cache (the model is always loaded and encodes).
    pooling, layers : optional
        Passed to :func:`sentvec.load_encoder` (a transformer's token pooling and hidden states).
    whitening, n_components, aggregation, postprocessor, zero_vectors
        As :func:`sentvec.evaluation.evaluate_sts` (a list of sentences is a corpus to fit on).
    postprocessor_for : callable, optional
        Called with the encoder (a ``DescribedEncoder`` on a cache hit) before anything is
        encoded; what it returns is the ``postprocessor`` (None: none). It may raise to refuse
        the encoder, e.g. after checking an option against its width. Not with
        ``postprocessor``.
    metadata : mapping, optional
        Added to the result's metadata.
    tasks, batch_size, show_progress_bar, data_dir, variant, load_options, background_save
        As :func:`evaluate_table1`.

    Returns
    -------
    STSModelEvaluation

    Raises
    ------
    ValueError
        As :func:`sentvec.evaluation.evaluate_sts`; ``pooling`` / ``layers`` with an encoder;
        ``postprocessor`` with ``postprocessor_for``.
    """
    from sentvec.encoders.base import check_whitening_fits, output_dimension
    from sentvec.evaluation.sts import _whitening_kind, evaluate_sts
    from sentvec.whitening import check_n_components

    t_start = time.perf_counter()
    if postprocessor is not None and postprocessor_for is not None:
        raise ValueError("give postprocessor or postprocessor_for, not both")
    options = {**(load_options or {}), "pooling": pooling, "layers": layers}
    kind, whitening = _whitening_kind(whitening)  # a tuple of sentences as a list
    encoder, task_list, embeddings, whitening = _open_model(
        model, tasks, cache, whitening, data_dir, variant, options
    )
    hit = embeddings is not None
    if postprocessor_for is not None:
        postprocessor = postprocessor_for(encoder)
    check_n_components(n_components, output_dimension(encoder))
    if kind == "fitted":  # its width is known before encoding
        check_whitening_fits(encoder, whitening)
    if task_list is None:
        task_list = _read_tasks(tasks, data_dir, variant, encoder)
    t_load = time.perf_counter() - t_start
    t0 = time.perf_counter()
    if not hit and isinstance(encoder, LayeredEncoder):  # the per-layer cache
        args = (cache, batch_size, show_progress_bar, background_save)
        embeddings, whitening, hit = _combined_layer_vectors(encoder, task_list, whitening, *args)
    result = evaluate_sts(
        encoder,
        task_list,
        whitening=whitening,
        n_components=n_components,
        aggregation=aggregation,
        batch_size=batch_size,
        metadata=metadata,
        show_progress_bar=show_progress_bar,
        postprocessor=postprocessor,
        zero_vectors=zero_vectors,
        embeddings=embeddings,
    )
    timing = {"load": t_load, "encode_and_score": time.perf_counter() - t0}
    return STSModelEvaluation(result=result, tasks=task_list, cache_hit=hit, timing_s=timing)


def _open_model(
    model: str | os.PathLike[str] | Encoder,
    tasks: Sequence[str] | None,
    cache: Any,
    whitening: Any,
    data_dir: Any,
    variant: str | None,
    options: Mapping[str, Any],
) -> tuple[Any, list[STSTask] | None, np.ndarray | None, Any]:
    """(encoder, tasks, the tasks' vectors, whitening): a ``DescribedEncoder`` with the vectors
    (and a corpus of sentences replaced by its vectors) on a cache hit; else the loaded model,
    with the tasks (not read yet) and the vectors None and the whitening as given."""
    if not isinstance(model, (str, os.PathLike)):
        if options.get("pooling") is not None or options.get("layers") is not None:
            raise ValueError("pooling and layers are load options: give them with a model name")
        return model, None, None, whitening
    cached = _sts_from_cache(model, tasks, cache, whitening, data_dir, variant, options)
    if cached is not None:  # a cache hit: the model is never loaded
        encoder, task_list, embeddings, whitening = cached
        return encoder, task_list, embeddings, whitening
    return _load(model, options), None, None, whitening


def _combined_layer_vectors(
    encoder: Any, tasks: list[STSTask], whitening: Any, *args: Any
) -> tuple[np.ndarray, Any, bool]:
    """The loaded encoder's configuration vectors of the tasks' sentences (and of a whitening
    corpus given as sentences, which they replace), from the per-layer cache or one forward
    pass: (vectors, whitening, whether no forward pass ran)."""
    from sentvec.evaluation.layers import combine_layers

    pooling, indices = encoder.pooling, encoder.layer_indices
    per, hit, _ = _layer_vectors(encoder, unique_sentences(tasks), tasks[0].variant, pooling, *args)
    embeddings = combine_layers(per[pooling], indices)
    if isinstance(whitening, list):  # a corpus of sentences: its vectors are cached too
        per, corpus_hit, _ = _layer_vectors(encoder, whitening, CORPUS_TEXT_VARIANT, pooling, *args)
        whitening = combine_layers(per[pooling], indices)
        hit = hit and corpus_hit
    return embeddings, whitening, hit
