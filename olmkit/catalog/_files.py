"""Finding a catalog's files and their content digests.

:func:`scan` walks a catalog directory in catalog order (a directory's files by name,
then its subdirectories by name), honouring ``.indexignore`` files. It works on plain
strings: building a :class:`~pathlib.Path` per file costs more than the walk itself.

:class:`FileDigests` gives each file's SHA-1 and remembers it between runs, keyed by the
file's stat signature (size, mtime, ctime, inode, device), so that an unchanged catalog
is recognised with one ``stat`` per file instead of reading and hashing all of it. An
entry is recorded only when the file's last change is comfortably older than the
recording: a file rewritten within the same timestamp tick as it was recorded could
otherwise change again without its signature moving (git's "racy" entries). ``ctime``
cannot be set from user space, so restoring an old mtime after an edit is caught too.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from stat import S_ISREG
from typing import Any, Final

from olmkit.errors import InputError

__all__ = [
    "IGNORE_FILE",
    "FileDigests",
    "Signature",
    "catalog_digest",
    "file_digest",
    "read_file",
    "read_signed",
    "scan",
    "write_atomic",
]

IGNORE_FILE: Final = ".indexignore"

#: Files changed less than this long before they are recorded are hashed again next time.
_RACY_NS: Final = 2_000_000_000
_clock = time.time_ns  # the recording time (tests move it)
_FORMAT: Final = 2

Signature = tuple[int, int, int, int, int]
#: the signature of what could not be stat'ed: never equal to one that could
_UNKNOWN: Final[Signature] = (-1, -1, -1, -1, -1)


# --------------------------------------------------------------------------- walking


def scan(root: str | os.PathLike[str], watched: list[tuple[str, Signature]] | None = None) -> list[tuple[str, str]]:
    """``(path, relative path)`` of every catalog file under ``root``, in catalog order.

    ``root`` may also be a single file. ``.indexignore`` files hold gitignore patterns
    relative to their directory and apply to it and everything below; they are never
    read as catalog content. Symbolic links to directories are not followed.

    Args:
        watched: when given, gets the stat signature of every directory listed (taken
            before listing it) and of every ``.indexignore`` read (taken before reading
            it): while none of them changes, neither does the result.

    Raises:
        InputError: ``root`` does not exist, or a directory or ``.indexignore`` cannot
            be read.
    """
    top = os.fspath(root)
    if os.path.isfile(top):
        return [(top, os.path.basename(top))]
    if not os.path.isdir(top):
        raise InputError("no such file or directory", path=top)
    out: list[tuple[str, str]] = []
    _scan_dir(top, "", [], out, watched)
    return out


def _stat_signature(path: str) -> Signature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _scan_dir(
    path: str,
    rel: str,
    specs: list[tuple[str, Any]],
    out: list[tuple[str, str]],
    watched: list[tuple[str, Signature]] | None,
) -> None:
    if watched is not None:
        watched.append((path, _stat_signature(path) or _UNKNOWN))
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise InputError(f"cannot list directory: {exc.strerror}", path=path) from None
    dirs: list[os.DirEntry[str]] = []
    files: list[os.DirEntry[str]] = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        (dirs if is_dir else files).append(entry)
    if any(e.name == IGNORE_FILE for e in files):
        ignore = os.path.join(path, IGNORE_FILE)
        if watched is not None:
            watched.append((ignore, _stat_signature(ignore) or _UNKNOWN))
        specs = [*specs, (rel, _ignore_spec(ignore))]
    for entry in files:
        if entry.name == IGNORE_FILE:
            continue
        name = rel + entry.name
        if specs and _ignored(specs, name, False):
            continue
        out.append((entry.path, name))
    for entry in dirs:
        if entry.is_symlink():
            continue
        name = rel + entry.name
        if specs and _ignored(specs, name, True):
            continue
        _scan_dir(entry.path, name + "/", specs, out, watched)


def _ignore_spec(path: str) -> Any:
    import pathspec  # only catalogs with an .indexignore pay for the import

    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(f"cannot read: {reason}", path=path) from None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(specs: list[tuple[str, Any]], name: str, is_dir: bool) -> bool:
    for base, spec in specs:
        sub = name[len(base) :] + ("/" if is_dir else "")
        if spec.match_file(sub):
            return True
    return False


def read_file(path: str) -> bytes:
    """The bytes of a catalog file.

    Raises:
        InputError: the file cannot be read (names it and says why).
    """
    return read_signed(path)[0]


def read_signed(path: str) -> tuple[bytes, Signature]:
    """The bytes of a catalog file and its stat signature, taken as it was opened.

    Plain ``os`` calls: for thousands of small files the ``io`` objects of :func:`open`
    cost more than the reading.

    Raises:
        InputError: the file cannot be read (names it and says why).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(fd)
            size = max(st.st_size, 0) + 1  # one more, to see the end in one read
            chunk = os.read(fd, size)
            chunks = [chunk]
            # a regular file's read stops short only at its end (Linux caps one read at just
            # under 2 GiB): no second read to see it
            if len(chunk) == size or not S_ISREG(st.st_mode) or size >= 1 << 30:
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return data, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


