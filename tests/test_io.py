"""Atomic writes: a failed write leaves the old file or directory untouched and no temp files."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from sentvec._io import (
    atomic_directory,
    atomic_open,
    atomic_save_npy,
    load_npy,
    read_json_object,
)


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError):
        with atomic_open(target, "w", encoding="utf-8") as fh:
            fh.write("new, half written")
            raise RuntimeError("interrupted")
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_written_files_and_dirs_follow_the_umask(tmp_path):
    mask = os.umask(0o022)
    try:
        atomic_save_npy(tmp_path / "a.npy", np.arange(3))
        with atomic_directory(tmp_path / "d") as d:
            (d / "x").write_text("y", encoding="utf-8")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "a.npy").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
    np.testing.assert_array_equal(load_npy(tmp_path / "a.npy"), np.arange(3))


def test_atomic_directory_replaces_whole_directory_or_nothing(tmp_path):
    target = tmp_path / "model"
    with atomic_directory(target) as d:
        (d / "v1").write_text("1", encoding="utf-8")
    with pytest.raises(ValueError):
        with atomic_directory(target) as d:
            (d / "v2").write_text("2", encoding="utf-8")
            raise ValueError("failed half way")
    assert sorted(p.name for p in target.iterdir()) == ["v1"]
    with atomic_directory(target) as d:
        (d / "v2").write_text("2", encoding="utf-8")
    assert sorted(p.name for p in target.iterdir()) == ["v2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_load_npy_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_npy(tmp_path / "missing.npy")
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not an npy file")
    with pytest.raises(ValueError, match="not a valid .npy"):
        load_npy(bad)


def test_read_json_object_errors_name_the_file(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"format": "x", "version": 1}', encoding="utf-8")
    assert read_json_object(good) == {"format": "x", "version": 1}
    with pytest.raises(FileNotFoundError):
        read_json_object(tmp_path / "missing.json")
    for name, raw, match in [("list.json", b"[1, 2]", "holds a JSON list, expected an object"),
                             ("bad.json", b"{not json", "is not valid JSON"),
                             ("latin1.json", b'{"a": "\xe9"}', "is not valid JSON")]:
        p = tmp_path / name
        p.write_bytes(raw)
        with pytest.raises(ValueError, match=match) as exc:
            read_json_object(p)
        assert name in str(exc.value)


def test_configs_holding_a_json_list_are_clear_value_errors(tmp_path):
    # the search index and the encode manifest used to fail with AttributeError here
    from sentvec.encode_files import MANIFEST_NAME, read_manifest
    from sentvec.search import SemanticSearch

    (tmp_path / MANIFEST_NAME).write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match="expected an object"):
        read_manifest(tmp_path)
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    SemanticSearch(4).save(index_dir)
    config = next(p for p in index_dir.iterdir() if p.suffix == ".json")
    config.write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match="expected an object"):
        SemanticSearch.load(index_dir)

