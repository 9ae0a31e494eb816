"""The rows of the reproduction report (``sentvec report``) for one encoder.

:func:`transformer_report`: Table 1's rows of a transformer from its pooled per-layer vectors (the
vector cache or one forward pass); :func:`sentence_encoder_report`: a Sent2Vec or static model's
own sentence vectors, without and with per-year whitening. With ``post_processing`` each adds the
rows of the post-processing table (whitening, whitening-k, ABTT, and SIF / uSIF where the encoder
has word vectors). :func:`sentvec.evaluation.render_report` renders the page.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sentvec.encoders.base import SelfDescribing
from sentvec.evaluation.sts_data import STSTask, unique_sentences
from sentvec.evaluation.table1 import (
    PostprocessingRow,
    Table1Row,
    postprocessing_rows,
    sent2vec_rows,
    sif_rows,
    table1_rows,
)

__all__ = ["ReportBlock", "transformer_report", "sentence_encoder_report"]


@dataclass
class ReportBlock:
    """One encoder's part of the report.

    Attributes
    ----------
    rows : list of Table1Row
    info : dict
        What the "Encoders" section says of it: ``model``, ``description``, ``text_variant``,
        ``n_sentences``, ``vectors_s``, ``cache_hit``, ``scoring_s``.
    postprocessing : list of PostprocessingRow
        Its rows of the post-processing table (empty without ``post_processing``).
    notes : list of str
        Lines stated under that table.
    """

    rows: list[Table1Row]
    info: dict[str, Any]
    postprocessing: list[PostprocessingRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def transformer_report(
    encoder: Any,
    label: str,
    tasks: Sequence[STSTask],
    *,
    cache: Any = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    post_processing: bool = False,
    whitening_k: int | None = None,
    abtt_components: int | None = None,
    token_corpus: Any = None,
    token_corpus_lines: int | None = None,
) -> ReportBlock:
    """A transformer's rows: CLS / AVG x last / L1 / L1+last, without and with whitening.

    Parameters
    ----------
    encoder : TransformerEncoder
    label : str
        The model's name in the report.
    tasks : sequence of STSTask
    cache : sentvec.cache.VectorCache, optional
        Where the ``cls`` and ``mean`` pooled per-layer vectors are read and written.
    batch_size, show_progress_bar : optional
        Passed to the forward pass.
    post_processing : bool
        Also the post-processing rows of AVG L1+last and AVG last, and SIF / uSIF on the input
        token embeddings weighted by the token counts of ``token_corpus``.
    whitening_k, abtt_components : int, optional
        As :func:`sentvec.evaluation.postprocessing_rows`.
    token_corpus : path, optional
        Text whose token counts weight SIF / uSIF (without it they are skipped, with a note).
    token_corpus_lines : int, optional
        Its first lines only.

    Returns
    -------
    ReportBlock
    """
    from sentvec.cache import pooled_layer_vectors

    sentences = unique_sentences(tasks)
    vecs, hit, secs = pooled_layer_vectors(
        encoder,
        sentences,
        pooling=("cls", "mean"),
        text_variant=tasks[0].variant,
        cache=cache,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    t0 = time.perf_counter()
    block = ReportBlock(list(table1_rows(label, vecs, tasks, sentences)), {})
    if post_processing:
        post = dict(whitening_k=whitening_k, abtt_components=abtt_components)
        _transformer_post(label, encoder, vecs, tasks, sentences, block, post, token_corpus)
        if token_corpus is not None:
            _sif_rows(label, encoder, tasks, sentences, block, token_corpus, token_corpus_lines)
    block.info = {
        "model": label,
        "description": encoder.config_dict(),
        "n_sentences": len(sentences),
        "text_variant": tasks[0].variant,
        "vectors_s": secs,
        "cache_hit": hit,
        "scoring_s": time.perf_counter() - t0,
    }
    return block


def _transformer_post(
    label: str,
    encoder: Any,
    vecs: Any,
    tasks: Any,
    sentences: Any,
    block: ReportBlock,
    post: dict[str, Any],
    token_corpus: Any,
) -> None:
    """Post-processing rows of AVG L1+Llast and AVG Llast (a note when SIF / uSIF cannot
    follow: no token corpus)."""
    from sentvec.evaluation.layer_results import layer_label
    from sentvec.evaluation.layers import combine_layers, normalize_combination

    P = vecs["mean"]
    for layers in ((1, -1), (-1,)):
        idx = normalize_combination(layers, P.shape[1])
        block.postprocessing += postprocessing_rows(
            label, f"AVG {layer_label(idx)}", combine_layers(P, idx), tasks, sentences, **post
        )
    if token_corpus is None:
        block.notes.append(f"{label}: SIF / uSIF skipped (no --token-corpus for the token counts).")


def _sif_rows(
    label: str,
    encoder: Any,
    tasks: Any,
    sentences: Any,
    block: ReportBlock,
    token_corpus: Any,
    token_corpus_lines: int | None,
) -> None:
    """SIF / uSIF rows on the transformer's input token embeddings, weighted by the token counts
    of ``token_corpus``."""
    from sentvec.encoders.sif import SIFEncoder, USIFEncoder

    t0 = time.perf_counter()
    sif = SIFEncoder.from_transformer(
        encoder, token_corpus, common_component="year", max_lines=token_corpus_lines
    )
    usif = USIFEncoder(
        sif.vectors, sif.counts, tokenizer=sif.tokenizer, source=sif.source, common_component="year"
    )
    block.notes.append(
        f"{label} SIF / uSIF: {sif.source}; counting took {time.perf_counter() - t0:.1f} s."
    )
    block.postprocessing += sif_rows(label, "input token embeddings", (sif, usif), tasks, sentences)


def sentence_encoder_report(
    encoder: Any,
    label: str,
    tasks: Sequence[STSTask],
    *,
    post_processing: bool = False,
    whitening_k: int | None = None,
    abtt_components: int | None = None,
) -> ReportBlock:
    """The rows of an encoder without token pooling or layers (a Sent2Vec or static model): its
    own sentence vectors, without and with per-year whitening.

    Parameters
    ----------
    encoder : Encoder
    label : str
        The model's name in the report.
    tasks : sequence of STSTask
    post_processing : bool
        Also the post-processing rows of its sentence vectors, and for a Sent2Vec model SIF /
        uSIF on its unigram word vectors and dictionary counts.
    whitening_k, abtt_components : int, optional
        As :func:`sentvec.evaluation.postprocessing_rows`.

    Returns
    -------
    ReportBlock
    """
    sentences = unique_sentences(tasks)
    t0 = time.perf_counter()
    emb = encoder.encode(sentences)
    secs = time.perf_counter() - t0
    block = ReportBlock(list(sent2vec_rows(label, emb, tasks, sentences)), {})
    if post_processing:
        from sentvec import Sent2Vec
        from sentvec.encoders.sif import SIFEncoder, USIFEncoder

        block.postprocessing += postprocessing_rows(
            label,
            "sentence vectors",
            emb,
            tasks,
            sentences,
            whitening_k=whitening_k,
            abtt_components=abtt_components,
        )
        if isinstance(encoder, Sent2Vec):
            encs = [
                cls.from_sent2vec(encoder, common_component="year")
                for cls in (SIFEncoder, USIFEncoder)
            ]
            block.postprocessing += sif_rows(label, "unigram word vectors", encs, tasks, sentences)
            block.notes.append(
                f"{label} SIF / uSIF: the model's unigram input rows and dictionary "
                f"counts ({encs[0].vocab_size} words)."
            )
    desc = encoder.config_dict() if isinstance(encoder, SelfDescribing) else {}
    block.info = {
        "model": label,
        "description": desc,
        "n_sentences": len(sentences),
        "text_variant": tasks[0].variant,
        "vectors_s": secs,
        "cache_hit": False,
        "scoring_s": time.perf_counter() - t0 - secs,
    }
    return block
