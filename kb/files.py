"""Files in and out: one policy for every output the library writes, one reader for text input.

Outputs (databases, vocabularies, checkpoints, corpora, result files):

- missing parent folders are created;
- a file or folder the user already has is never replaced unless ``overwrite``
  (CLI: ``--overwrite``), and the error says so;
- a destination that cannot be written (a read-only folder, no permission, a
  path under a regular file) is refused when it is checked, before any work, as
  an :class:`~kb.errors.OutputError` naming it; an ``OSError`` while writing
  (a full disk) becomes the same error, and cleaning up never hides it;
- content goes to a temporary name next to the target and is renamed into place
  only when complete, so an interrupted write never leaves a file that looks
  finished.

``-`` as a destination means standard output, as a source standard input.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import glob
import json
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

from kb.errors import InputFormatError, MlukeError, OutputError, OutputExistsError, flag


def check_output(path: str | os.PathLike[str], *, overwrite: bool = False, what: str = "") -> Path:
    """``path``, after refusing an existing one (unless ``overwrite``), creating its parent folders and
    checking that a file can be written there (:func:`check_writable`)."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputExistsError(
            f"{path}{what} already exists; pass {{overwrite}} to replace it", options={"overwrite": flag("overwrite")}
        )
    check_writable(path)
    return path


def check_writable(path: str | os.PathLike[str]) -> Path:
    """``path``, after making sure the file or folder can be written: its parent folders are created and a
    file is created and removed next to it (under its temporary name, :func:`temporary_name`). Asking the
    file system is the one test that holds for every cause (a read-only mount, permissions, root, a parent
    that is a regular file).

    Raises:
        OutputError: naming ``path`` and the reason, before any work.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if isinstance(exc, (FileExistsError, NotADirectoryError)):  # a parent folder is a regular file
            raise OutputError(f"cannot write {path}: {_file_in_the_way(path)} is a file, not a folder") from None
        raise output_error(path, exc) from None
    probe = temporary_name(path)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # a leftover of this process id: the folder takes files
        return path
    except OSError as exc:
        raise output_error(path, exc) from None
    os.close(fd)
    discard(probe)
    return path


def _file_in_the_way(path: Path) -> Path:
    """The nearest ancestor of ``path`` that exists and is not a folder."""
    for parent in path.parents:
        if parent.exists():
            return parent
    return path.parent


#: Errors of a destination, as opposed to a bug: turned into :class:`OutputError` naming the destination.
_OUTPUT_ERRNOS = frozenset(
    {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.ENOTDIR, errno.EISDIR}
)


def output_error(path: Path, exc: OSError) -> OutputError:
    """An :class:`OutputError` saying why ``path`` cannot be written (``exc``: what the file system said)."""
    reason = exc.strerror or str(exc)
    hint = {
        errno.EROFS: "; choose a folder on a writable disk",
        errno.EACCES: "; choose a folder you can write to",
        errno.EPERM: "; choose a folder you can write to",
        errno.ENOSPC: "; free some space or choose another disk",
        errno.EDQUOT: "; free some space or choose another disk",
    }.get(exc.errno or 0, "")
    return OutputError(f"cannot write {path}: {reason}{hint}")


def is_output_error(exc: BaseException, *paths: Path) -> bool:
    """Whether ``exc`` is the file system refusing to write one of ``paths`` (or a file inside one): a
    read-only folder, no permission, a full disk; not a bug (an ``OSError`` about another file)."""
    if not isinstance(exc, OSError) or isinstance(exc, MlukeError) or exc.errno not in _OUTPUT_ERRNOS:
        return False
    if exc.filename is None:  # write() and flush() errors (a full disk) name no file
        return True
    name = os.fsdecode(exc.filename)
    return any(name == str(p) or name.startswith(str(p) + os.sep) for p in paths)


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


def discard(path: Path) -> None:
    """:func:`remove`, for cleaning up after another error: an error of its own (a read-only folder) is
    ignored, so it never hides the one being handled."""
    with contextlib.suppress(OSError):
        remove(path)


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

    On an exception the temporary one is removed and ``path`` is left as it was; an ``OSError`` of the
    destination (a read-only folder, a full disk) becomes an :class:`OutputError` naming ``path``.
    """
    path = check_output(path, overwrite=overwrite, what=what)
    tmp = temporary_name(path)
    discard(tmp)
    try:
        yield tmp
        replace(tmp, path)
    except BaseException as exc:
        discard(tmp)
        if is_output_error(exc, path, tmp):
            raise output_error(path, cast(OSError, exc)) from exc
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


def string_list(value: str | Iterable[str] | None, name: str) -> list[str] | None:
    """A list-valued parameter as a list: one string is one item (``subjects="Tokyo"`` is ``["Tokyo"]``, never
    its letters); ``None`` stays ``None``. Items that are not strings are a ``TypeError`` naming ``name``."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    bad = [item for item in items if not isinstance(item, str)]
    if bad:
        raise TypeError(f"{name}: expected a string or a list of strings, got {bad[0]!r} in it")
    return items


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
    check_text_source(source, pipe_hint=pipe_hint)
    path = Path(source)
    f = _open_input(path, TEXT_FILE)
    return _decoded_lines(f, str(path), f)


TEXT_FILE = "a text file with one text per line"


def check_text_source(source: str | os.PathLike[str], *, pipe_hint: str | None = None) -> None:
    """Refuse, without reading it, a text source :func:`iter_lines` would refuse: a missing file (text given
    where a path belongs: how to pipe it in), a folder, a file that cannot be opened. ``-`` passes.

    Cheap (no model code), so a command can call it before importing anything slow."""
    if str(source) == "-":
        return
    if pipe_hint and not Path(source).exists() and _looks_like_text(str(source)):
        raise InputFormatError(
            f"{str(source)!r} is not a file: this command reads a file with one text "
            f"per line; to give text directly, pipe it in: echo {str(source)!r} | {pipe_hint}"
        )
    path = Path(source)
    if not path.exists():
        raise InputFormatError(f"{path}: no such file")
    if path.is_dir():
        raise InputFormatError(f"{path}: is a folder; expected {TEXT_FILE}")
    if not os.access(path, os.R_OK):
        raise InputFormatError(f"{path}: unreadable (permission denied)")


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
