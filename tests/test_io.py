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
    with atomic_directory(target, marker="kind.json") as d:
        (d / "kind.json").write_text("{}", encoding="utf-8")
        (d / "v1").write_text("1", encoding="utf-8")
    with pytest.raises(ValueError):
        with atomic_directory(target, marker="kind.json") as d:
            (d / "v2").write_text("2", encoding="utf-8")
            raise ValueError("failed half way")
    assert sorted(p.name for p in target.iterdir()) == ["kind.json", "v1"]
    with atomic_directory(target, marker="kind.json") as d:
        (d / "kind.json").write_text("{}", encoding="utf-8")
        (d / "v2").write_text("2", encoding="utf-8")
    assert sorted(p.name for p in target.iterdir()) == ["kind.json", "v2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def _tree(root):
    """Every path under ``root`` with its file bytes (None for directories)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def test_atomic_directory_refuses_files_and_foreign_directories(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me", encoding="utf-8")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "precious.txt").write_text("keep me too", encoding="utf-8")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text('{"format": "other"}', encoding="utf-8")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    before = _tree(tmp_path)
    cases = [
        ("notes.txt", {}, "is not a directory"),
        ("dir", {}, "non-empty directory"),
        ("dir", {"marker": "kind.json"}, "no kind.json"),
        (
            "hf",
            {"marker": "config.json", "marker_format": "mine"},
            "no config.json of format 'mine'",
        ),
        ("dangling", {}, "broken symbolic link"),
    ]
    for name, kw, match in cases:
        with pytest.raises(FileExistsError, match=match) as exc:
            with atomic_directory(tmp_path / name, kind="a thing", **kw) as d:
                (d / "x").write_text("new", encoding="utf-8")
        assert name in str(exc.value) and "refusing to replace" in str(exc.value)
    assert _tree(tmp_path) == before  # nothing touched, no temporary left behind
    # an empty directory and a directory with the marker (of the right format) are replaced
    (tmp_path / "empty").mkdir()
    (tmp_path / "hf" / "config.json").write_text('{"format": "mine"}', encoding="utf-8")
    for name, kw in [("empty", {}), ("hf", {"marker": "config.json", "marker_format": "mine"})]:
        with atomic_directory(tmp_path / name, **kw) as d:
            (d / "x").write_text("new", encoding="utf-8")
        assert _tree(tmp_path / name) == {"x": b"new"}


def test_atomic_directory_refuses_working_directory_and_root(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "data.csv").write_text("1,2\n", encoding="utf-8")
    monkeypatch.chdir(work / "sub")
    before = _tree(tmp_path)
    for target in (".", "..", str(work), os.path.abspath(os.sep)):
        with pytest.raises(ValueError, match="cannot save a thing at") as exc:
            with atomic_directory(target, kind="a thing") as d:
                (d / "x").write_text("new", encoding="utf-8")
        assert repr(target) in str(exc.value)
    assert _tree(tmp_path) == before  # no ".xxx.tmp" or ".xxx.old" left anywhere


def test_atomic_directory_checks_again_before_the_swap(tmp_path):
    target = tmp_path / "out"
    with pytest.raises(FileExistsError, match="non-empty directory"):
        with atomic_directory(target) as d:
            (d / "x").write_text("new", encoding="utf-8")
            target.mkdir()  # someone else writes there meanwhile
            (target / "theirs.txt").write_text("theirs", encoding="utf-8")
    assert _tree(tmp_path) == {"out": None, "out/theirs.txt": b"theirs"}


def test_atomic_directory_puts_the_old_directory_back_if_the_swap_fails(tmp_path, monkeypatch):
    import sentvec._io as io_mod

    target = tmp_path / "model"
    with atomic_directory(target, marker="kind.json") as d:
        (d / "kind.json").write_text("{}", encoding="utf-8")
    before = _tree(tmp_path)
    real_replace = os.replace

    def failing_replace(src, dst):
        if str(src).endswith(".tmp"):
            raise OSError("simulated failure of the second rename")
        return real_replace(src, dst)

    monkeypatch.setattr(io_mod.os, "replace", failing_replace)
    with pytest.raises(OSError, match="simulated"):
        with atomic_directory(target, marker="kind.json") as d:
            (d / "kind.json").write_text('{"new": 1}', encoding="utf-8")
    monkeypatch.undo()
    assert _tree(tmp_path) == before


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
    for name, raw, match in [
        ("list.json", b"[1, 2]", "holds a JSON list, expected an object"),
        ("bad.json", b"{not json", "is not valid JSON"),
        ("latin1.json", b'{"a": "\xe9"}', "is not valid JSON"),
    ]:
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


@pytest.mark.skipif(not os.path.ismount("/proc"), reason="needs a mount point at /proc")
def test_atomic_directory_refuses_a_mount_point():
    with pytest.raises(ValueError, match="mount point"):
        with atomic_directory("/proc", marker="kind.json"):
            pass  # pragma: no cover - refused before the body runs


def test_read_text_lines(tmp_path):
    from sentvec._io import read_text_lines

    f = tmp_path / "t.txt"
    # BOM dropped at the start only; lines split on \n only (\r\n ends a line, a lone \r or
    # U+2028 does not); a last line without newline counts
    f.write_bytes(b"\xef\xbb\xbfa\r\nb\xe2\x80\xa8c\rd\n\xef\xbb\xbfe")
    assert read_text_lines(f) == ["a", "b\u2028c\rd", "\ufeffe"]
    f.write_bytes(b"ok\nna\xefve\n")
    with pytest.raises(ValueError, match=r"t\.txt' line 2 is not valid UTF-8 .*iconv"):
        read_text_lines(f)
    with pytest.raises(IsADirectoryError, match="queries .* is a directory"):
        read_text_lines(tmp_path, what="queries")
    with pytest.raises(FileNotFoundError, match="queries file not found"):
        read_text_lines(tmp_path / "nope.txt", what="queries")


@pytest.mark.parametrize("errors", ["replace", "surrogateescape", "strict"])
@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_line_reader_blocks_equal_its_lines(tmp_path, errors, chunk):
    """``blocks`` (whole lines' bytes) decoded by ``decode_line`` give what iteration (line by
    line) gives: a BOM at the start only, a kept \\r, empty lines, no final newline, multi-byte
    characters across block ends, invalid UTF-8 counted in ``n_bad`` or refused with the same
    message (the same line number)."""
    from sentvec._io import UTF8_BOM, TextLineReader

    good = UTF8_BOM + "é x\r\n\n\nα β γ\n\ufeffmid\n".encode() + "last 😀".encode()
    for raw in (good, good + b"\n", b"", b"\n", UTF8_BOM, b"ok\n\xff\xfe bad\nok2\n\xc3"):
        path = tmp_path / "in.txt"
        path.write_bytes(raw)
        one, blocks = TextLineReader(str(path), errors), TextLineReader(str(path), errors)
        try:
            want: list[str] | str = list(one)
        except ValueError as exc:
            want = str(exc)
        try:
            got: list[str] | str = [
                blocks.decode_line(line, first + i)
                for body, first in blocks.blocks(chunk)
                for i, line in enumerate(body.split(b"\n"))
            ]
        except ValueError as exc:
            got = str(exc)
        assert got == want and blocks.n_bad == one.n_bad, (raw, chunk)
