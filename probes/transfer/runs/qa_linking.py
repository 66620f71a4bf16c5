"""Entity-linked QA input (mLUKE paper, Appendix C): the names in a question and its passage that get an
entity token, found by string matching with the kb's mention index (:class:`kb.mentions.MentionIndex`).

Two sources of links:

- ``anchors`` (what a user with a kb built from the dumps has): every name the index finds in the text's
  language, the index's own link-probability threshold applied (names linked in under 1% of their
  occurrences are not in it); names that refer to several entities are ignored.
- ``english`` (translated data such as XQuAD, whose English source is known): first the English question and
  passage are linked as above; then a name in the translation is kept when exactly one of its candidate
  entities is among those of the English source, and gets that entity (the source disambiguates it).

Linking a dataset file is cached (JSON in ``$MLUKE_HOME/qa-links``, named after the file, its size and
modification time, the language, the source and the index), so evaluating several models does not re-link.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kb.cache import cache_dir
from kb.errors import OptionError
from kb.files import write_json
from probes.transfer.readers.qa import QaExample

if TYPE_CHECKING:
    from kb.mentions import MentionIndex

#: ``(start, end, entity key)`` in characters of a text.
Link = tuple[int, int, str]
LinkSource = Literal["anchors", "english"]
CACHE_VERSION = 1


def link_texts(
    index: MentionIndex, texts: Sequence[str], lang: str, *, allowed: Sequence[frozenset[str] | None] | None = None
) -> list[list[Link]]:
    """The linked names of each text.

    Args:
        index: the mention index.
        texts: the texts.
        lang: their language.
        allowed: per text, the entities it may link to: mentions with exactly one candidate in ``allowed[i]``
            are linked to that one. Without it: mentions with exactly one candidate.

    Returns:
        The links of each text.
    """
    unique = list(dict.fromkeys(texts))  # passages repeat across their questions: detect each once
    found = dict(zip(unique, index.detect_batch(unique, lang)))
    out = []
    for i, text in enumerate(texts):
        keep = allowed[i] if allowed is not None else None
        links = []
        for m in found[text]:
            keys = [c.key for c in m.candidates] if keep is None else [c.key for c in m.candidates if c.key in keep]
            if len(keys) == 1:
                links.append((m.start, m.end, keys[0]))
        out.append(links)
    return out


def link_examples(
    examples: Sequence[QaExample],
    index: MentionIndex,
    *,
    lang: str,
    question_lang: str | None = None,
    english: Mapping[str, QaExample] | None = None,
) -> dict[str, dict[str, list[Link]]]:
    """The linked names of QA examples' questions and passages (see the module docs).

    Args:
        examples: the examples.
        index: the mention index.
        lang: the passages' language.
        question_lang: the questions' language (default: ``lang``).
        english: the English source of translated examples by id (the ``english`` link source); examples without
            one are linked from the anchors alone.

    Returns:
        ``{id: {"question": links, "context": links}}``.
    """
    q_lang = question_lang or lang
    allowed: list[frozenset[str] | None] | None = None
    if english is not None:
        sources = [english.get(e.id) for e in examples]
        have = [s for s in sources if s is not None]
        q_links = link_texts(index, [s.question for s in have], "en")
        c_links = link_texts(index, [s.context for s in have], "en")
        keys = {s.id: frozenset(k for *_, k in q + c) for s, q, c in zip(have, q_links, c_links)}
        allowed = [keys.get(e.id) for e in examples]
    questions = link_texts(index, [e.question for e in examples], q_lang, allowed=allowed)
    contexts = link_texts(index, [e.context for e in examples], lang, allowed=allowed)
    return {e.id: {"question": q, "context": c} for e, q, c in zip(examples, questions, contexts)}


def _identity(path: str | os.PathLike[str]) -> list[str | int]:
    p = Path(path).resolve()
    st = p.stat()
    return [str(p), st.st_size, st.st_mtime_ns]


def cached_links(
    path: str | os.PathLike[str],
    examples: Sequence[QaExample],
    index: MentionIndex,
    *,
    lang: str,
    question_lang: str | None = None,
    source: LinkSource = "anchors",
    english_path: str | os.PathLike[str] | None = None,
    english: Mapping[str, QaExample] | None = None,
    cache: bool = True,
) -> dict[str, dict[str, list[Link]]]:
    """:func:`link_examples` for the examples read from ``path``, through the cache (see the module docs).

    Args:
        path: the file the examples were read from (part of the cache key).
        examples: the examples.
        index: the mention index.
        lang: the passages' language.
        question_lang: the questions' language (default: ``lang``).
        source: ``"anchors"`` or ``"english"``.
        english_path: with ``source="english"``, the English file.
        english: with ``source="english"``, the English examples by id read from ``english_path``.
        cache: read and write the cache.

    Returns:
        ``{id: {"question": links, "context": links}}``.

    Raises:
        OptionError: an unknown source, or ``"english"`` without the English data.
    """
    if source not in ("anchors", "english"):
        raise OptionError(f"link source {source!r}: expected 'anchors' or 'english'")
    if source == "english" and (english is None or english_path is None):
        raise OptionError("the 'english' link source needs the English version of the data (e.g. xquad.en.json)")
    ident = json.dumps(
        [
            CACHE_VERSION,
            _identity(path),
            lang,
            question_lang or lang,
            source,
            _identity(english_path) if source == "english" and english_path is not None else None,
            str(getattr(index, "path", None)),
            getattr(index, "provenance", None),
        ],
        sort_keys=True,
        default=str,
    )
    target = cache_dir() / "qa-links" / f"{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"
    if cache and target.is_file():
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
            if {e.id for e in examples} <= data.keys():
                return {
                    k: {part: [tuple(x) for x in v[part]] for part in ("question", "context")} for k, v in data.items()
                }
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged cache file is rebuilt
    links = link_examples(
        examples, index, lang=lang, question_lang=question_lang, english=english if source == "english" else None
    )
    if cache:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_json(links, target, overwrite=True)
    return links
