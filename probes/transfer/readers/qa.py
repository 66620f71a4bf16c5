"""Reading and writing extractive question answering data in the SQuAD 1.1 JSON layout.

SQuAD 1.1 (training), XQuAD and MLQA all use it::

    {"version": "1.1",
     "data": [{"title": "Paris",
               "paragraphs": [{"context": "Paris is the capital of France.",
                               "qas": [{"id": "q1", "question": "What is the capital of France?",
                                        "answers": [{"answer_start": 0, "text": "Paris"}]}]}]}]}

``answer_start`` counts Python characters (code points) of ``context``, not bytes
or UTF-16 units, so ``context[start:start + len(text)] == text``. Evaluation sets
list several answers per question (one per annotator, repeats included); all are
kept, in file order.

File names: XQuAD has one file per language, ``xquad.{lang}.json``; MLQA one per
pair of context language ``c`` and question language ``q``,
``{dev,test}-context-{c}-question-{q}.json``.

Bad records are counted and skipped, never fatal (see :class:`QaDataset`):

- structure: an article that is not an object or whose ``paragraphs`` is not a
  list (location ``article i``), a paragraph without a string ``context`` or whose
  ``qas`` is not a list (``article i paragraph j``; indices count from 0, as in the JSON);
- questions (``question ID``): no id or no question text, ``answers`` not a list,
  no answers (unless ``require_answers=False``), a repeated id (the first is kept);
- answers: ``answer_start`` not an int, text missing or empty, or the text not at
  ``answer_start`` in the context. A question whose answers are all bad is skipped
  (counted once, under its first bad answer's reason); one with some good answers
  keeps them and each dropped answer is counted as ``answer dropped (...)``.

A missing or unreadable file, one that is not UTF-8 JSON, a top level without a
``data`` list, or a file from which no question could be read is a
:class:`kb.errors.InputFormatError` naming the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kb.errors import InputFormatError, OptionError
from kb.files import file_bytes, write_json
from probes.reading import ReadSet, Skips

MLQA_SPLITS = ("dev", "test")

Answer = tuple[int, str]


@dataclass(frozen=True)
class QaExample:
    """One question on one context with its answers: ``(answer_start, text)`` in characters of ``context``.

    ``lang`` is the context's language and ``question_lang`` the question's
    (MLQA pairs them differently); ``question_lang`` is ``lang`` when not given.
    """

    id: str
    question: str
    context: str
    answers: tuple[Answer, ...]
    title: str = ""
    lang: str | None = None
    question_lang: str | None = None

    def __post_init__(self) -> None:
        if self.question_lang is None:
            object.__setattr__(self, "question_lang", self.lang)

    @property
    def answer_texts(self) -> list[str]:
        """The answers' texts, in file order (what answer-matching metrics compare a prediction with)."""
        return [text for _, text in self.answers]


@dataclass
class QaDataset(ReadSet[QaExample]):
    """Questions read from one file and the records skipped: count per reason and the first few
    ``path [location]: reason`` examples of each."""

    examples: list[QaExample]
    skipped: dict[str, int]
    examples_skipped: list[str]
    path: str | None = None

    def records(self) -> list[QaExample]:
        return self.examples

    def __repr__(self) -> str:
        head = f"QaDataset({len(self.examples):,} questions, skipped {sum(self.skipped.values()):,} records)"
        return self._described(head, self.examples_skipped)


# -- reading -----------------------------------------------------------------------------------------------------------


def _load(path: Path) -> list[Any]:
    """The ``data`` list of a SQuAD-layout file; anything else is an :class:`InputFormatError` naming it."""
    expected = "a SQuAD-format JSON file with a 'data' list"
    raw = file_bytes(path, expected=expected)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{path}: bytes that are not UTF-8 at byte {exc.start}; expected {expected}") from None
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFormatError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}); expected {expected}") from None
    if not isinstance(top, dict):
        raise InputFormatError(f"{path}: the top level is a JSON {type(top).__name__}; expected {expected}")
    if not isinstance(top.get("data"), list):
        found = f"'data' is {type(top['data']).__name__}" if "data" in top else "no 'data' key"
        raise InputFormatError(f"{path}: {found}; expected {expected}")
    return cast("list[Any]", top["data"])


