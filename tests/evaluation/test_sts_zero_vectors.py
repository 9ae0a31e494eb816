"""``zero_vectors="whiteningbert"``: the WhiteningBERT code's cosine for pairs with a zero vector.

Oracle: scikit-learn's ``1 - paired_cosine_distances``, the expression of the authors'
``EmbeddingSimilarityEvaluator``, computed here on a hand-made case with scipy's correlations.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics.pairwise import paired_cosine_distances
from sklearn.preprocessing import FunctionTransformer

from sentvec.evaluation import ZERO_VECTOR_RULES, STSSubset, STSTask, evaluate_sts, score_sts

VECS = {
    "a": [1.0, 2.0, 0.0],
    "b": [2.0, 1.0, 1.0],
    "c": [-1.0, 0.5, 2.0],
    "d": [0.0, 1.0, -1.0],
    "z1": [0.0, 0.0, 0.0],
    "z2": [0.0, 0.0, 0.0],
}
SENTENCES = list(VECS)
EMB = np.array([VECS[s] for s in SENTENCES])
# S1 holds 4 pairs with a zero vector (two of them both zero), S2 none
S1 = [
    ("a", "b"),
    ("a", "c"),
    ("b", "d"),
    ("a", "z1"),
    ("z1", "c"),
    ("z1", "z2"),
    ("d", "z2"),
    ("c", "d"),
    ("z2", "z2"),
]
G1 = [4.0, 1.0, 2.5, 3.0, 0.5, 5.0, 2.0, 1.5, 3.5]
S2 = [("a", "d"), ("b", "c"), ("c", "a"), ("d", "b")]
G2 = [1.0, 3.0, 2.0, 4.5]


def _task() -> STSTask:
    subs = [
        STSSubset(name, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), np.array(g))
        for name, pairs, g in (("S1", S1, G1), ("S2", S2, G2))
    ]
    return STSTask("T", subs, "raw", "test")


def _oracle(pairs, gold, rule):
    u = np.array([VECS[p[0]] for p in pairs])
    v = np.array([VECS[p[1]] for p in pairs])
    if rule == "whiteningbert":
        # rounded to 12 decimals as every sentvec cosine: scikit-learn's 0.5000000000000001
        # would otherwise break the tie of the one-zero pairs
        cos = np.round(1 - paired_cosine_distances(u, v), 12)
    else:  # SentEval: nan_to_num of 0/0
        with np.errstate(invalid="ignore"):
            cos = np.nan_to_num(
                (u * v).sum(1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
            )
    return cos, 100 * spearmanr(gold, cos)[0], 100 * pearsonr(gold, cos)[0]


def _score(**kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = score_sts(_task(), SENTENCES, EMB, **kw)
    return res, [str(w.message) for w in caught]


@pytest.mark.parametrize("rule", ZERO_VECTOR_RULES)
def test_rule_matches_the_reference_expression(rule):
    cos1, sp1, pe1 = _oracle(S1, G1, rule)
    if rule == "whiteningbert":  # the rule as stated: 1.0 for two zero vectors, 0.5 for one
        assert cos1[[3, 4, 6]].tolist() == [0.5, 0.5, 0.5] and cos1[[5, 8]].tolist() == [1, 1]
    res, msgs = _score(zero_vectors=rule)
    assert res.subset_scores["T"]["S1"] == pytest.approx(sp1, abs=1e-9)
    assert res.subset_pearson["T"]["S1"] == pytest.approx(pe1, abs=1e-9)
    _, sp2, pe2 = _oracle(S2, G2, rule)
    assert res.subset_scores["T"]["S2"] == pytest.approx(sp2, abs=1e-9)
    assert res.subset_pearson["T"]["S2"] == pytest.approx(pe2, abs=1e-9)
    assert res.n_zero_cosine_pairs == 5 and res.n_zero_vectors == 2
    assert len(msgs) == 1 and ("WhiteningBERT rule" in msgs[0]) == (rule == "whiteningbert")
    assert res.metadata.get("zero_vectors") == (None if rule == "senteval" else rule)


def test_default_unchanged_and_rules_differ():
    default, _ = _score()
    senteval, _ = _score(zero_vectors="senteval")
    wb, _ = _score(zero_vectors="whiteningbert")
    assert default.to_dict() == senteval.to_dict()
    assert abs(wb.subset_scores["T"]["S1"] - default.subset_scores["T"]["S1"]) > 1.0
    assert wb.subset_scores["T"]["S2"] == default.subset_scores["T"]["S2"]


def test_rule_applies_to_the_compared_vectors():
    # a fitted transformer (identity) takes the fitted-whitening path: same scores as "none"
    ident = FunctionTransformer().fit(EMB)
    fitted, _ = _score(whitening=ident, zero_vectors="whiteningbert")
    raw, _ = _score(zero_vectors="whiteningbert")
    assert fitted.subset_scores == raw.subset_scores
    # year whitening moves the zero vectors off zero (mean removed): the rule changes nothing
    year_wb, _ = _score(whitening="year", zero_vectors="whiteningbert")
    year, _ = _score(whitening="year")
    assert year_wb.subset_scores == year.subset_scores and year.n_zero_cosine_pairs == 0


def test_evaluate_sts_passes_the_rule_and_bad_values_raise():
    class Lookup:
        def encode(self, sentences, **kw):
            return np.array([VECS[s] for s in sentences])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate_sts(Lookup(), [_task()], zero_vectors="whiteningbert")
    assert res.subset_scores["T"]["S1"] == pytest.approx(_oracle(S1, G1, "whiteningbert")[1])
    with pytest.raises(ValueError, match="zero_vectors"):
        score_sts(_task(), SENTENCES, EMB, zero_vectors="one")


def test_cli_zero_vectors_flag_matches_the_api(tmp_path, capsys):
    """``eval-sts --zero-vectors whiteningbert`` = evaluate_sts(zero_vectors="whiteningbert")."""
    import json

    from _helpers import small_sts_dir

    from sentvec import Sent2Vec
    from sentvec.cli import main
    from sentvec.evaluation import load_sts

    model = "tests/data/sent2vec-reference/tiny-bigram.bin"
    data = small_sts_dir(tmp_path / "data", sts13_lines=60, stsb_lines=60)
    sub = data / "downstream" / "STS" / "STS13-en-test"
    with open(sub / "STS.input.FNWN.txt", "a", encoding="utf-8") as f:  # OOV-only sentences
        f.write("qqxz vvkw\tzzqy\nthe cat\tqqxz vvkw\nxqzv\tjjwq kkzq\n")
    with open(sub / "STS.gs.FNWN.txt", "a", encoding="utf-8") as f:
        f.write("4.0\n1.0\n3.0\n")
    tasks = load_sts(["STS13", "STSB"], data_dir=data, variant="senteval")
    enc = Sent2Vec.load(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = {rule: evaluate_sts(enc, tasks, zero_vectors=rule) for rule in ZERO_VECTOR_RULES}
    assert api["senteval"].n_zero_vectors > 0  # the tiny model leaves OOV-only sentences
    scores = {}
    for rule in ZERO_VECTOR_RULES:
        out = tmp_path / f"{rule}.json"
        assert (
            main(
                [
                    "eval-sts",
                    "--model",
                    model,
                    "--tasks",
                    "STS13,STSB",
                    "--data",
                    str(data),
                    "--variant",
                    "senteval",
                    "--zero-vectors",
                    rule,
                    "--json",
                    str(out),
                    "--no-progress",
                ]
            )
            == 0
        )
        scores[rule] = json.loads(out.read_text())
    capsys.readouterr()
    for rule in ZERO_VECTOR_RULES:
        assert scores[rule]["subset_scores"] == api[rule].to_dict()["subset_scores"], rule
        assert scores[rule]["n_zero_vectors"] == api[rule].n_zero_vectors == 4
    assert api["senteval"].subset_scores != api["whiteningbert"].subset_scores
