"""Tests of the STS readers (sentvec.evaluation.sts.load_sts) on the shipped data."""

from __future__ import annotations

import numpy as np
import pytest

from sentvec._data import PACKAGE_DATA_DIR
from sentvec.evaluation import STS_SUBSETS, STS_TASKS, STSSubset, STSTask, load_sts

EXPECTED_PAIRS = {
    "STS12": 3108,
    "STS13": 1500,
    "STS14": 3750,
    "STS15": 3000,
    "STS16": 1186,
    "STSBenchmark": 1379,
    "SICKRelatedness": 4927,
}


@pytest.fixture(scope="module")
def both_variants():
    return {v: load_sts(variant=v) for v in ("senteval", "raw")}


@pytest.mark.parametrize("variant", ["senteval", "raw"])
def test_scored_pair_counts(both_variants, variant):
    tasks = both_variants[variant]
    assert [t.name for t in tasks] == list(STS_TASKS)
    assert {t.name: t.n_pairs for t in tasks} == EXPECTED_PAIRS
    for t in tasks:
        assert t.variant == variant and t.split == "test"
        if t.name in STS_SUBSETS:
            assert t.subset_names == STS_SUBSETS[t.name]
        for s in t.subsets:
            assert s.gold.dtype == np.float64 and s.gold.shape == (s.n_pairs,)
            assert s.gold.min() >= 0 and s.gold.max() <= 5
            assert all(a and b for a, b in zip(s.sent1, s.sent2, strict=True))  # no empty sentence


def test_subset_counts_sts16(both_variants):
    sts16 = next(t for t in both_variants["raw"] if t.name == "STS16")
    assert [s.n_pairs for s in sts16.subsets] == [254, 249, 230, 244, 209]


def test_raw_and_senteval_gold_equal(both_variants):
    for a, b in zip(both_variants["senteval"], both_variants["raw"], strict=True):
        assert a.name == b.name and a.subset_names == b.subset_names
        for sa, sb in zip(a.subsets, b.subsets, strict=True):
            np.testing.assert_array_equal(sa.gold, sb.gold)


def test_senteval_text_is_tokenised_and_raw_is_not(both_variants):
    sts_b = {v: next(t for t in ts if t.name == "STSBenchmark") for v, ts in both_variants.items()}
    assert sts_b["senteval"].subsets[0].sent1[0] == "a girl is styling her hair ."
    assert sts_b["raw"].subsets[0].sent1[0] == "A girl is styling her hair."


def test_other_splits():
    train = load_sts(["STSBenchmark", "SICKRelatedness"], split="train")
    assert [t.n_pairs for t in train] == [5749, 4500]
    dev = load_sts(["STSBenchmark", "SICKRelatedness"], split="dev", variant="raw")
    assert [t.n_pairs for t in dev] == [1500, 500]
    assert dev[1].split == "trial"  # SICK's dev split is called trial
    assert load_sts("SICKRelatedness", split="trial")[0].n_pairs == 500


def test_raw_stsb_quotes_and_nine_field_lines():
    (task,) = load_sts(["STSBenchmark"], variant="raw")
    sub = task.subsets[0]
    i = sub.sent1.index('A young boy jumping into a pool that says "no diving".')
    assert sub.sent2[i] == "A boy jumps into a pool while lifeguards watch."
    assert sub.gold[i] == pytest.approx(3.2)
    # a 9-field line (two source columns after the sentences) with quotes in sentence 2
    j = sub.sent2.index('My answer to your question is "Probably Not".')
    assert sub.sent1[j] == "Unfortunately the answer to your question is we simply do not know."
    assert sub.gold[j] == 1.0


def test_sick_crlf_and_header_skipped():
    (task,) = load_sts(["SICKRelatedness"], variant="raw")
    sub = task.subsets[0]
    assert sub.sent1[0] == "There is no boy playing outdoors and there is no man smiling"
    assert sub.gold[0] == pytest.approx(3.3)
    assert not any("\r" in s for s in sub.sent2) and "sentence_A" not in sub.sent1


def test_sts16_raw_takes_first_two_of_four_columns():
    (task,) = load_sts(["STS16"], variant="raw")
    assert not any("StackExchange Network" in s for sub in task.subsets for s in sub.sent2)


def test_unknown_names_list_options():
    with pytest.raises(ValueError, match=r"task='STS17'.*STSBenchmark"):
        load_sts(["STS17"])
    with pytest.raises(ValueError, match=r"variant='tok'.*raw"):
        load_sts(variant="tok")
    with pytest.raises(ValueError, match=r"split='validation'.*trial"):
        load_sts(["STSBenchmark"], split="validation")
    with pytest.raises(ValueError, match=r"split='train' is invalid for task 'STS12'"):
        load_sts(["STS12"], split="train")