def _answer_problem(answer: Any, context: str) -> str | None:
    """Why an answer record is unusable (a skip reason starting with ``answer``), or None if it is good."""
    if not isinstance(answer, dict):
        return "answer not an object"
    start, text = answer.get("answer_start"), answer.get("text")
    if not isinstance(start, int) or isinstance(start, bool):
        return "answer_start not an int"
    if not isinstance(text, str) or not text:
        return "answer text missing or empty"
    if start < 0 or context[start : start + len(text)] != text:
        return "answer text not at answer_start"
    return None


def _dropped(reason: str) -> str:
    """The reason for one bad answer of a question that is kept: ``answer dropped (text not at answer_start)``."""
    return f"answer dropped ({reason.removeprefix('answer ')})"


def _question(
    qa: Any,
    where: str,
    context: str,
    title: str,
    lang: str | None,
    question_lang: str | None,
    require_answers: bool,
    seen: set[str],
    path: Path,
    skips: Skips,
) -> QaExample | None:
    """The example of one ``qas`` record, or None after counting why it is skipped (``seen``: ids kept so far)."""
    ident = qa.get("id") if isinstance(qa, dict) else None
    if isinstance(ident, int) and not isinstance(ident, bool):
        ident = str(ident)
    question = qa.get("question") if isinstance(qa, dict) else None
    if not isinstance(ident, str) or not ident.strip():
        skips.add(path, where, "question without id or question text", "no id")
        return None
    where = f"question {ident}"
    if ident in seen:
        skips.add(path, where, "duplicate question id", "the first is kept")
        return None
    if not isinstance(question, str) or not question.strip():
        skips.add(path, where, "question without id or question text", "no question text")
        return None
    records = qa.get("answers")
    if records is None:
        records = []
    if not isinstance(records, list):
        skips.add(path, where, "answers not a list", type(records).__name__)
        return None
    answers: list[Answer] = []
    problems: list[str] = []
    for record in records:
        problem = _answer_problem(record, context)
        if problem:
            problems.append(problem)
        else:
            answers.append((record["answer_start"], record["text"]))
    if problems and not answers:
        skips.add(path, where, problems[0])
        return None
    for problem in problems:
        skips.add(path, where, _dropped(problem))
    if not answers and require_answers:
        skips.add(path, where, "no answers")
        return None
    return QaExample(ident, question, context, tuple(answers), title, lang, question_lang)


def read_squad(
    path: str | os.PathLike[str],
    *,
    lang: str | None = None,
    question_lang: str | None = None,
    require_answers: bool = True,
) -> QaDataset:
    """The questions of a SQuAD-layout file (SQuAD 1.1, one XQuAD language, one MLQA pair), in file order.

    Bad records are counted and skipped (see the module docs).

    Args:
        path: the file.
        lang: the context's language, stored on each example (the file does not say it).
        question_lang: the questions' language (default: ``lang``).
        require_answers: when False, questions without answers are kept with ``answers=()`` (e.g. test files
            without gold).

    Returns:
        The :class:`QaDataset`.
    """
    path = Path(path)
    data = _load(path)
    skips = Skips()
    examples: list[QaExample] = []
    seen: set[str] = set()
    for i, article in enumerate(data):
        if not isinstance(article, dict):
            skips.add(path, f"article {i}", "article not an object", type(article).__name__)
            continue
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list):
            skips.add(path, f"article {i}", "paragraphs not a list", type(paragraphs).__name__)
            continue
        title = article["title"] if isinstance(article.get("title"), str) else ""
        for j, paragraph in enumerate(paragraphs):
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            if not isinstance(context, str):
                skips.add(path, f"article {i} paragraph {j}", "paragraph without a string context")
                continue
            qas = paragraph.get("qas")  # a missing list is reported too: its questions would vanish unseen
            if not isinstance(qas, list):
                skips.add(path, f"article {i} paragraph {j}", "qas not a list", type(qas).__name__)
                continue
            for k, qa in enumerate(qas):
                example = _question(
                    qa,
                    f"article {i} paragraph {j} question {k}",
                    context,
                    title,
                    lang,
                    question_lang,
                    require_answers,
                    seen,
                    path,
                    skips,
                )
                if example is not None:
                    seen.add(example.id)
                    examples.append(example)
    if not examples:
        raise InputFormatError(skips.nothing_read(path, "questions" + (" with answers" if require_answers else "")))
    return QaDataset(examples, dict(skips.counts), skips.examples, str(path))


