"""The pretraining corpus: documents with entity links -> per-language memory-mapped shards.

Input: :class:`Document` objects (language, text, links as character spans with
entity keys), from Wikipedia pages or generated. Pages are split into sentences
with ``sentencex`` (rule-based, ~300 languages including ja, zh and th, a Rust
wheel: no Java or system ICU), tokenized with the XLM-R word tokenizer cut at
link boundaries (as mLUKE's tokenizer does), links mapped to entity-vocabulary
ids, and consecutive sentences packed into sequences of at most ``max_length``
pieces and ``max_entities`` entities.

Layout of a corpus folder::

    meta.json                 format, version, parameters, per-language counts, hashes
    tokenizer/                the word tokenizer (tokenizer.json, added_tokens.json)
    entity_vocab.sqlite       the entity vocabulary the ids refer to
    <lang>/word_ids.bin       int32, all sequences' word ids (no <s>/</s>)
    <lang>/word_offsets.bin   int64, n_sequences + 1 offsets into word_ids
    <lang>/entity_ids.bin     int32, all sequences' entity ids
    <lang>/entity_spans.bin   int32 (n_entities, 2): word positions [start, end) in the sequence
    <lang>/entity_offsets.bin int64, n_sequences + 1 offsets into entity_ids

Every ``.bin`` is raw little-endian data, opened with ``numpy.memmap``: random
access to any sequence without loading the corpus (:class:`mluke.pretraining.corpus_reader.Corpus`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kb.errors import OptionError, option
from kb.files import check_output, discard, remove, replace, temporary_name
from kb.vocab import EntityVocab
from mluke.models.encoding import encode_with_spans
from mluke.models.tokenizer import MlukeTokenizer
from mluke.pretraining.corpus_reader import ARRAYS, FORMAT, FORMAT_VERSION


@dataclass
class Document:
    """A page: ``links`` are ``(start, end, entity_key)`` character spans of ``text``."""

    lang: str
    text: str
    links: list[tuple[int, int, str]] = field(default_factory=list)
    title: str | None = None


def documents_from_wiki_corpus(path: str | Path, languages: Iterable[str] | None = None) -> Iterator[Document]:
    """The pages a dump build left in its page-text corpus (:class:`kb.WikiCorpus`) as documents:
    links whose target resolved to an entity keep their key, the others are left out."""
    from kb.sources.corpus import WikiCorpus

    corpus = WikiCorpus(path)
    for lang in corpus.languages if languages is None else languages:
        for page in corpus.pages(lang):
            links = [(l.start, l.end, l.entity) for l in page.links if l.entity is not None]
            yield Document(lang, page.text, links, title=page.title)


def build_wiki_corpus(
    pages: str | Path,
    tokenizer: str | Path,
    vocab: str | Path,
    output: str | Path,
    *,
    languages: Iterable[str] | None = None,
    unknown_links: Literal["drop", "unk"] = "drop",
    keep_without_entities: bool = False,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The pretraining corpus of a dump build's page texts: what ``mluke corpus`` does.

    ``pages``: the page-text corpus folder (:class:`kb.WikiCorpus`); ``tokenizer``:
    a folder with the XLM-R tokenizer; ``vocab``: an entity vocabulary file. See
    :func:`build_corpus` for the rest; returns the corpus's ``meta.json`` content.
    """
    from kb.vocab import EntityVocab

    if unknown_links not in ("drop", "unk"):
        raise OptionError(
            "{unknown_links}: expected 'drop' or 'unk'",
            options={"unknown_links": option("unknown_links", unknown_links)},
        )
    entity_vocab = EntityVocab(vocab)
    tok = MlukeTokenizer.from_pretrained(tokenizer, entity_vocab=entity_vocab)
    return build_corpus(
        documents_from_wiki_corpus(pages, languages),
        tok,
        entity_vocab,
        output,
        unknown_links=unknown_links,
        keep_without_entities=keep_without_entities,
        overwrite=overwrite,
        progress=progress,
    )


