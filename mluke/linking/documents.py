"""The documents of a corpus file (:func:`iter_documents`: a text file, one text a line, or a JSONL file, one
``{"id", "text", "lang"}`` object a line) and the chunks they are linked in (:func:`iter_chunks`), read as they
are needed: memory does not grow with the file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from kb.errors import InputFormatError, OptionError
from kb.files import check_text_source, iter_lines
from mluke.options import LinkOptions

#: What a corpus file holds: ``"text"`` (one text per line), ``"jsonl"`` (one JSON document per line), or
#: ``"auto"``: JSONL when its first non-blank line is a JSON object with a ``"text"`` string, else text.
InputFormat = Literal["auto", "text", "jsonl"]

JSONL_FILE = 'a JSONL corpus: one JSON object per line, {"id": ..., "text": "...", "lang": "en"} (id and lang optional)'


@dataclass(frozen=True)
class Document:
    """One document of a corpus: its number in the output's ``line`` field (the text's number in a text file, the
    line number in a JSONL file), its text and language, and the JSON members its output line adds (``id``,
    ``lang``: ``'"id": 7, '``), and its ``id`` as read (``None``: none given)."""

    line: int
    text: str
    lang: str
    members: str = ""
    id: object = None


@dataclass(frozen=True)
class Chunk:
    """Documents linked together: those from the ``start``-th (0-based) on, all in one language."""

    start: int
    lang: str
    documents: list[Document]


def corpus_format(source: str | os.PathLike[str]) -> Literal["text", "jsonl"]:
    """``"jsonl"`` when the first non-blank line of the file ``source`` is a JSON object with a ``"text"`` string,
    else ``"text"`` (a text file whose first line is such an object is read as text with ``input_format="text"``)."""
    check_text_source(source)
    with open(source, "rb") as f:
        for raw in f:
            if raw.strip():
                try:
                    first = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    return "text"
                return "jsonl" if isinstance(first, dict) and isinstance(first.get("text"), str) else "text"
    return "text"


def iter_documents(
    source: str | os.PathLike[str], lang: str, *, input_format: InputFormat = "auto"
) -> Iterator[Document]:
    """The documents of a corpus file, read one at a time (memory does not grow with the file).

    Args:
        source: a text file (one text per line, as :func:`kb.files.iter_lines` reads it; ``-``: standard input)
            or a JSONL file (one ``{"id": ..., "text": ..., "lang": ...}`` a line; blank lines are skipped).
        lang: the language of the documents that do not name theirs.
        input_format: ``"text"``, ``"jsonl"`` or ``"auto"`` (:func:`corpus_format`).

    Raises:
        InputFormatError: a missing file, bytes that are not UTF-8, or a JSONL line that is not an object with a
            ``"text"`` string (naming the file and line).
    """
    if input_format == "auto":
        input_format = "text" if str(source) == "-" else corpus_format(source)
    if input_format == "text":
        for number, text in enumerate(iter_lines(source, pipe_hint="mluke link -"), 1):
            yield Document(number, text, lang)
        return
    if input_format != "jsonl":
        raise OptionError(f"input_format: expected 'auto', 'text' or 'jsonl', got {input_format!r}")
    check_text_source(source)
    with open(source, "rb") as f:
        for number, raw in enumerate(f, 1):
            if raw.strip():
                yield parse_document(raw, number, lang, str(source))


def parse_document(raw: bytes, number: int, lang: str, name: str) -> Document:
    """The document of JSONL line ``number`` of the file ``name`` (:func:`iter_documents`'s rules).

    Raises:
        InputFormatError: the line is not UTF-8 JSON, not an object with a ``"text"`` string, or names a
            language that is not a string (naming the file and line).
    """
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise InputFormatError(f"{name}, line {number}: bytes that are not UTF-8; expected {JSONL_FILE}") from None
    except ValueError as exc:
        raise InputFormatError(f"{name}, line {number}: not JSON ({exc}); expected {JSONL_FILE}") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise InputFormatError(f'{name}, line {number}: no "text" string; expected {JSONL_FILE}')
    members = ""
    if "id" in data:
        members += f'"id": {json.dumps(data["id"], ensure_ascii=False)}, '
    own = data.get("lang")
    if own is not None:
        if not isinstance(own, str):
            raise InputFormatError(f'{name}, line {number}: "lang" must be a language code such as "en", got {own!r}')
        members += f'"lang": {json.dumps(own, ensure_ascii=False)}, '
    return Document(number, data["text"], own or lang, members, data.get("id"))


def iter_chunks(documents: Iterable[Document], options: LinkOptions) -> Iterator[Chunk]:
    """The chunks :meth:`mluke.Linker.link_iter` would link ``documents`` in (its rule: at most
    ``options.chunk_texts`` texts and ``options.chunk_chars`` characters, a longer text alone), a change of
    language also ending one, and so does a multiple of ``options.shard_lines`` lines (a document's ``line``),
    so that a shard of those lines read alone (:mod:`mluke.distributed`) is cut into the same chunks. They
    depend on the documents only, from the first one on."""
    docs: list[Document] = []
    size = start = 0
    shard = options.shard_lines
    for k, doc in enumerate(documents):
        long = len(doc.text) > options.chunk_chars
        if docs and (
            long
            or len(docs) == options.chunk_texts
            or size + len(doc.text) > options.chunk_chars
            or doc.lang != docs[0].lang
            or (doc.line - 1) // shard != (docs[0].line - 1) // shard
        ):
            yield Chunk(start, docs[0].lang, docs)
            docs, size = [], 0
        if long:
            yield Chunk(k, doc.lang, [doc])
            continue
        if not docs:
            start = k
        docs.append(doc)
        size += len(doc.text)
    if docs:
        yield Chunk(start, docs[0].lang, docs)