# --------------------------------------------------------------------------- digests


def catalog_digest(salt: str, files: Iterable[tuple[str, bytes]]) -> str:
    """The digest of a catalog: ``salt`` plus each ``(relative path, file SHA-1)`` in order."""
    h = hashlib.sha1(salt.encode(), usedforsecurity=False)
    for rel, digest in files:
        h.update(b"\0" + rel.encode() + b"\0" + digest)
    return h.hexdigest()


def file_digest(data: bytes) -> bytes:
    """The SHA-1 of one file's bytes."""
    return hashlib.sha1(data, usedforsecurity=False).digest()


class FileDigests:
    """Per-file content digests, remembered by stat signature in a small file.

    Args:
        store: the file that remembers the digests (one per catalog root), or ``None``
            to remember nothing.
    """

    __slots__ = ("_changed", "_entries", "_known", "_listing", "_now", "_seen", "_store")

    def __init__(self, store: Path | None) -> None:
        self._store = store
        self._entries: dict[str, tuple[Signature, bytes]] = {}
        #: the root as spelt, the signatures :func:`scan` watched and the files it listed
        self._listing: tuple[str, list[tuple[str, Signature]], list[tuple[str, str]]] | None = None
        self._seen: set[str] = set()
        self._known = False
        self._changed = False
        self._now = _clock()
        if store is not None:
            try:
                state = marshal.loads(store.read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                return
            if not isinstance(state, tuple) or len(state) < 2 or not isinstance(state[1], dict):
                return
            if state[0] == _FORMAT and len(state) == 3:
                self._entries = state[1]
                self._listing = state[2]
                self._known = True
            elif state[0] == 1 and len(state) == 2:  # written before listings were kept
                self._entries = state[1]
                self._known = True

    @classmethod
    def for_root(cls, root: str | os.PathLike[str], directory: Path) -> FileDigests:
        """The digests remembered for the catalog at ``root`` (kept under ``directory``)."""
        key = hashlib.sha1(os.path.realpath(root).encode(), usedforsecurity=False).hexdigest()
        return cls(directory / "files" / f"{key}.marshal")

    @property
    def known(self) -> bool:
        """Whether this catalog was loaded (with these digests saved) before."""
        return self._known

    def files(self, root: str | os.PathLike[str], *, fresh: bool = False) -> tuple[list[tuple[str, str]], bool]:
        """The catalog's files, as :func:`scan` gives them, and whether they were remembered.

        Remembered from the last listing while no directory listed then and no
        ``.indexignore`` read then has changed (one ``stat`` each instead of listing every
        directory); ``fresh`` lists them again. A listing is remembered only when every
        one of them changed comfortably before it was taken (as digests are).

        Raises:
            InputError: as :func:`scan`.
        """
        top = os.fspath(root)
        if not fresh and self._listing is not None:
            # paths as spelt then: the same spelling of the root (the store is per real path)
            spelt, watched, files = self._listing
            if spelt == top and watched and all(_stat_signature(path) == signature for path, signature in watched):
                return files, True
        if self._store is None:
            return scan(top), False
        watched = []
        files = scan(top, watched)
        limit = self._now - _RACY_NS
        listing = (top, watched, files) if watched and all(max(s[1], s[2]) < limit for _, s in watched) else None
        if listing != self._listing:
            self._listing = listing
            self._changed = True
        return files, False

    @staticmethod
    def signature(path: str) -> Signature:
        """The stat signature of ``path`` (take it *before* reading the file).

        Raises:
            InputError: the file cannot be stat'ed.
        """
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror or exc}", path=path) from None
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)

    def digest(self, path: str, rel: str) -> bytes:
        """The SHA-1 of ``path``'s content: remembered if its signature is unchanged, else computed.

        Raises:
            InputError: the file cannot be read.
        """
        signature = self.signature(path)
        self._seen.add(rel)
        entry = self._entries.get(rel)
        if entry is not None and entry[0] == signature:
            return entry[1]
        data, signature = read_signed(path)
        digest = file_digest(data)
        self.record(rel, signature, digest)
        return digest

    def record(self, rel: str, signature: Signature, digest: bytes) -> None:
        """Remember ``digest`` for ``rel`` read with ``signature`` (unless the file is too fresh)."""
        self._seen.add(rel)
        if max(signature[1], signature[2]) < self._now - _RACY_NS:
            if self._entries.get(rel) != (signature, digest):
                self._entries[rel] = (signature, digest)
                self._changed = True
        elif self._entries.pop(rel, None) is not None:
            self._changed = True

    def save(self) -> None:
        """Write the remembered digests back (only the files seen in this run); errors are ignored."""
        if self._store is None:
            return
        if self._known and not self._changed and self._entries.keys() <= self._seen:
            return
        entries = {rel: e for rel, e in self._entries.items() if rel in self._seen}
        write_atomic(self._store, marshal.dumps((_FORMAT, entries, self._listing)))


def write_atomic(path: Path, data: bytes | Iterable[bytes]) -> bool:
    """Write ``data`` to ``path`` through a temporary file and a rename; ``False`` on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as out:
                if isinstance(data, bytes):
                    out.write(data)
                else:
                    out.writelines(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True