def split_sentences(lang: str, text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (sentencex; whole text if it finds none)."""
    from sentencex import get_sentence_boundaries

    spans = [(b["start_index"], b["end_index"]) for b in get_sentence_boundaries(lang, text)]
    return spans or [(0, len(text))]


def _sentences_with_links(doc: Document, split: bool) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """Sentences with their links (offsets relative to the sentence); no cut falls inside a link."""
    n = len(doc.text)
    links = [(s, e, k) for s, e, k in doc.links if 0 <= s < e <= n]
    cuts = [e for _, e in split_sentences(doc.lang, doc.text)[:-1]] if split else []
    cuts = [c for c in cuts if not any(s < c < e for s, e, _ in links)]
    out = []
    for start, end in zip([0, *cuts], [*cuts, n]):
        text = doc.text[start:end].rstrip()
        if not text.strip():
            continue
        inside = [(s - start, e - start, k) for s, e, k in links if start <= s and e <= start + len(text)]
        out.append((text, inside))
    return out


class CorpusWriter:
    """Appends sequences per language to ``.bin`` files in a temporary folder; :meth:`close` publishes it."""

    def __init__(self, out_dir: Path, *, overwrite: bool) -> None:
        self.out_dir = check_output(out_dir, overwrite=overwrite)
        self.tmp = temporary_name(out_dir)
        remove(self.tmp)
        self.tmp.mkdir(parents=True)
        self._files: dict[str, dict[str, Any]] = {}
        self.counts: dict[str, dict[str, int]] = {}

    def _lang(self, lang: str) -> dict[str, Any]:
        if lang not in self._files:
            (self.tmp / lang).mkdir()
            files = {name: (self.tmp / lang / f"{name}.bin").open("wb") for name in ARRAYS}
            files["word_offsets"].write(np.zeros(1, np.int64).tobytes())
            files["entity_offsets"].write(np.zeros(1, np.int64).tobytes())
            self._files[lang] = files
            self.counts[lang] = {"sequences": 0, "words": 0, "entities": 0}
        return self._files[lang]

    def add(self, lang: str, word_ids: list[int], entity_ids: list[int], entity_spans: list[tuple[int, int]]) -> None:
        files = self._lang(lang)
        c = self.counts[lang]
        files["word_ids"].write(np.asarray(word_ids, np.int32).tobytes())
        files["entity_ids"].write(np.asarray(entity_ids, np.int32).tobytes())
        files["entity_spans"].write(np.asarray(entity_spans, np.int32).reshape(-1, 2).tobytes())
        c["sequences"] += 1
        c["words"] += len(word_ids)
        c["entities"] += len(entity_ids)
        files["word_offsets"].write(np.int64(c["words"]).tobytes())
        files["entity_offsets"].write(np.int64(c["entities"]).tobytes())

    def close(self, meta: dict[str, Any]) -> None:
        for files in self._files.values():
            for f in files.values():
                f.close()
        (self.tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        replace(self.tmp, self.out_dir)

    def abort(self) -> None:
        for files in self._files.values():
            for f in files.values():
                f.close()
        discard(self.tmp)  # never hides the error that aborted the write


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def build_corpus(
    documents: Iterable[Document],
    tokenizer: MlukeTokenizer,
    vocab: EntityVocab,
    out_dir: str | Path,
    *,
    max_length: int = 512,
    max_entities: int = 128,
    max_mention_length: int = 30,
    unknown_links: Literal["drop", "unk"] = "drop",
    keep_without_entities: bool = False,
    split: bool = True,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Build a corpus folder (see module docs) and return its ``meta.json`` content.

    ``unknown_links``: links to entities outside the vocabulary are dropped or
    given [UNK]. Mentions longer than ``max_mention_length`` pieces are dropped.
    Sequences without any entity are skipped unless ``keep_without_entities``.
    The output is a function of the inputs only (no randomness).
    """
    from tqdm import tqdm

    out_dir = Path(out_dir)
    writer = CorpusWriter(out_dir, overwrite=overwrite)
    stats = {
        "documents": 0,
        "sentences": 0,
        "links": 0,
        "links_unknown": 0,
        "links_dropped_long": 0,
        "sequences_without_entities": 0,
    }
    limit = max_length - 2
    try:
        pending: dict[str, tuple[list[int], list[int], list[tuple[int, int]]]] = {}

        def flush(lang: str) -> None:
            ids, ents, spans = pending.pop(lang, ([], [], []))
            if not ids:
                return
            if ents or keep_without_entities:
                writer.add(lang, ids, ents, spans)
            else:
                stats["sequences_without_entities"] += 1

        bar = tqdm(desc="corpus", unit="doc", disable=not progress, mininterval=1.0)
        for chunk in _chunks(documents, 256):
            # one tokenizer batch and one vocabulary query per chunk of documents
            per_doc = [_sentences_with_links(doc, split) for doc in chunk]
            flat = [sent for sentences in per_doc for sent in sentences]
            keys = sorted({k for _, links in flat for _, _, k in links})
            ids_by_key = dict(zip(keys, vocab.ids_of_keys(keys)))
            encoded = iter(
                encode_with_spans(tokenizer.words, [s for s, _ in flat], [[(a, b) for a, b, _ in l] for _, l in flat])
            )
            for doc, sentences in zip(chunk, per_doc):
                stats["documents"] += 1
                for (_, links), (ids, _, spans) in zip(sentences, encoded):
                    stats["sentences"] += 1
                    ents, ent_spans = [], []
                    for (_, _, key), (a, b) in zip(links, spans):
                        stats["links"] += 1
                        eid = ids_by_key.get(key)
                        if eid is None:
                            stats["links_unknown"] += 1
                            if unknown_links == "drop":
                                continue
                            eid = vocab.unk_id
                        if b - a > max_mention_length or b <= a:
                            stats["links_dropped_long"] += 1
                            continue
                        ents.append(eid)
                        ent_spans.append((a, b))
                    ids = ids[:limit]
                    kept = [(e, s) for e, s in zip(ents, ent_spans) if s[1] <= len(ids)]
                    cur = pending.get(doc.lang)
                    if cur is not None and (len(cur[0]) + len(ids) > limit or len(cur[1]) + len(kept) > max_entities):
                        flush(doc.lang)
                        cur = None
                    if cur is None:
                        cur = pending[doc.lang] = ([], [], [])
                    shift = len(cur[0])
                    cur[0].extend(ids)
                    for e, (a, b) in kept[: max_entities - len(cur[1])]:
                        cur[1].append(e)
                        cur[2].append((a + shift, b + shift))
                flush(doc.lang)  # sequences do not cross documents
            bar.update(len(chunk))
        bar.close()
        for lang in list(pending):
            flush(lang)
        tok_dir = writer.tmp / "tokenizer"
        tokenizer.save_pretrained(tok_dir)
        shutil.copyfile(vocab.path, writer.tmp / "entity_vocab.sqlite")
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "parameters": {
                "max_length": max_length,
                "max_entities": max_entities,
                "max_mention_length": max_mention_length,
                "unknown_links": unknown_links,
                "keep_without_entities": keep_without_entities,
                "split": split,
            },
            "languages": writer.counts,
            "stats": stats,
            "tokenizer_hash": _file_hash(tok_dir / "tokenizer.json"),
            "entity_vocab_hash": _file_hash(writer.tmp / "entity_vocab.sqlite"),
            "word_vocab_size": tokenizer.vocab_size,
            "entity_vocab_size": len(vocab),
        }
        writer.close(meta)
    except BaseException:
        writer.abort()
        raise
    return meta


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
