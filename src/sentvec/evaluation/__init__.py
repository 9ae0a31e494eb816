"""The evaluation wing: the papers' protocols, on any encoder.

* ``sts_data``: the STS readers (:func:`load_sts`) and :func:`unique_sentences`;
* ``cosine``: cosine similarity of row pairs (:func:`cosine_similarity_rows`);
* ``sts``: the WhiteningBERT STS protocol (:func:`score_sts`, :class:`STSScorer`,
  :func:`evaluate_sts`); ``results``: correlations, aggregations, :class:`STSResult`;
* ``sts_model``: a model named by alias or path on STS, loaded only when the vector cache cannot
  serve it (:func:`evaluate_sts_model`, :func:`evaluate_table1`);
* ``table1``: Table 1's configurations, rows and the Markdown report; ``report``: each
  encoder's rows of that report;
* ``layers`` / ``layer_results``: the layer-combination search (Figures 1 and 2);
* ``sweep``: STS against the whitening dimension k; ``plots``: the figures;
* ``transfer_data`` / ``transfer``: SentEval-style transfer tasks: the readers / the classifier
  protocols;
* ``rte``: RTE by a cosine threshold (WhiteningBERT Table 3): reader, protocol, result;
* ``_kernels``: the compiled (numba) kernels of the evaluation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentvec._lazy import attach

# public name -> module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "STS_TASKS": "sentvec.evaluation.sts_data",
    "STS_TASK_ALIASES": "sentvec.evaluation.sts_data",
    "canonical_sts_task": "sentvec.evaluation.sts_data",
    "STS_SUBSETS": "sentvec.evaluation.sts_data",
    "STS_SPLITS": "sentvec.evaluation.sts_data",
    "TEXT_VARIANTS": "sentvec.evaluation.sts_data",
    "GOLD_RANGE": "sentvec.evaluation.sts_data",
    "STSSubset": "sentvec.evaluation.sts_data",
    "STSTask": "sentvec.evaluation.sts_data",
    "load_sts": "sentvec.evaluation.sts_data",
    "unique_sentences": "sentvec.evaluation.sts_data",
    "as_task_list": "sentvec.evaluation.sts_data",
    "WHITENING_MODES": "sentvec.evaluation.sts",
    "ZERO_VECTOR_RULES": "sentvec.evaluation.sts",
    "score_sts": "sentvec.evaluation.sts",
    "STSScorer": "sentvec.evaluation.sts",
    "evaluate_sts": "sentvec.evaluation.sts",
    "cosine_similarity_rows": "sentvec.evaluation.cosine",
    "AGGREGATIONS": "sentvec.evaluation.results",
    "Aggregation": "sentvec.evaluation.results",
    "TABLE_COLUMNS": "sentvec.evaluation.results",
    "JSONRecord": "sentvec.evaluation.results",
    "WhiteningInfo": "sentvec.evaluation.results",
    "STSResult": "sentvec.evaluation.results",
    "SubsetScores": "sentvec.evaluation.results",
    "correlations": "sentvec.evaluation.results",
    "rank_golds": "sentvec.evaluation.results",
    "aggregate_scores": "sentvec.evaluation.results",
    "results_table_markdown": "sentvec.evaluation.results",
    "results_table_text": "sentvec.evaluation.results",
    "postprocessing_label": "sentvec.evaluation.results",
    "describe_postprocessor": "sentvec.evaluation.results",
    "STSModelEvaluation": "sentvec.evaluation.sts_model",
    "Table1Evaluation": "sentvec.evaluation.sts_model",
    "evaluate_sts_model": "sentvec.evaluation.sts_model",
    "evaluate_table1": "sentvec.evaluation.sts_model",
    "ReportBlock": "sentvec.evaluation.report",
    "transformer_report": "sentvec.evaluation.report",
    "sentence_encoder_report": "sentvec.evaluation.report",
    "TABLE1_CONFIGS": "sentvec.evaluation.table1",
    "Table1Row": "sentvec.evaluation.table1",
    "table1_block": "sentvec.evaluation.table1",
    "table1_rows": "sentvec.evaluation.table1",
    "sent2vec_rows": "sentvec.evaluation.table1",
    "render_report": "sentvec.evaluation.table1",
    "describe_encoder_line": "sentvec.evaluation.table1",
    "POSTPROCESSING_METHODS": "sentvec.evaluation.table1",
    "PostprocessingRow": "sentvec.evaluation.table1",
    "postprocessing_rows": "sentvec.evaluation.table1",
    "sif_rows": "sentvec.evaluation.table1",
    "postprocessing_markdown": "sentvec.evaluation.table1",
    "DEFAULT_EXHAUSTIVE_LIMIT": "sentvec.evaluation.layers",
    "DEFAULT_BEAM_WIDTH": "sentvec.evaluation.layers",
    "normalize_combination": "sentvec.evaluation.layers",
    "combine_layers": "sentvec.evaluation.layers",
    "CombinationScorer": "sentvec.evaluation.layers",
    "evaluate_pairs": "sentvec.evaluation.layers",
    "search_combinations": "sentvec.evaluation.layers",
    "analyze_layers": "sentvec.evaluation.layers",
    "LAYER_WHITENING_MODES": "sentvec.evaluation.layer_results",
    "SEARCH_METHODS": "sentvec.evaluation.layer_results",
    "COMBINATION_NOTE": "sentvec.evaluation.layer_results",
    "layer_label": "sentvec.evaluation.layer_results",
    "rank_key": "sentvec.evaluation.layer_results",
    "CombinationScore": "sentvec.evaluation.layer_results",
    "SizeBest": "sentvec.evaluation.layer_results",
    "LayerTimings": "sentvec.evaluation.layer_results",
    "LayerAnalysis": "sentvec.evaluation.layer_results",
    "CORPUS_PREPROCESSING": "sentvec.evaluation.sweep",
    "prepare_corpus": "sentvec.evaluation.sweep",
    "SweepPoint": "sentvec.evaluation.sweep",
    "WhiteningSweep": "sentvec.evaluation.sweep",
    "whitening_sweep": "sentvec.evaluation.sweep",
    "evaluate_whitening_sweep": "sentvec.evaluation.sweep",
    "plot_pair_heatmap": "sentvec.evaluation.plots",
    "plot_size_curve": "sentvec.evaluation.plots",
    "plot_whitening_sweep": "sentvec.evaluation.plots",
    "TRANSFER_TASKS": "sentvec.evaluation.transfer_data",
    "AVERAGED_TASKS": "sentvec.evaluation.transfer",
    "DEFAULT_C_GRID": "sentvec.evaluation.transfer",
    "TransferSplit": "sentvec.evaluation.transfer_data",
    "TransferData": "sentvec.evaluation.transfer_data",
    "load_transfer": "sentvec.evaluation.transfer_data",
    "TransferResult": "sentvec.evaluation.transfer",
    "pair_features": "sentvec.evaluation.transfer",
    "evaluate_transfer": "sentvec.evaluation.transfer",
    "transfer_table_markdown": "sentvec.evaluation.transfer",
    "RTE_DEV_PAIRS": "sentvec.evaluation.rte",
    "RTE_COLUMNS": "sentvec.evaluation.rte",
    "RTE_LABELS": "sentvec.evaluation.rte",
    "RTE_WHITENING_MODES": "sentvec.evaluation.rte",
    "RTE_THRESHOLD_GRID": "sentvec.evaluation.rte",
    "PAPER_RTE_ACCURACY": "sentvec.evaluation.rte",
    "RTEData": "sentvec.evaluation.rte",
    "RTEThresholdPoint": "sentvec.evaluation.rte",
    "RTEResult": "sentvec.evaluation.rte",
    "load_rte": "sentvec.evaluation.rte",
    "prepare_rte_text": "sentvec.evaluation.rte",
    "score_rte": "sentvec.evaluation.rte",
    "evaluate_rte": "sentvec.evaluation.rte",
    "rte_threshold_table": "sentvec.evaluation.rte",
    "plot_rte_thresholds": "sentvec.evaluation.plots",
}

__all__, __getattr__, __dir__ = attach(__name__, _LAZY)

if TYPE_CHECKING:  # pragma: no cover
    from sentvec.evaluation.cosine import cosine_similarity_rows  # noqa: F401
    from sentvec.evaluation.layer_results import (
        COMBINATION_NOTE,
        LAYER_WHITENING_MODES,
        SEARCH_METHODS,
        CombinationScore,
        LayerAnalysis,
        LayerTimings,
        SizeBest,
        layer_label,
        rank_key,
    )  # noqa: F401
    from sentvec.evaluation.layers import (
        DEFAULT_BEAM_WIDTH,
        DEFAULT_EXHAUSTIVE_LIMIT,
        CombinationScorer,
        analyze_layers,
        combine_layers,
        evaluate_pairs,
        normalize_combination,
        search_combinations,
    )  # noqa: F401
    from sentvec.evaluation.plots import (  # noqa: F401
        plot_pair_heatmap,
        plot_rte_thresholds,
        plot_size_curve,
        plot_whitening_sweep,
    )
    from sentvec.evaluation.report import (  # noqa: F401
        ReportBlock,
        sentence_encoder_report,
        transformer_report,
    )
    from sentvec.evaluation.results import (
        AGGREGATIONS,
        TABLE_COLUMNS,
        Aggregation,
        JSONRecord,
        STSResult,
        SubsetScores,
        WhiteningInfo,
        aggregate_scores,
        correlations,
        describe_postprocessor,
        postprocessing_label,
        rank_golds,
        results_table_markdown,
        results_table_text,
    )  # noqa: F401
    from sentvec.evaluation.rte import (  # noqa: F401
        PAPER_RTE_ACCURACY,
        RTE_COLUMNS,
        RTE_DEV_PAIRS,
        RTE_LABELS,
        RTE_THRESHOLD_GRID,
        RTE_WHITENING_MODES,
        RTEData,
        RTEResult,
        RTEThresholdPoint,
        evaluate_rte,
        load_rte,
        prepare_rte_text,
        rte_threshold_table,
        score_rte,
    )
    from sentvec.evaluation.sts import (
        WHITENING_MODES,
        ZERO_VECTOR_RULES,
        STSScorer,
        evaluate_sts,
        score_sts,
    )  # noqa: F401
    from sentvec.evaluation.sts_data import (
        GOLD_RANGE,
        STS_SPLITS,
        STS_SUBSETS,
        STS_TASK_ALIASES,
        STS_TASKS,
        TEXT_VARIANTS,
        STSSubset,
        STSTask,
        as_task_list,
        canonical_sts_task,
        load_sts,
        unique_sentences,
    )  # noqa: F401
    from sentvec.evaluation.sts_model import (
        STSModelEvaluation,
        Table1Evaluation,
        evaluate_sts_model,
        evaluate_table1,
    )  # noqa: F401
    from sentvec.evaluation.sweep import (
        CORPUS_PREPROCESSING,
        SweepPoint,
        WhiteningSweep,
        evaluate_whitening_sweep,
        prepare_corpus,
        whitening_sweep,
    )  # noqa: F401
    from sentvec.evaluation.table1 import (
        POSTPROCESSING_METHODS,
        TABLE1_CONFIGS,
        PostprocessingRow,
        Table1Row,
        describe_encoder_line,
        postprocessing_markdown,
        postprocessing_rows,
        render_report,
        sent2vec_rows,
        sif_rows,
        table1_block,
        table1_rows,
    )  # noqa: F401
    from sentvec.evaluation.transfer import (
        AVERAGED_TASKS,
        DEFAULT_C_GRID,
        TransferResult,
        evaluate_transfer,
        pair_features,
        transfer_table_markdown,
    )  # noqa: F401
    from sentvec.evaluation.transfer_data import (  # noqa: F401
        TRANSFER_TASKS,
        TransferData,
        TransferSplit,
        load_transfer,
    )
