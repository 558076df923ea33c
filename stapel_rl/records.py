"""What long jobs leave behind: the code version that made it, files that survive a kill.

Torch-free, so the entry points that must not load torch before their jobs
start (``stapel-match``) can record their results too. A JSON-lines record
is appended one line per finished unit of work and flushed to disk; a kill
can tear only the last line, which ``load_jsonl`` drops, so a rerun resumes
from every whole line.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import tempfile

import numpy as np

import stapel_rl


def code_version() -> str:
    """Package version plus the git commit (and ``-dirty``) when run from a checkout."""
    root = pathlib.Path(stapel_rl.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    return f"{stapel_rl.__version__}+{commit}{'-dirty' if dirty else ''}" if commit else stapel_rl.__version__


def atomic_write_bytes(path: "str | os.PathLike", data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise


def save_npz(path: "str | os.PathLike", arrays: "dict[str, np.ndarray]") -> None:
    """``arrays`` as a compressed ``.npz`` file, written atomically (numeric arrays: nothing pickled)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # mypy reads **arrays as allow_pickle
    atomic_write_bytes(path, buffer.getvalue())


def load_jsonl(path: "str | os.PathLike") -> "list[dict]":
    """The records of a JSON-lines file, in order; none if it does not exist.

    A line that does not parse ends the read only if it is the last one (a torn write);
    one in the middle means the file was damaged otherwise, and is an error naming it.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    records = []
    for number, line in enumerate(lines, 1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}: line {number} is not JSON (a damaged record file): {line[:80]!r}") from None
    return records


def start_jsonl(path: "str | os.PathLike") -> "list[dict]":
    """Open a record for resuming: its whole records, with a torn last line dropped from the file too
    (atomically, so a kill now loses nothing), so that the next append starts a line of its own.

    The file (and its folder) is created now: a path that cannot be written fails here, before the
    first game, not at its end (``OSError``; a folder's path, ``ValueError``)."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise ValueError(f"record {str(path)!r} is a folder: name a file in it, such as {str(path / 'match.jsonl')!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.open("a").close()
    records = load_jsonl(path)
    raw = path.read_text() if path.is_file() else ""
    if raw and (not raw.endswith("\n") or len(raw.splitlines()) != len(records)):
        atomic_write_bytes(path, "".join(json.dumps(r) + "\n" for r in records).encode())
    return records


def append_jsonl(path: "str | os.PathLike", record: dict) -> None:
    """Append one record as a line and flush it to disk before returning."""
    with pathlib.Path(path).open("a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
