"""``train_static``: distil, featurize a corpus with the teacher, train the rows, write the model."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentvec.encoders.static_bigrams import BigramStaticEncoder, is_bigram_model_dir
from sentvec.exceptions import FeaturesMismatchError
from sentvec.static_training.featurize import (
    DEFAULT_FEATURE_LAYERS,
    DEFAULT_SHARD_SIZE,
    MANIFEST_FILE,
    contiguous_sentences,
    featurize_corpus,
    load_features,
    load_teacher,
    read_features_manifest,
)
from sentvec.static_training.train import (
    LOSSES,
    TrainingLog,
    flatten_ids,
    sentence_vectors,
    train_rows,
)

#: Defaults, chosen on STS-B dev + SICK trial (docs/train-static.md).
DEFAULT_DIM = 256
DEFAULT_LOSS = "mse"
DEFAULT_TARGET = "pca"
DEFAULT_TARGET_LAYERS = "last"
DEFAULT_EPOCHS = 3
DEFAULT_LEARNING_RATE = 0.03
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_SENTENCES = 300_000
DEFAULT_REWEIGHTING = "none"
#: The fewest usable sentences (with at least one token) training accepts.
MIN_SENTENCES = 16

TARGETS = ("whiten", "pca", "none")
TARGET_LAYERS = ("last", "first_last")
INITS = ("distill", "random")
REWEIGHTINGS = ("none", "sif")


def _check_choice(name: str, value: str, options: Sequence[str]) -> str:
    if value not in options:
        raise ValueError(f"{name}={value!r} is invalid; choose one of {list(options)}")
    return value


def teacher_targets(
    features: np.ndarray, layers: str, target: str, dim: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """The training targets from stored teacher features.

    Parameters
    ----------
    features : ndarray of shape (n, 2, D)
        Pooled hidden states (layer 1, last layer) as :func:`featurize_corpus` stores them.
    layers : {"last", "first_last"}
        The last layer, or the average of layer 1 and the last (WhiteningBERT's L1 + L_last).
    target : {"whiten", "pca", "none"}
        WhiteningBERT's whitening to ``dim``, a PCA to ``dim`` (centred, unscaled), or the raw
        vectors (``dim`` must then be ``D``).
    dim : int

    Returns
    -------
    targets : ndarray of shape (n, dim), float32
    record : dict
    """
    from sentvec.whitening import Whitening

    T = features[:, -1] if layers == "last" else features.mean(axis=1)
    T = np.asarray(T, dtype=np.float64)
    if target == "none":
        if dim != T.shape[1]:
            raise ValueError(
                f"target='none' keeps the teacher's {T.shape[1]} dimensions; dim={dim} needs "
                "target='whiten' or 'pca'"
            )
        return T.astype(np.float32), {"target": "none"}
    if target == "whiten":
        Y = Whitening(n_components=dim).fit_transform(T)
        return np.asarray(Y, dtype=np.float32), {"target": "whiten", "dim": dim}
    mu = T.mean(axis=0)
    C = np.cov(T - mu, rowvar=False, bias=True)
    vals, vecs = np.linalg.eigh(C)
    U = vecs[:, np.argsort(vals)[::-1][:dim]]
    return ((T - mu) @ U).astype(np.float32), {"target": "pca", "dim": dim}


def procrustes_map(S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The scaled rotation ``A`` minimising ``||S A - Y||`` (orthogonal Procrustes).

    A rotation times a scalar keeps every cosine between the student's sentence vectors, so
    the initial rows score exactly as the model they come from, while their space is turned
    onto the targets' (a least-squares map would change the cosines, and it overfits small
    corpora).

    Parameters
    ----------
    S : ndarray of shape (n, d)
        Student sentence vectors.
    Y : ndarray of shape (n, d)
        Targets.

    Returns
    -------
    ndarray of shape (d, d), float64
    """
    S = np.asarray(S, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    U, sigma, Vt = np.linalg.svd(S.T @ Y)
    scale = sigma.sum() / max(float((S**2).sum()), np.finfo(np.float64).tiny)
    return scale * (U @ Vt)


def train_static(
    model: str | os.PathLike[str] = "minilm",
    corpus: str | os.PathLike[str] | None = None,
    output: str | os.PathLike[str] | None = None,
    *,
    features: str | os.PathLike[str] | None = None,
    init: str = "distill",
    dim: int = DEFAULT_DIM,
    max_sentences: int = DEFAULT_MAX_SENTENCES,
    loss: str = DEFAULT_LOSS,
    target: str = DEFAULT_TARGET,
    target_layers: str = DEFAULT_TARGET_LAYERS,
    epochs: int = DEFAULT_EPOCHS,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    reweighting: str = DEFAULT_REWEIGHTING,
    sif_a: float = 1e-3,
    bigrams: int = 0,
    precision: str = "auto",
    device: str | None = None,
    client: Any = None,
    seed: int = 0,
    show_progress_bar: bool | None = None,
) -> Any:
    """Train a static model against a transformer teacher (``sentvec train-static``).

    The rows start from ``sentvec distill``'s model of the teacher (or random), turned onto the
    target space by a scaled rotation (:func:`procrustes_map`); the teacher's vectors of the
    corpus sentences (computed, or read from ``features``) are reduced to ``dim``; the rows are
    trained so that each sentence's mean row predicts its target (:func:`train_rows`).

    Parameters
    ----------
    model : str or path-like, default "minilm"
        The teacher: an alias or a local transformer directory.
    corpus : path-like, optional
        One sentence per line (``.xz``/``.gz``/``.bz2`` as they are); default: the packaged sample.
    output : path-like, optional
        Where the model is written (Model2Vec's format, float16 rows; atomically).
    features : path-like, optional
        A features directory (:func:`featurize_corpus`) to reuse and extend; default:
        ``<output>.features`` beside the output (a temporary directory without ``output``).
    init : {"distill", "random"} or path-like, default "distill"
        A new ``distill`` of the teacher, random rows, or a static model of its tokenizer.
    dim : int, default 256
    max_sentences : int, default 300000
        Corpus sentences featurized and trained on.
    loss : {"cosine", "mse", "contrastive"}, default "mse"
    target : {"whiten", "pca", "none"}, default "pca"
    target_layers : {"last", "first_last"}, default "last"
    epochs, learning_rate, batch_size, seed
        Adam over shuffled batches.
    reweighting : {"none", "sif"}, default "none"
        After training, rows times SIF's ``sif_a / (sif_a + p)``, ``p`` from the token counts.
    bigrams : int, default 0
        Sent2Vec's bigram rows (Pagliardini et al. 2018, Eq. 2), trained with the token rows:
        ``init="distill"`` gives the most frequent corpus bigrams rows (an ``init`` directory with
        bigram rows trains them whatever this says); written as a ``BigramStaticEncoder``.
    precision, device : optional
        The teacher's forward pass.
    client : distributed.Client, optional
        Featurize on this Dask cluster.
    show_progress_bar : bool, optional

    Returns
    -------
    StaticEncoder or BigramStaticEncoder
        The trained model (a ``BigramStaticEncoder`` when it has bigram rows);
        ``model.config["sentvec_train_static"]`` records the recipe and times.

    Raises
    ------
    ValueError
        An unknown choice, a corpus with fewer than 16 sentences that have a token,
        ``max_sentences`` below 16, ``bigrams`` below 0 or with ``init="random"``.
    FeaturesMismatchError
        ``features`` written with another teacher, other options or another corpus.
    FileNotFoundError
        The corpus or the ``init`` directory does not exist.
    """
    recipe = _Recipe(
        init=init,
        dim=dim,
        max_sentences=max_sentences,
        loss=loss,
        target=target,
        target_layers=target_layers,
        epochs=epochs,
        learning_rate=learning_rate,
        batch_size=batch_size,
        reweighting=reweighting,
        sif_a=sif_a,
        bigrams=bigrams,
        precision=precision,
        device=device,
        client=client,
        seed=seed,
        show_progress_bar=show_progress_bar,
    )
    return _train_static(model, corpus, output, features, recipe)


@dataclass(frozen=True)
class _Recipe:
    """The keyword options of :func:`train_static`, checked on creation."""

    init: str
    dim: int
    max_sentences: int
    loss: str
    target: str
    target_layers: str
    epochs: int
    learning_rate: float
    batch_size: int
    reweighting: str
    sif_a: float
    bigrams: int
    precision: str
    device: str | None
    client: Any
    seed: int
    show_progress_bar: bool | None

    def __post_init__(self) -> None:
        _check_choice("loss", self.loss, LOSSES)
        _check_choice("target", self.target, TARGETS)
        _check_choice("target_layers", self.target_layers, TARGET_LAYERS)
        _check_choice("reweighting", self.reweighting, REWEIGHTINGS)
        if self.bigrams < 0:
            raise ValueError(f"bigrams={self.bigrams} is invalid; it must be at least 0")
        if self.bigrams and self.init == "random":
            raise ValueError(
                "bigrams need initial bigram rows: init='distill' or a bigram model directory, "
                "not init='random'"
            )
        if self.max_sentences < MIN_SENTENCES:
            raise ValueError(
                f"max_sentences={self.max_sentences} is invalid; training needs at least "
                f"{MIN_SENTENCES}"
            )


def _train_static(
    model: str | os.PathLike[str],
    corpus: str | os.PathLike[str] | None,
    output: str | os.PathLike[str] | None,
    features: str | os.PathLike[str] | None,
    recipe: _Recipe,
) -> Any:
    """The steps of :func:`train_static`: features, initial rows, targets, training, write."""
    corpus = _corpus_path(corpus)
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sentvec-train-static-") as tmp:
        # 1. the teacher's features
        t0 = time.perf_counter()
        if features is None:
            features = (
                Path(output).with_name(Path(output).name + ".features")
                if output
                else (Path(tmp) / "features")
            )
        feats, manifest = _teacher_features(model, corpus, features, recipe)
        times["teacher_features_s"] = time.perf_counter() - t0
        sentences = _corpus_sentences(corpus, len(feats), features)
        # 2. the initial rows
        t0 = time.perf_counter()
        student = _initial_student(model, corpus, tmp, recipe)
        times["init_s"] = time.perf_counter() - t0
        # 3. targets, tokens, alignment
        t0 = time.perf_counter()
        keep, flat, offsets = _token_ids(student, sentences, corpus)
        Y, target_record = teacher_targets(
            feats[keep], recipe.target_layers, recipe.target, recipe.dim
        )
        rows = _aligned_rows(student, flat, offsets, Y, recipe)
        times["targets_s"] = time.perf_counter() - t0
        # 4. training
        rows, log = _trained_rows(rows, flat, offsets, Y, recipe)
        times["training_s"] = log.seconds
    record = {
        "teacher": str(model),
        "corpus": os.fspath(corpus),
        "features": {k: manifest[k] for k in ("teacher", "pooling", "layers", "precision")},
        "init": str(recipe.init),
        "dim": recipe.dim,
        "n_sentences": int(keep.sum()),
        "n_tokens": log.n_tokens,
        "loss": recipe.loss,
        "target_layers": recipe.target_layers,
        **target_record,
        "epochs": recipe.epochs,
        "learning_rate": recipe.learning_rate,
        "batch_size": recipe.batch_size,
        "reweighting": recipe.reweighting,
        "bigram_rows": len(student.bigrams) if isinstance(student, BigramStaticEncoder) else 0,
        "epoch_losses": log.losses,
        "seconds": {k: round(v, 2) for k, v in times.items()},
    }
    trained = _trained_model(model, student, rows, record)
    if output is not None:
        trained.save(output)
    return trained


def _corpus_path(corpus: str | os.PathLike[str] | None) -> Path:
    """The corpus file (default: the packaged sample); FileNotFoundError when it is missing."""
    if corpus is None:
        from sentvec._data import corpus_sample_path

        corpus = corpus_sample_path()
    corpus = Path(corpus)
    if not corpus.is_file():
        raise FileNotFoundError(f"corpus {os.fspath(corpus)!r} does not exist or is not a file")
    return corpus


def _teacher_features(
    model: str | os.PathLike[str],
    corpus: Path,
    features: str | os.PathLike[str],
    recipe: _Recipe,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The first ``max_sentences`` features of ``features``, featurizing what is missing.

    An existing directory must hold the same teacher's mean-pooled features; a complete one is
    only read.
    """
    max_sentences = recipe.max_sentences
    shard_size = min(DEFAULT_SHARD_SIZE, max_sentences)
    if (Path(features) / MANIFEST_FILE).exists():
        existing = read_features_manifest(features)
        shard_size = int(existing["shard_size"])
        asked = {"teacher": os.fspath(model), "pooling": "mean"}
        diff = [
            f"{k}: {existing[k]!r} there, {v!r} asked" for k, v in asked.items() if existing[k] != v
        ]
        if diff or int(existing["layers"][0]) != DEFAULT_FEATURE_LAYERS[0]:
            raise FeaturesMismatchError(
                f"features directory {os.fspath(features)!r} was written with other options "
                f"({'; '.join(diff) or 'layers ' + str(existing['layers'])}); "
                "use another directory"
            )
        ready = contiguous_sentences(existing) >= max_sentences
    else:
        ready = False
    if not ready:  # featurize what is missing (a complete directory is only read)
        featurize_corpus(
            model,
            corpus,
            features,
            max_sentences=max_sentences,
            precision=recipe.precision,
            device=recipe.device,
            shard_size=shard_size,
            client=recipe.client,
            show_progress_bar=recipe.show_progress_bar,
        )
    return load_features(features, max_sentences=max_sentences)


def _corpus_sentences(corpus: Path, n: int, features: str | os.PathLike[str]) -> list[str]:
    """The first ``n`` sentences of ``corpus``; FeaturesMismatchError when it has fewer."""
    from sentvec.distill.corpus import corpus_lines

    sentences = []
    for line in corpus_lines(corpus):
        sentences.append(line)
        if len(sentences) == n:
            break
    if len(sentences) != n:
        raise FeaturesMismatchError(
            f"features directory {os.fspath(features)!r} holds {n} sentences but "
            f"corpus {os.fspath(corpus)!r} only {len(sentences)}"
        )
    return sentences


def _token_ids(
    student: Any, sentences: list[str], corpus: Path
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which sentences have a token (bool, (n,)), and their token ids flattened with offsets.

    Raises ValueError when fewer than :data:`MIN_SENTENCES` have one.
    """
    if isinstance(student, BigramStaticEncoder):  # token rows, then the listed bigrams' rows
        ids = student.row_ids(sentences)
    else:
        ids = student.tokenize(sentences)
    keep = np.fromiter((len(x) > 0 for x in ids), dtype=bool, count=len(ids))
    if int(keep.sum()) < MIN_SENTENCES:
        raise ValueError(
            f"corpus {os.fspath(corpus)!r} gives {int(keep.sum())} sentences with a token; "
            f"training needs at least {MIN_SENTENCES}"
        )
    flat, offsets = flatten_ids([x for x, k in zip(ids, keep, strict=True) if k])
    return keep, flat, offsets


def _aligned_rows(
    student: Any, flat: np.ndarray, offsets: np.ndarray, Y: np.ndarray, recipe: _Recipe
) -> np.ndarray:
    """The initial rows (the student's, or random ones), turned onto the targets' space."""
    rows = _effective_rows(student)
    if recipe.init == "random":
        rng = np.random.default_rng(recipe.seed)
        rows = rng.normal(0.0, 1.0, size=rows.shape).astype(np.float32)
    rows = rows.astype(np.float64) @ procrustes_map(sentence_vectors(rows, flat, offsets), Y)
    return rows.astype(np.float32)


def _trained_rows(
    rows: np.ndarray, flat: np.ndarray, offsets: np.ndarray, Y: np.ndarray, recipe: _Recipe
) -> tuple[np.ndarray, TrainingLog]:
    """The rows trained against ``Y``, then SIF-reweighted when the recipe asks; and the log."""
    rows, log = train_rows(
        rows,
        flat,
        offsets,
        Y,
        loss=recipe.loss,
        epochs=recipe.epochs,
        batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate,
        seed=recipe.seed,
        show_progress_bar=recipe.show_progress_bar,
    )
    if recipe.reweighting == "sif":
        sif_a = recipe.sif_a
        counts = np.bincount(flat, minlength=len(rows)).astype(np.float64)
        p = counts / counts.sum()
        rows = (rows * (sif_a / (sif_a + p))[:, None]).astype(np.float32)
    return rows, log


def _trained_model(
    model: str | os.PathLike[str], student: Any, rows: np.ndarray, record: dict[str, Any]
) -> Any:
    """The trained rows as a model of the student's kind and tokenizer, ``record`` in its
    config."""
    from sentvec.encoders.static import StaticEncoder

    bigram = isinstance(student, BigramStaticEncoder)
    unk_id = student.unigrams.unk_id if bigram else student.unk_id
    if unk_id >= 0:
        rows[unk_id] = 0.0  # dropped by sentvec and Model2Vec, averaged in elsewhere
    if bigram:
        return BigramStaticEncoder(
            rows.astype(np.float16),
            student.tokenizer,
            student.bigrams,
            normalize=student.normalize,
            max_length=student.max_length,
            source=f"train-static({model})",
            config={"sentvec_train_static": record},
        )
    config = {k: v for k, v in student.config.items() if k not in ("sentvec",)}
    config["sentvec_train_static"] = record
    return StaticEncoder(
        rows.astype(np.float16),
        student.tokenizer,
        normalize=student.normalize,
        drop_unknown=student.drop_unknown,
        max_length=student.max_length,
        source=f"train-static({model})",
        config=config,
    )


def _effective_rows(student: Any) -> np.ndarray:
    """The student's rows with its per-token weights folded in, one row per token id (then
    one per bigram)."""
    if isinstance(student, BigramStaticEncoder):
        return np.array(student.embeddings, dtype=np.float32)
    E = np.asarray(student.embeddings, dtype=np.float32)
    if student.token_mapping is not None:
        E = E[student.token_mapping]
    if student.weights is not None:
        E = E * student.weights[:, None]
    return np.ascontiguousarray(E, dtype=np.float32)


def _initial_student(model: Any, corpus: Path, tmp: str, recipe: _Recipe) -> Any:
    """The model whose rows training starts from (its rows are aligned by the caller)."""
    from sentvec.encoders.static import StaticEncoder, is_model2vec_dir

    init, dim, precision, device = recipe.init, recipe.dim, recipe.precision, recipe.device
    if init == "random":  # the teacher's tokenizer; the rows are drawn by the caller
        from tokenizers import Tokenizer

        teacher = load_teacher(model, precision=precision, device=device)
        tok = Tokenizer.from_str(teacher.tokenizer.backend_tokenizer.to_str())
        return StaticEncoder(
            np.zeros((tok.get_vocab_size(with_added_tokens=True), dim), np.float32),
            tok,
            normalize=True,
        )
    if init == "distill":
        from sentvec.distill.run import distill

        out = Path(tmp) / "distilled"
        distill(
            model,
            out,
            corpus=corpus,
            dim=dim,
            bigrams=recipe.bigrams,
            precision=precision,
            device=device,
            show_progress_bar=recipe.show_progress_bar,
        )
        if recipe.bigrams:
            return BigramStaticEncoder.load(out)
        return StaticEncoder.from_model2vec(out)
    path = Path(init)
    if not path.exists():
        raise FileNotFoundError(f"init {os.fspath(path)!r} does not exist")
    student: StaticEncoder | BigramStaticEncoder
    if is_bigram_model_dir(path):
        student = BigramStaticEncoder.load(path)
    elif is_model2vec_dir(path):
        student = StaticEncoder.from_model2vec(path)
    else:
        raise ValueError(
            f"init {os.fspath(path)!r} is not a Model2Vec or bigram model directory; give "
            "'distill', 'random' or a static model of the teacher's tokenizer"
        )
    if student.dim != dim:
        raise ValueError(f"init {os.fspath(path)!r} has dimension {student.dim}, not dim={dim}")
    return student


def describe(model: Any) -> str:
    """The training record of a model from :func:`train_static`, as JSON."""
    return json.dumps(model.config.get("sentvec_train_static", {}), indent=2)