def _write(path, text, *, bom=False, crlf=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    if crlf:
        text = text.replace("\n", "\r\n")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def _tiny_sts13(root, *, bom=False, crlf=False):
    d = root / "STS" / "STS13-en-test"
    for name in STS_SUBSETS["STS13"]:
        _write(
            d / f"STS.input.{name}.txt",
            f"{name} one\tthe “quoted” two\textra\tcols\n\"a\" b\tc 'd'\nx\ty\n",
            bom=bom,
            crlf=crlf,
        )
        _write(d / f"STS.gs.{name}.txt", "4.5\n\n0\n", bom=bom, crlf=crlf)


@pytest.mark.parametrize("bom,crlf", [(False, False), (True, True)])
def test_semeval_reader_bom_crlf_empty_gold(tmp_path, bom, crlf):
    _tiny_sts13(tmp_path / "downstream", bom=bom, crlf=crlf)
    (task,) = load_sts(["STS13"], data_dir=tmp_path)
    assert task.n_pairs == 6  # the pair with an empty gold line is skipped in each subset
    sub = task.subsets[0]
    assert sub.sent1 == ("FNWN one", "x") and sub.sent2 == ("the “quoted” two", "y")
    np.testing.assert_array_equal(sub.gold, [4.5, 0.0])


def test_data_dir_layouts(tmp_path):
    _tiny_sts13(tmp_path / "senteval" / "data" / "downstream")  # a SentEval checkout
    assert load_sts(["STS13"], data_dir=tmp_path / "senteval")[0].n_pairs == 6
    _tiny_sts13(tmp_path / "flat")  # a folder holding STS/ directly
    assert load_sts(["STS13"], data_dir=tmp_path / "flat")[0].n_pairs == 6
    assert load_sts(["STS13"], data_dir=PACKAGE_DATA_DIR)[0].n_pairs == 1500


def test_missing_files_name_the_path(tmp_path):
    _tiny_sts13(tmp_path / "downstream")
    (tmp_path / "downstream" / "STS" / "STS13-en-test" / "STS.gs.OnWN.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"STS\.gs\.OnWN\.txt"):
        load_sts(["STS13"], data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="STS14-en-test"):
        load_sts(["STS14"], data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_sts(data_dir=tmp_path / "nowhere")


def test_malformed_files_raise(tmp_path):
    _tiny_sts13(tmp_path / "downstream")
    d = tmp_path / "downstream" / "STS" / "STS13-en-test"
    _write(d / "STS.gs.FNWN.txt", "4.5\n\nfive\n")
    with pytest.raises(ValueError, match=r"line 3: score 'five'"):
        load_sts(["STS13"], data_dir=tmp_path)
    _write(d / "STS.gs.FNWN.txt", "4.5\n")
    with pytest.raises(ValueError, match="has 3 lines"):
        load_sts(["STS13"], data_dir=tmp_path)
    # gold scores outside the STS scale, or not finite, name the file and line
    for bad in ("nan", "inf", "77", "-0.5"):
        _write(d / "STS.gs.FNWN.txt", f"4.5\n\n{bad}\n")
        with pytest.raises(
            ValueError,
            match=rf"STS\.gs\.FNWN\.txt' line 3: gold score '{bad}' "
            r"is outside \[0, 5\]",
        ):
            load_sts(["STS13"], data_dir=tmp_path)
    # a subset whose gold lines are all blank has no scored pair: an error, not a NaN score
    _write(d / "STS.gs.FNWN.txt", "\n\n\n")
    with pytest.raises(ValueError, match="subset 'FNWN' has no scored pairs"):
        load_sts(["STS13"], data_dir=tmp_path)
    # bytes that are not UTF-8 (a Latin-1 e-acute on line 2) name the file and line
    _write(d / "STS.gs.FNWN.txt", "4.5\n\n0\n")
    (d / "STS.input.FNWN.txt").write_bytes(b"a\tb\ncaf\xe9\tc\nx\ty\n")
    with pytest.raises(ValueError, match=r"STS\.input\.FNWN\.txt' line 2: byte 0xE9 is not valid"):
        load_sts(["STS13"], data_dir=tmp_path)


def test_dataclasses_are_frozen_and_checked():
    sub = STSSubset("x", ("a",), ("b",), np.array([1.0]))
    with pytest.raises(AttributeError):
        sub.name = "y"
    with pytest.raises(ValueError):
        sub.gold[0] = 2.0  # read-only gold
    with pytest.raises(ValueError, match="lengths differ"):
        STSSubset("x", ("a", "b"), ("c",), np.array([1.0]))
    task = STSTask("T", [sub, sub], "raw", "test")
    assert task.subsets == (sub, sub) and task.n_pairs == 2


def test_short_task_names_accepted_everywhere():
    """``load_sts("STSB")`` once failed although the CLI and the tables say STSB."""
    from sentvec.cli._args import sts_task_list
    from sentvec.evaluation import STS_TASK_ALIASES, canonical_sts_task

    (task,) = load_sts("STSB")
    assert task.name == "STSBenchmark" and task.n_pairs == EXPECTED_PAIRS["STSBenchmark"]
    assert [t.name for t in load_sts(["sick", "sts12"])] == ["SICKRelatedness", "STS12"]
    assert canonical_sts_task("Sts-B") == "STSBenchmark"
    # one alias table: the CLI parser resolves through the same function
    assert sts_task_list("stsb,SICK-R,STS16") == ["STSBenchmark", "SICKRelatedness", "STS16"]
    assert set(STS_TASK_ALIASES.values()) == set(STS_TASKS)
    with pytest.raises(ValueError, match=r"task='STS17'.*short names.*stsb"):
        canonical_sts_task("STS17")
