"""Linking files and streams: :func:`iter_link_file` (what ``mluke link FILE`` runs), :func:`write_linked`
(JSON lines, written as they are linked) and :func:`link_file` (all in memory)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from kb.db import EntityDB
from kb.files import iter_lines, output
from kb.renamed import renamed_keyword
from mluke.linking.linker import Linker
from mluke.models.checkpoint import Mluke
from mluke.options import LINK_FIELDS, LinkKeywords, LinkOptions, merge_options
from mluke.results import LinkedLine, LinkedMention, LinkedTexts, LinkTally

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.models.devices import Device, DType


@renamed_keyword("kb", "db")
def iter_link_file(
    source: str | os.PathLike[str],
    lang: str,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    model: Mluke | str | os.PathLike[str] | None = None,
    options: LinkOptions | None = None,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    linker: Linker | None = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
    **keywords: Unpack[LinkKeywords],
) -> Iterator[LinkedLine]:
    """Link every line of a UTF-8 text file as a stream, in memory that does not grow with the input.

    See :meth:`mluke.Linker.link_iter`; the mentions of a line longer than ``options.chunk_chars`` come
    as an iterator, read once. What ``mluke link FILE`` runs; :func:`write_linked` writes the stream as
    JSON lines. The file is read once to check it (before any model is loaded) and once as it is
    linked; standard input is read as it is linked, so a bad line there stops the stream when reached.

    Args:
        source: the file, or ``-`` for standard input.
        lang: the language of its texts.
        db: an :class:`kb.EntityDB` or its path; default: the embedded kb (``kb=``: deprecated).
        model: a loaded bundle, a checkpoint folder or hub name; default: the demo model (``method="knowbert"``:
            a KnowBert model folder).
        options: how to link (:class:`mluke.LinkOptions`); or give its fields as keywords.
        progress: a progress bar over the characters linked (after a second).
        device: where the model runs (:mod:`mluke.models.devices`).
        dtype: the precision it runs in.
        linker: a :class:`mluke.Linker` to use instead of building one from ``model`` and ``db``.
        kbs: ``method="knowbert"``: the kb of knowledge bases by name (:func:`mluke.knowbert.kb_dbs`).
        **keywords: the fields of :class:`mluke.LinkOptions`, when ``options`` is not given.

    Returns:
        A :class:`LinkedLine` (line number, text, mentions) per line, in order.

    Raises:
        InputFormatError: a missing file, a folder, or (for a file) bytes that are not UTF-8, naming the
            file and line.
        OptionError: a bad option.
    """
    options = merge_options(LinkOptions, options, keywords, "iter_link_file")
    lines = iter_lines(source, pipe_hint="mluke link -")
    total = None
    if str(source) != "-":
        total = sum(map(len, lines))  # checks every line's bytes now
        lines = iter_lines(source)
    if linker is None:
        from mluke.linking.knowbert import open_linker

        linker = open_linker(model, db, options, languages=[lang], device=device, dtype=dtype, kbs=kbs)
    bar = tqdm(
        total=total,
        desc="linking",
        unit="char",
        unit_scale=True,
        disable=not progress,
        delay=1.0,
        mininterval=0.5,
        dynamic_ncols=True,
    )
    return _numbered(linker.link_iter(lines, lang, options=options, advance=bar.update), bar)


def _numbered(stream: Iterator[tuple[str, Iterable[LinkedMention]]], bar: Any) -> Iterator[LinkedLine]:
    with bar:
        for number, (text, mentions) in enumerate(stream, 1):
            yield LinkedLine(number, text, mentions)


def write_linked(
    stream: Iterable[LinkedLine],
    dest: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    tally: LinkTally | None = None,
) -> LinkTally:
    """Write a stream of linked lines (:func:`iter_link_file`) as JSON lines, each as soon as it is linked.

    The lines are those of :meth:`mluke.LinkedTexts.to_jsonl`. A file is written under a temporary name
    next to ``dest`` and renamed when the stream ends, so a run that fails or is interrupted leaves no
    file at ``dest`` (and an existing one, with ``overwrite``, as it was).

    Args:
        stream: the linked lines.
        dest: the file, or ``-`` for standard output.
        overwrite: replace an existing file.
        tally: counts to fill in (default: new ones).

    Returns:
        The counts (:class:`mluke.results.LinkTally`).

    Raises:
        OutputExistsError: ``dest`` exists and ``overwrite`` is not set.
    """
    tally = tally if tally is not None else LinkTally()
    with output(dest, overwrite=overwrite) as f:
        for item in stream:
            f.writelines(tally.count(item).jsonl())
    return tally


class LinkFileKeywords(LinkKeywords, total=False):
    """The keyword arguments of :func:`link_file`: those of :func:`iter_link_file` but ``linker``."""

    db: EntityDB | str | os.PathLike[str] | None
    model: Mluke | str | os.PathLike[str] | None
    options: LinkOptions | None
    progress: bool
    device: Device
    dtype: DType


@renamed_keyword("kb", "db")
def link_file(source: str | os.PathLike[str], lang: str, **arguments: Unpack[LinkFileKeywords]) -> LinkedTexts:
    """Link every line of a UTF-8 text file, all held in memory (for a stream, :func:`iter_link_file`).

    Args:
        source: the file, or ``-`` for standard input (read as it is linked).
        lang: the language of its texts.
        **arguments: :func:`iter_link_file`'s (``db``, ``model``, ``options`` or the fields of
            :class:`mluke.LinkOptions`, ``progress``, ``device``, ``dtype``; ``kb=``: deprecated).

    Returns:
        The texts and their mentions (:class:`mluke.LinkedTexts`).

    Raises:
        InputFormatError: a missing file, a folder or bytes that are not UTF-8 (naming the file and
            line), before any model is loaded (for a file).
        OptionError: a bad option.
    """
    rest: dict[str, Any] = dict(arguments)
    fields = {name: rest.pop(name) for name in LINK_FIELDS if name in rest}
    options = merge_options(LinkOptions, rest.pop("options", None), fields, "link_file")
    texts, mentions = [], []
    for item in iter_link_file(source, lang, options=options, **rest):
        texts.append(item.text)
        mentions.append(list(item.mentions))
    return LinkedTexts(texts, mentions, lang, options.method)
