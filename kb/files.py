"""Files in and out: one policy for every output the library writes, one reader for text input.

Outputs (databases, vocabularies, checkpoints, corpora, result files):

- missing parent folders are created;
- a file or folder the user already has is never replaced unless ``overwrite``
  (CLI: ``--overwrite``), and the error says so;
- content goes to a temporary name next to the target and is renamed into place
  only when complete, so an interrupted write never leaves a file that looks
  finished.

``-`` as a destination means standard output, as a source standard input.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from kb.errors import InputFormatError, OutputExistsError, flag


def check_output(path: str | os.PathLike[str], *, overwrite: bool = False, what: str = "") -> Path:
    """``path``, after refusing an existing one (unless ``overwrite``) and creating its parent folders."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputExistsError(
            f"{path}{what} already exists; pass {{overwrite}} to replace it", options={"overwrite": flag("overwrite")}
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def temporary_name(path: Path, tag: str = "partial") -> Path:
    """Where ``path`` is written before it is complete: next to it, one name per process."""
    return path.with_name(f"{path.name}.{tag}-{os.getpid()}")


def remove_temporaries(path: Path) -> None:
    """Remove what interrupted writes of ``path`` left (:func:`temporary_name`: ``<name>.<tag>-<pid>``).

    Only for a caller that knows nothing else is writing ``path`` now (e.g. it holds a lock)."""
    prefix = f"{path.name}."
    for tmp in path.parent.glob(glob.escape(prefix) + "*-*"):
        tag, _, pid = tmp.name[len(prefix) :].rpartition("-")
        if tag in ("partial", "old") and pid.isdigit():
            remove(tmp)


def remove(path: Path) -> None:
    """Remove a file or a folder tree, if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def replace(tmp: Path, path: Path) -> None:
    """Move the finished ``tmp`` (file or folder) to ``path``, replacing what is there."""
    if path.is_dir() and not path.is_symlink():
        old = temporary_name(path, "old")
        path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


def publish(tmp: Path, path: Path, *, overwrite: bool = False) -> None:
    """Rename the finished file ``tmp`` to ``path``. Without ``overwrite``, a ``path`` that appeared while
    ``tmp`` was written (another process wrote it) is kept and :class:`OutputExistsError` raised: the new
    name is made a hard link first, which fails if it exists, instead of a rename, which would replace it."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputExistsError(
            f"{path} appeared while this one was being written (another process wrote it); "
            "it is left as it is; pass {overwrite} to replace it",
            options={"overwrite": flag("overwrite")},
        ) from None
    except OSError:  # a file system without hard links
        check_output(path)
        os.replace(tmp, path)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, overwrite: bool = False, what: str = "") -> Iterator[Path]:
    """Yield a temporary path to write a file or folder into; it becomes ``path`` when the block ends cleanly.

    On an exception the temporary one is removed and ``path`` is left as it was.
    """
    path = check_output(path, overwrite=overwrite, what=what)
    tmp = temporary_name(path)
    remove(tmp)
    try:
        yield tmp
        replace(tmp, path)
    except BaseException:
        remove(tmp)
        raise


@contextlib.contextmanager
def atomic_text(
    path: str | os.PathLike[str], *, overwrite: bool = False, newline: str | None = None
) -> Iterator[IO[str]]:
    """A UTF-8 text file at ``path``, written through :func:`atomic_path`."""
    with atomic_path(path, overwrite=overwrite) as tmp, tmp.open("w", encoding="utf-8", newline=newline) as f:
        yield f


@contextlib.contextmanager
def output(dest: str | os.PathLike[str], *, overwrite: bool = False, newline: str | None = None) -> Iterator[IO[str]]:
    """Standard output for ``-``, else :func:`atomic_text`."""
    if str(dest) == "-":
        yield sys.stdout
    else:
        with atomic_text(dest, overwrite=overwrite, newline=newline) as f:
            yield f


def json_text(data: Any) -> str:
    """``data`` as readable JSON: UTF-8 characters as they are, one level per line."""
    return json.dumps(data, ensure_ascii=False, indent=1)


