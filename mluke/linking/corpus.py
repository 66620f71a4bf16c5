"""Linking a corpus: :func:`link_corpus` (what ``mluke link CORPUS --jsonl OUT --workers N`` runs).

A corpus is a text file with one text per line, or a JSONL file with one document per line
(``{"id": ..., "text": ..., "lang": ...}``, ``id`` and ``lang`` optional). The output has one JSON line per
document, in input order, as :func:`mluke.linking.files.write_linked` writes them (a JSONL document's ``id`` and
``lang`` are added after ``line``). It is written as it goes to ``OUT.partial``, next to a small sidecar
``OUT.partial.json`` naming the input (path, size, modification time, a hash of its first MiB) and the settings
that change the output; the file is renamed to ``OUT`` only when complete, so ``OUT`` never looks complete
before it is. A run that is killed (``kill -9``, Ctrl-C, a power cut) is resumed by running it again: the lines
already written are kept (a torn last line is dropped, and the lines back to the start of the chunk they were
linked in), and the result is byte-identical to an uninterrupted run, with any number of workers.

Texts are cut into the chunks :meth:`mluke.Linker.link_iter` links together (``options.chunk_texts`` texts and
``options.chunk_chars`` characters, a longer text alone; a change of language starts a new chunk). The chunks do
not depend on the number of workers, so neither do the results: a chunk is linked as one batch, whoever links it.
With ``workers > 1`` the linker is built once here and ``workers`` processes are forked from it
(:mod:`mluke.linking.workers`), sharing its weights; the chunks go to them with at most two per worker in
flight (a worker that is done gets the next chunk even while an earlier one is still being linked), and the
lines are written in order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from kb.db import EntityDB
from kb.errors import OptionError
from kb.files import check_output, output, publish, remove
from kb.renamed import renamed_keyword
from mluke.linking.documents import Chunk, InputFormat, corpus_format, iter_chunks, iter_documents
from mluke.linking.linker import Linker
from mluke.linking.resume import identity, resume, sidecar_path
from mluke.linking.workers import WorkerPool, set_threads
from mluke.models.checkpoint import Mluke
from mluke.options import LinkOptions, merge_options
from mluke.results import LinkedLine, LinkTally

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.models.devices import Device, DType
    from mluke.options import LinkKeywords


@dataclass
class Linked:
    """What linking a chunk gives back: its output lines and the counts of :class:`mluke.results.LinkTally`."""

    lines: list[str]
    mentions: int = 0
    linked: int = 0
    entities: set[str] = field(default_factory=set)


@dataclass
class CorpusRun:
    """What :func:`link_corpus` did: the counts of the documents it linked (:class:`mluke.results.LinkTally`),
    the documents kept from an interrupted run (``resumed``), the workers and torch threads per worker, and the
    seconds spent linking."""

    tally: LinkTally
    documents: int = 0
    resumed: int = 0
    workers: int = 1
    threads: int = 1
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        """Documents linked in this run per second of linking."""
        done = self.documents - self.resumed
        return done / self.seconds if self.seconds > 0 else 0.0


def link_chunk(job: tuple[Linker, LinkOptions], chunk: Chunk) -> Linked:
    """Link one chunk with ``job``'s linker and options: its output lines, and their counts."""
    linker, options = job
    done = Linked([])
    texts = [d.text for d in chunk.documents]
    for doc, (text, mentions) in zip(chunk.documents, linker.link_iter(texts, chunk.lang, options=options)):
        found = list(mentions)
        done.mentions += len(found)
        for m in found:
            if not m.nil and m.key is not None:
                done.linked += 1
                done.entities.add(m.key)
        pieces = LinkedLine(doc.line, text, found).jsonl()
        head = next(pieces)
        if doc.members:  # '{"line": N, "text": "' -> '{"line": N, "id": ..., "text": "'
            head = head.replace('"text": "', doc.members + '"text": "', 1)
        done.lines.append(head + "".join(pieces))
    return done


