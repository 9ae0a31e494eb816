"""Small helpers shared by test modules (importable because pytest puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path


def small_sts_dir(root: Path, *, sts13_lines: int, stsb_lines: int) -> Path:
    """A data dir holding the first lines of the shipped STS13 (3 subsets) and STS-B test files."""
    from sentvec._data import data_dir

    src = data_dir() / "downstream" / "STS"
    sts13 = root / "downstream" / "STS" / "STS13-en-test"
    sts13.mkdir(parents=True)
    for sub in ("FNWN", "headlines", "OnWN"):
        for kind in ("input", "gs"):
            name = f"STS.{kind}.{sub}.txt"
            lines = (src / "STS13-en-test" / name).read_text(encoding="utf-8").splitlines(True)
            (sts13 / name).write_text("".join(lines[:sts13_lines]), encoding="utf-8")
    stsb = root / "downstream" / "STS" / "STSBenchmark"
    stsb.mkdir(parents=True)
    lines = (src / "STSBenchmark" / "sts-test.csv").read_text(encoding="utf-8").splitlines(True)
    (stsb / "sts-test.csv").write_text("".join(lines[:stsb_lines]), encoding="utf-8")
    return root
