"""The floor for loading a catalog: read every file and parse every blob with orjson, nothing else.

``make bench-compare`` runs it beside ``olmkit catalog validate`` on the same catalog: validation
cannot be faster than reading what it checks. Blob streams are parsed line by line (the
generated catalogs and most real ones have one blob per line); a file whose lines do not
each hold a whole document is parsed as one document. Prints one JSON object:
``{"files", "blobs", "bytes", "seconds"}`` (``seconds``: reading and parsing, in this process).

Usage: ``python benchmarks/parse_floor.py CATALOG_DIR``
"""

from __future__ import annotations

import json
import os
import sys
import time

import orjson


def parse_all(root: str) -> dict[str, float | int]:
    """Read and parse every ``.json`` file under ``root``; counts and the time taken."""
    start = time.perf_counter()
    files = blobs = size = 0
    for directory, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".json"):
                continue
            with open(os.path.join(directory, name), "rb") as f:
                data = f.read()
            files += 1
            size += len(data)
            try:
                parsed = [orjson.loads(line) for line in data.splitlines() if line.strip()]
            except orjson.JSONDecodeError:  # a document spread over lines
                parsed = [orjson.loads(data)]
            blobs += len(parsed)
    return {"files": files, "blobs": blobs, "bytes": size, "seconds": round(time.perf_counter() - start, 4)}


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: parse_floor.py CATALOG_DIR")
    print(json.dumps(parse_all(sys.argv[1])))