def read_xquad(folder: str | os.PathLike[str], langs: Sequence[str]) -> dict[str, QaDataset]:
    """XQuAD's ``folder/xquad.{lang}.json`` for each language (context and question in that language).

    Args:
        folder: the XQuAD folder.
        langs: the languages to read.

    Returns:
        ``{lang: QaDataset}``.

    Raises:
        OptionError: no language given.
    """
    if isinstance(langs, str):
        langs = [langs]
    if not langs:
        raise OptionError("no XQuAD languages given")
    folder = Path(folder)
    return {lang: read_squad(folder / f"xquad.{lang}.json", lang=lang) for lang in langs}


def mlqa_path(folder: str | os.PathLike[str], context_lang: str, question_lang: str, split: str = "dev") -> Path:
    """Where MLQA keeps a (context, question) language pair.

    Args:
        folder: the MLQA folder.
        context_lang: the contexts' language.
        question_lang: the questions' language.
        split: ``"dev"`` or ``"test"``.

    Returns:
        ``folder/{split}-context-{c}-question-{q}.json``.
    """
    if split not in MLQA_SPLITS:
        raise OptionError(f"MLQA split {split!r} unknown; expected one of {', '.join(MLQA_SPLITS)}")
    return Path(folder) / f"{split}-context-{context_lang}-question-{question_lang}.json"


def read_mlqa(
    folder: str | os.PathLike[str], context_lang: str, question_lang: str, *, split: str = "dev"
) -> QaDataset:
    """The MLQA questions in ``question_lang`` on contexts in ``context_lang`` (see :func:`mlqa_path`).

    Parallel questions share their id across languages, so the ids link translations. The arguments are
    those of :func:`mlqa_path`.

    Returns:
        The :class:`QaDataset`.
    """
    return read_squad(
        mlqa_path(folder, context_lang, question_lang, split), lang=context_lang, question_lang=question_lang
    )


# -- writing -------------------------------------------------------------------------------------------------------


def _check_writable(example: QaExample, seen: set[str]) -> None:
    problems = []
    if not isinstance(example.id, str) or not example.id.strip():
        problems.append("an empty id")
    elif example.id in seen:
        problems.append("an id already written (read_squad would drop it)")
    if not isinstance(example.question, str) or not example.question.strip():
        problems.append("an empty question")
    for start, text in example.answers:
        if (
            not isinstance(start, int)
            or not isinstance(text, str)
            or not text
            or start < 0
            or example.context[start : start + len(text)] != text
        ):
            problems.append(f"answer {(start, text)!r} not at its answer_start in the context")
    if problems:
        raise OptionError(f"cannot write question {example.id!r} in the SQuAD layout: {'; '.join(problems)}")


def write_squad(examples: Iterable[QaExample], path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Write examples in the SQuAD 1.1 layout that :func:`read_squad` reads back.

    Questions are grouped into articles by title and into paragraphs by context (each in order of first
    appearance), so examples read back in that grouped order. Languages are not stored (the layout has no place
    for them). The file is written atomically.

    Args:
        examples: the questions.
        path: the file to write.
        overwrite: replace an existing file (else it is refused).

    Raises:
        OptionError: an example that cannot be written faithfully.
    """
    articles: dict[str, dict[str, list[dict[str, Any]]]] = {}
    seen: set[str] = set()
    for example in examples:
        _check_writable(example, seen)
        seen.add(example.id)
        qas = articles.setdefault(example.title, {}).setdefault(example.context, [])
        qas.append(
            {
                "id": example.id,
                "question": example.question,
                "answers": [{"answer_start": start, "text": text} for start, text in example.answers],
            }
        )
    data = [
        {"title": title, "paragraphs": [{"context": context, "qas": qas} for context, qas in paragraphs.items()]}
        for title, paragraphs in articles.items()
    ]
    write_json({"version": "1.1", "data": data}, path, overwrite=overwrite)
