"""The C reader of plain channel and package lines (``channels.c``), for the catalog loader.

The loader hands it the lines its scan of bundle lines left (see
:mod:`olmkit._solver._scan`), of every file at once: each plainly well-formed channel
blob comes back as its package, name and entries, equal entries (in value) as one
number, and its order, each plain package blob as its fields, without the line being
decoded into dicts first; every other line is left to the
caller, who decodes it and reads it the general way. Like the scan, this knows the shape of a catalog blob: it lives
here because olmkit builds one C extension.
"""

from __future__ import annotations

from array import array

from olmkit._solver._scan import _ints, _lines

__all__ = ["ChannelLines", "ChannelReader", "reader"]


class ChannelLines:
    """What one :meth:`ChannelReader.read` found.

    Attributes:
        counts: per line read, a channel's number of entries, -2 for a package, or -1: a
            line for the caller.
        ids: the entries of the lines taken, one after the other: their distinct numbers.
        texts: per line taken, a channel's package and name, a package's name, default
            channel and description (``""`` for none).
        first_new: the distinct number of the first new entry: the distinct entries first
            met, as columns ``names``, ``replaces``, ``skips``, ``ranges`` (``None`` for no
            replaces or skipRange).
        chain_len: per channel taken, the length of its channel's order (the catalog's
            ``channel_order``), or -1: no single head or a cycle (the catalog words the error).
        chain_pos: the orders' entries, as positions in their channel, one order after the other.
    """

    __slots__ = (
        "chain_len",
        "chain_pos",
        "counts",
        "first_new",
        "ids",
        "names",
        "ranges",
        "replaces",
        "skips",
        "texts",
    )

    def __init__(self) -> None:
        self.counts = array("i")
        self.ids = array("i")
        self.texts: list[str] = []
        self.first_new = 0
        self.names: list[str] = []
        self.replaces: list[str | None] = []
        self.skips: list[tuple[str, ...]] = []  # () for none
        self.ranges: list[str | None] = []
        self.chain_len = array("i")
        self.chain_pos = array("i")


class ChannelReader:
    """Reads channel lines of catalog files; distinct entries are numbered across every call."""

    def __init__(self) -> None:
        # the compiled extension, as its face imports it (ImportError without it)
        from olmkit._solver._native import ffi, lib  # type: ignore[attr-defined]

        self._ffi = ffi
        self._lib = lib
        handle = lib.olm_chan_new()
        if handle == ffi.NULL:
            raise MemoryError("olmkit._solver: out of memory while reading channels")
        self._c = ffi.gc(handle, lib.olm_chan_free)

    def read(self, data: bytes) -> ChannelLines:
        """Read the lines of ``data`` (separated by newlines; one line for ``b""``)."""
        ffi, c = self._ffi, self._c
        if self._lib.olm_chan_lines(c, ffi.from_buffer(data), len(data)):
            raise MemoryError("olmkit._solver: out of memory while reading channels")
        out = ChannelLines()
        buffer = ffi.buffer
        out.counts = _ints(buffer, c.line_nent, c.n_lines)
        out.ids = _ints(buffer, c.ids, c.n_ids)
        if c.text_len:
            out.texts = _lines(buffer(c.text, c.text_len))
        out.chain_len = _ints(buffer, c.chain_len, sum(1 for k in out.counts if k >= 0))
        out.chain_pos = _ints(buffer, c.chain_pos, c.n_chain_pos)
        n_new = c.n_new
        out.first_new = c.n_entries - n_new
        if n_new:
            out.names = _lines(buffer(c.e_names, c.e_names_len))
            out.replaces = [text or None for text in _lines(buffer(c.e_replaces, c.e_replaces_len))]
            out.ranges = [text or None for text in _lines(buffer(c.e_ranges, c.e_ranges_len))]
            empty: tuple[str, ...] = ()
            out.skips = skips = [empty] * n_new
            n_skipped = c.n_skipped
            if n_skipped:
                texts = _lines(buffer(c.e_skips, c.e_skips_len))
                which, counts = _ints(buffer, c.e_skipped, n_skipped), _ints(buffer, c.e_nskips, n_skipped)
                at = 0
                for j, k in zip(which, counts, strict=True):
                    skips[j] = tuple(texts[at : at + k])
                    at += k
        return out


def reader() -> ChannelReader | None:
    """A new reader, or ``None`` when the pure-Python implementation is in use."""
    from olmkit._solver import _encode

    if _encode.current() != "native":
        return None
    return ChannelReader()