@renamed_keyword("kb", "db")
def link_corpus(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    lang: str = "en",
    *,
    workers: int = 1,
    threads: int = 1,
    input_format: InputFormat = "auto",
    db: EntityDB | str | os.PathLike[str] | None = None,
    model: Mluke | str | os.PathLike[str] | None = None,
    options: LinkOptions | None = None,
    overwrite: bool = False,
    progress: bool = True,
    device: Device = None,
    dtype: DType = None,
    linker: Linker | None = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
    run: CorpusRun | None = None,
    **keywords: Unpack[LinkKeywords],
) -> CorpusRun:
    """Link a corpus file into a JSONL file, in order, with ``workers`` processes; resumable (see the module docs).

    Memory does not grow with the corpus: documents are read as they are linked, at most two chunks per worker
    are in flight and 16 per worker wait to be written in order, and the output is written as it goes. The
    output does not depend on ``workers`` or ``threads`` (the same chunks are linked as the same batches).

    Args:
        source: a text file with one text per line, or a JSONL corpus (:func:`iter_documents`); ``-``: standard
            input (not resumable).
        dest: the JSONL output; ``-``: standard output (not resumable).
        lang: the language of the documents that do not name theirs.
        workers: processes that link; 1: this one. More than 1 forks them from this process after the model is
            loaded, so they share its weights (Linux, macOS).
        threads: torch threads per worker (1 by default: one worker per core is the fast way to use them);
            with ``workers=1`` this process's count is set for the run and restored.
        input_format: ``"text"``, ``"jsonl"``, or ``"auto"`` (:func:`corpus_format`).
        db: an :class:`kb.EntityDB` or its path; default: the embedded kb.
        model: a loaded bundle, a checkpoint folder or hub name; default: the demo model.
        options: how to link (:class:`mluke.LinkOptions`); or give its fields as keywords.
        overwrite: replace an existing ``dest``, and drop the progress of an interrupted run with another input
            or other settings (an interrupted run with the same ones is always resumed: it gives the same bytes).
        progress: a progress bar of documents (with documents per second).
        device: where the model runs (:mod:`mluke.models.devices`).
        dtype: the precision it runs in.
        linker: a :class:`mluke.Linker` to use instead of building one from ``model`` and ``db``.
        kbs: ``method="knowbert"``: the kbs by knowledge base name (:func:`mluke.knowbert.kb_dbs`).
        run: counts to fill in as the run goes (default: new ones); what a caller still has after Ctrl-C.
        **keywords: the fields of :class:`mluke.LinkOptions`, when ``options`` is not given.

    Returns:
        What was done (:class:`CorpusRun`).

    Raises:
        InputFormatError: a missing or malformed input (naming the file and line), before any model is loaded.
        OutputExistsError: ``dest`` exists, or the progress of an interrupted run with another input or other
            settings is there, and ``overwrite`` is not set.
        OptionError: a bad option.
        WorkerError: a worker process died.
    """
    options = merge_options(LinkOptions, options, keywords, "link_corpus")
    if workers < 1 or threads < 1:
        raise OptionError(f"workers and threads must be at least 1, got workers={workers}, threads={threads}")
    if input_format == "auto" and str(source) != "-":
        input_format = corpus_format(source)
    run = run if run is not None else CorpusRun(LinkTally())
    run.workers, run.threads = workers, threads
    languages, total = _scan(source, lang, input_format)
    resumable = str(source) != "-" and str(dest) != "-"
    partial, kept = Path(os.devnull), 0
    if resumable:
        sidecar = identity(source, lang, input_format, options, model, db, linker)
        partial, kept = resume(Path(dest), sidecar, overwrite, source, lang, input_format, options)
    elif str(dest) != "-":
        check_output(dest, overwrite=overwrite)
    run.resumed = run.documents = kept
    if linker is None:
        from mluke.linking.knowbert import open_linker

        linker = open_linker(model, db, options, languages=languages, device=device, dtype=dtype, kbs=kbs)
    documents = iter_documents(source, lang, input_format=input_format)
    chunks = (c for c in iter_chunks(documents, options) if c.start >= kept)
    bar = tqdm(
        total=total,
        initial=kept,
        desc="linking",
        unit="doc",
        disable=not progress,
        delay=1.0,
        mininterval=0.5,
        dynamic_ncols=True,
    )
    started = time.perf_counter()
    opened = partial.open("a", encoding="utf-8", newline="\n") if resumable else output(dest, overwrite=overwrite)
    with bar, opened as out:
        for done in _linked(linker, options, chunks, workers, threads):
            out.writelines(done.lines)
            out.flush()
            run.documents += len(done.lines)
            run.seconds = time.perf_counter() - started
            tally = run.tally
            tally.texts += len(done.lines)
            tally.mentions += done.mentions
            tally.linked += done.linked
            tally.entities |= done.entities
            bar.update(len(done.lines))
    if resumable:
        publish(partial, Path(dest), overwrite=True)  # ``dest`` was refused at the start unless ``overwrite``
        remove(sidecar_path(Path(dest)))
    return run


def _linked(
    linker: Linker, options: LinkOptions, chunks: Iterator[Chunk], workers: int, threads: int
) -> Iterator[Linked]:
    if workers == 1:
        before = set_threads(threads)
        try:
            for chunk in chunks:
                yield link_chunk((linker, options), chunk)
        finally:
            set_threads(before)
        return
    with WorkerPool(link_chunk, (linker, options), workers, threads=threads) as pool:
        yield from pool.map(chunks)


def _scan(source: str | os.PathLike[str], lang: str, input_format: str) -> tuple[list[str], int | None]:
    """The languages of the corpus and its number of documents, checking every line before any model is loaded
    (standard input: ``[lang]`` and unknown, read as it is linked)."""
    if str(source) == "-":
        return [lang], None
    langs = {lang}
    total = 0
    for doc in iter_documents(source, lang, input_format=input_format):  # type: ignore[arg-type]
        langs.add(doc.lang)
        total += 1
    return sorted(langs), total
