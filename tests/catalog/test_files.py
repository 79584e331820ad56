"""Reading catalog files (``olmkit.catalog._files``): whole, with the signature taken as opened."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from olmkit.catalog import _files
from olmkit.errors import InputError


def test_a_file_is_read_whole_with_its_signature(tmp_path):
    path = tmp_path / "a.json"
    data = b'{"schema": "olm.package", "name": "a"}\n' * 1000
    path.write_bytes(data)
    st = os.stat(path)

    got, signature = _files.read_signed(str(path))

    assert got == data
    assert signature == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert _files.read_signed(str(empty))[0] == b""


@pytest.mark.parametrize("size", [0, 10, 4999])
def test_a_file_larger_than_its_stat_said_is_read_whole(size, tmp_path, monkeypatch):
    """Grown between the stat and the read (or a size the stat got wrong): read to its end all the same."""
    path = tmp_path / "a.json"
    data = bytes(range(256)) * 40
    path.write_bytes(data)
    real = os.fstat

    def smaller(fd: int) -> Any:
        st = real(fd)
        return SimpleNamespace(
            st_size=size,
            st_mode=st.st_mode,
            st_mtime_ns=st.st_mtime_ns,
            st_ctime_ns=st.st_ctime_ns,
            st_ino=st.st_ino,
            st_dev=st.st_dev,
        )

    monkeypatch.setattr(_files.os, "fstat", smaller)
    assert _files.read_signed(str(path))[0] == data


def test_a_file_that_cannot_be_read_is_named(tmp_path):
    with pytest.raises(InputError) as info:
        _files.read_signed(str(tmp_path / "missing.json"))
    assert "missing.json" in str(info.value)
    assert "cannot read file" in str(info.value)
