"""PNG figures of the layer analysis and the whitening sweep (matplotlib, Agg canvas).

Figure 1 (heat map of every two-layer combination) and Figure 2 (best score per number of
combined hidden states) of WhiteningBERT (Huang et al., 2021), STS average versus the kept
whitening dimension k (BERT-whitening, Su et al., 2021), and RTE accuracy versus the cosine
threshold (WhiteningBERT Table 3). No pyplot and no global backend
change; every file is written atomically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from sentvec.evaluation.layer_results import layer_label

if TYPE_CHECKING:
    from sentvec.evaluation.layer_results import LayerAnalysis
    from sentvec.evaluation.rte import RTEResult
    from sentvec.evaluation.sweep import WhiteningSweep

__all__ = ["plot_pair_heatmap", "plot_size_curve", "plot_whitening_sweep", "plot_rte_thresholds"]


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(fig)
    return fig


def _save_png(fig: Any, path: Any) -> None:
    """Lay out ``fig`` and write it as PNG, atomically (temp file + rename)."""
    from sentvec._io import atomic_open

    fig.tight_layout()
    # tight_layout leaves a placeholder layout engine, for which savefig would lay the figure
    # out again in a dry-run draw; the layout is already final
    fig.set_layout_engine("none")
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png")


def plot_pair_heatmap(analysis: LayerAnalysis, path: Any) -> None:
    """Write Figure 1 (annotated heat maps of all pairs, one panel per whitening mode) as PNG.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend change); the file is
    written atomically.
    """
    modes = analysis.whitening_modes
    K = analysis.n_hidden_states
    fig = _figure(4.2 * len(modes) + 0.8, 4.2)
    for n, w in enumerate(modes):
        ax = fig.add_subplot(1, len(modes), n + 1)
        M = analysis.pair_matrix(w)
        im = ax.imshow(M, cmap="RdYlBu_r", origin="upper")
        best = analysis.best_pair(w)
        for i in range(K):
            for j in range(K):
                if np.isfinite(M[i, j]):
                    bold = (min(i, j), max(i, j)) == (best.layers[0], best.layers[-1])
                    shade = float(im.norm(M[i, j]))
                    ax.text(
                        j,
                        i,
                        f"{M[i, j]:.1f}",
                        ha="center",
                        va="center",
                        fontsize=7 if K <= 8 else 5,
                        color="white" if shade < 0.2 or shade > 0.8 else "black",
                        fontweight="bold" if bold else "normal",
                    )
        ticks = [f"L{i}" for i in range(K)]
        ax.set_xticks(range(K), ticks, fontsize=7)
        ax.set_yticks(range(K), ticks, fontsize=7)
        ax.set_title(
            f"{analysis.mode_label(w)}; best {best.label} = {best.average:.2f}", fontsize=9
        )
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig.suptitle(
        f"{analysis.model}: STS avg of every two-layer combination ({analysis.pooling} pooling)",
        fontsize=10,
    )
    _save_png(fig, path)


def plot_size_curve(analysis: LayerAnalysis, path: Any) -> None:
    """Write Figure 2 (best STS average per number of combined hidden states) as PNG."""
    fig = _figure(6.4, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    for n, (w, marker) in enumerate(zip(analysis.whitening_modes, "os", strict=False)):
        pts = analysis.curve(w)
        if not pts:
            continue
        xs = [p.n_layers for p in pts]
        ys = [p.best.average for p in pts]
        ax.plot(xs, ys, marker=marker, label=analysis.mode_label(w))
        for p in pts:
            ax.annotate(
                p.best.label + ("*" if p.method == "beam" else ""),
                (p.n_layers, p.best.average),
                textcoords="offset points",
                xytext=(0, 6 if n == 0 else -11),
                ha="center",
                fontsize=6,
            )
    ax.set_xlabel("number of combined hidden states")
    ax.set_ylabel("best STS avg (Spearman x 100)")
    ax.set_title(
        f"{analysis.model}: best combination per size"
        + (" (* = beam search)" if any(s.method == "beam" for s in analysis.by_size) else ""),
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save_png(fig, path)


def plot_whitening_sweep(sweep: WhiteningSweep, path: Any) -> None:
    """Write the STS average versus k (log-scaled x axis) as PNG."""
    fig = _figure(6.4, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    for fit, marker in (("year", "o"), ("corpus", "s")):
        pts = sweep.series(fit)
        if pts:
            ax.plot(
                [p.k for p in pts],
                [p.average for p in pts],
                marker=marker,
                label="whitening fitted per year (paper)"
                if fit == "year"
                else f"whitening fitted on corpus ({sweep.corpus.get('n_used')} sentences)",
            )
    base = sweep.series("none")
    if base:
        ax.axhline(base[0].average, color="grey", linestyle="--", label="no whitening")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("kept dimensions k")
    ax.set_ylabel("STS avg (Spearman x 100)")
    ax.set_title(
        f"{sweep.model} {layer_label(sweep.layers)}: whitening dimension sweep", fontsize=9
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save_png(fig, path)


def plot_rte_thresholds(result: RTEResult, path: Any) -> None:
    """Write RTE accuracy and the share predicted entailment against the threshold as PNG.

    Both curves are exact (from ``result.cosines``) on 401 thresholds over -1...1, with the
    majority-class accuracy and the chosen threshold marked.
    """
    cos = np.asarray(result.cosines, dtype=np.float64)
    if cos.size == 0:
        raise ValueError("result has no cosines to plot")
    grid = np.linspace(-1.0, 1.0, 401)
    pred = cos[None, :] > grid[:, None]
    share = 100.0 * pred.mean(axis=1)
    accuracy = 100.0 * (pred == np.asarray(result.entailment, dtype=bool)[None, :]).mean(axis=1)
    fig = _figure(6.4, 4.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(grid, accuracy, label="accuracy")
    ax.plot(grid, share, linestyle=":", label="predicted entailment %")
    ax.axhline(
        result.majority_accuracy,
        color="grey",
        linestyle="--",
        label=f"majority class ({result.majority_accuracy:.1f})",
    )
    ax.axvline(result.threshold, color="black", linewidth=0.8)
    ax.plot([result.threshold], [result.accuracy], "o", color="black")
    ax.annotate(
        f"{result.accuracy:.1f} at {result.threshold:g}",
        (result.threshold, result.accuracy),
        textcoords="offset points",
        xytext=(6, 6),
        fontsize=8,
    )
    ax.set_xlim(-1.0, 1.0)
    ax.set_ylim(0.0, 100.0)
    ax.set_xlabel("threshold t (entailment where cosine > t)")
    ax.set_ylabel("percent of pairs")
    meta = result.metadata
    name = str(meta.get("model") or meta.get("encoder", "model"))
    idx = meta.get("layer_indices")
    if meta.get("pooling") and idx:
        name += f" {meta['pooling']} " + "+".join(f"L{i}" for i in idx)
    ax.set_title(
        f"{name}: RTE dev, whitening {result.whitening.mode}; ROC AUC {result.auc:.1f}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save_png(fig, path)