def read_json_file(path: Path, *, expected: str) -> Any:
    """The JSON value of the file ``path`` inside a folder; a missing file or invalid JSON is an
    :class:`InputFormatError` naming the folder or the file (``expected``: what the folder should have been)."""
    if not path.is_file():
        raise InputFormatError(f"{path.parent}: no {path.name} (expected {expected})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"{path}: not valid JSON ({exc})") from None


def write_json(data: Any, dest: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Write ``data`` as JSON to a file, or to standard output for ``-``."""
    with output(dest, overwrite=overwrite) as f:
        f.write(json_text(data) + "\n")


def write_jsonl(records: Iterable[Any], dest: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Write one JSON object per line to a file, or to standard output for ``-``."""
    with output(dest, overwrite=overwrite) as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_csv(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], dest: str | os.PathLike[str], *, overwrite: bool = False
) -> None:
    """Write a header and rows as CSV to a file, or to standard output for ``-``."""
    with output(dest, overwrite=overwrite, newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)


def split_list(value: str | None) -> list[str] | None:
    """``"en, ja,,de"`` -> ``["en", "ja", "de"]``; ``None`` stays ``None`` (the option was not given)."""
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


def _looks_like_text(source: str) -> bool:
    """A missing "file" such as "Paris is the capital of France." is text given where a path belongs."""
    if "\n" in source:
        return True
    if re.search(r"\.[A-Za-z0-9]{1,5}$", source):  # a file name with an extension
        return False
    return len(source.split()) >= 3 or bool(re.search(r"[.!?。！？।]$", source))


def is_plain_name(name: object) -> bool:
    """Whether ``name``, read from a data file (a manifest, a metadata file), is one file or folder name
    that stays inside the folder it is joined to: a non-empty str with no folder part (``/``, ``\\``),
    not ``.`` or ``..``, not absolute, without NUL. Joining anything else could reach other files."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and not any(c in name for c in "/\\\x00")
        and Path(name).name == name
    )


def _open_input(path: Path, expected: str) -> IO[bytes]:
    """``path`` opened for reading bytes; a missing file, a folder or an unreadable file is an
    :class:`InputFormatError` naming it (``expected`` says what the folder should have been)."""
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    if path.is_dir():
        raise InputFormatError(f"{path}: is a folder; expected {expected}")
    try:
        return path.open("rb")
    except OSError as exc:
        raise InputFormatError(f"{path}: unreadable ({exc.strerror or exc})") from None


def file_bytes(path: str | os.PathLike[str], *, expected: str) -> bytes:
    """The bytes of an input file; a missing file, a folder or an unreadable file is an
    :class:`InputFormatError` naming it (``expected`` says what the folder should have been)."""
    path = Path(path)
    with _open_input(path, expected) as f:
        try:
            return f.read()
        except OSError as exc:
            raise InputFormatError(f"{path}: unreadable ({exc.strerror or exc})") from None


def iter_lines(source: str | os.PathLike[str], *, pipe_hint: str | None = None) -> Iterator[str]:
    """The lines of a UTF-8 text file, or of standard input for ``-``, read one at a time.

    The same lines as ``text.splitlines()`` of the whole text (a leading byte-order mark
    dropped), holding one line in memory at a time. The source is checked at once
    (a missing file, a folder, or text given where a path belongs raise
    :class:`InputFormatError` naming it; see :func:`read_lines`); bytes that are
    not UTF-8 raise it, naming the line, when the iteration reaches them.
    """
    if str(source) == "-":
        stream: Any = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else (line.encode("utf-8") for line in sys.stdin)
        return _decoded_lines(stream, "standard input", None)
    if pipe_hint and not Path(source).exists() and _looks_like_text(str(source)):
        raise InputFormatError(
            f"{str(source)!r} is not a file: this command reads a file with one text "
            f"per line; to give text directly, pipe it in: echo {str(source)!r} | {pipe_hint}"
        )
    path = Path(source)
    f = _open_input(path, "a text file with one text per line")
    return _decoded_lines(f, str(path), f)


def _decoded_lines(raw: Iterable[bytes], name: str, owned: IO[bytes] | None) -> Iterator[str]:
    """Decode ``raw`` (byte lines ending in ``\n``) as :func:`iter_lines` says; closes ``owned`` at the end."""
    try:
        for number, data in enumerate(raw, 1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputFormatError(
                    f"{name}, line {number}: bytes that are not UTF-8 ({data[exc.start : exc.start + 4]!r}); "
                    "expected UTF-8 text (convert it first, e.g. with iconv -t UTF-8)"
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            # a byte line ends at \n only; splitlines() also ends lines at \r, \v, \x85, \u2028, ...
            lines = text.splitlines()
            del data, text  # one copy of a long line, not three, while the caller works on it
            yield from lines
    finally:
        if owned is not None:
            owned.close()


def read_lines(source: str | os.PathLike[str], *, pipe_hint: str | None = None) -> list[str]:
    """The lines of a UTF-8 text file, or of standard input for ``-`` (all of them; see :func:`iter_lines`).

    A missing file, a folder, or bytes that are not UTF-8 raise
    :class:`InputFormatError` naming the file (and the line of the bad bytes).
    When a missing source looks like a sentence and ``pipe_hint`` names the
    command that reads standard input (``"mluke link -"``), the error says how
    to pipe the text in.
    """
    return list(iter_lines(source, pipe_hint=pipe_hint))
