"""Extractive-QA scores (exact match, token F1) under the official scorers of the data sets, and
MLQA's G-XLT table (context language x question language).

Two scorers, each our own implementation of an official evaluation script's rules:

``"squad"`` -- SQuAD v1.1's ``evaluate-v1.1.py``, which XQuAD's authors use in every language:
lower-case; drop the characters of :data:`string.punctuation` (ASCII only: ``“`` ``”`` ``…`` ``،``
stay); drop ``a``, ``an``, ``the`` as whole words (``re``'s Unicode ``\\b``); split on whitespace.
The language is not used.

``"mlqa"`` -- MLQA's ``mlqa_evaluation_v1.py`` for its seven languages (ar de en es hi vi zh), scored
in the *context* language: lower-case; drop every character of a Unicode category ``P*`` and of
:data:`string.punctuation`; drop the language's articles (:data:`ARTICLES`: whole words for en, es,
de, vi; none for hi, zh); then split on whitespace, except zh, whose "mixed segmentation" makes each
character of ``[\\u4e00-\\u9fa5]`` a token and splits the rest on whitespace (kana, Hangul and CJK
characters outside that range are not split). Other languages are refused, as by the script.
Arabic follows the script's regex ``'\\sال^|ال'``: its first branch can never match (``^`` after
three characters), so *every* ``ال`` in the text is replaced by a space, also inside words
(``العالم`` -> ``ع م``). That is a bug, but published MLQA numbers were computed with it, so
``"mlqa"`` keeps it; ``"mlqa-fixed"`` is the same scorer with the article removed only at the start
of a whitespace token, as the regex intends.

Per question, EM (1.0/0.0) and bag-of-tokens F1 (0.0 when no token is shared, also when both are
empty) are maxima over the gold answers; a question without a prediction scores 0, as in both
scripts. Scores are fractions in [0, 1]; callers multiply by 100.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from kb.errors import OptionError

Scorer = Literal["squad", "mlqa", "mlqa-fixed"]
#: The scorers, in the order the CLI lists them.
SCORERS: tuple[str, ...] = ("squad", "mlqa", "mlqa-fixed")

#: Language -> regex alternation of the articles MLQA's script removes as whole words (after
#: lower-casing); ar is the script's ``ال`` rule (see the module docs); hi and zh have none.
ARTICLES: dict[str, str] = {
    "en": "a|an|the",
    "es": "un|una|unos|unas|el|la|los|las",
    "de": "ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des",
    "vi": "của|là|cái|chiếc|những",
    "ar": "ال",
}
#: The languages MLQA's script scores (any other raises there, and here under the MLQA scorers).
MLQA_SCORED = ("ar", "de", "en", "es", "hi", "vi", "zh")

_SQUAD_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_MLQA_ARTICLES = {lang: re.compile(rf"\b(?:{alternation})\b") for lang, alternation in ARTICLES.items() if lang != "ar"}
_ASCII_PUNCTUATION = frozenset(string.punctuation)
#: MLQA's mixed segmentation splits off only this range (CJK Unified Ideographs as of Unicode 1.1-3.0).
_MLQA_HAN = re.compile("[\u4e00-\u9fa5]")


def _base(lang: str) -> str:
    """The primary language subtag, lower-cased ("zh-Hans" -> "zh")."""
    return re.split(r"[-_]", lang.strip().lower(), maxsplit=1)[0]


def check_scorer(scorer: str, lang: str | None = None) -> None:
    """Refuse an unknown scorer, or an MLQA scorer asked for a language that MLQA's script does not score.

    Args:
        scorer: the scorer's name.
        lang: the context language, when known.

    Raises:
        OptionError: either case.
    """
    if scorer not in SCORERS:
        raise OptionError(f"unknown QA scorer {scorer!r}; choose one of {', '.join(SCORERS)}")
    if lang is not None and scorer != "squad" and _base(lang) not in MLQA_SCORED:
        raise OptionError(
            f"the {scorer} scorer has rules only for MLQA's languages ({' '.join(MLQA_SCORED)}), "
            f"not {lang!r}; use scorer 'squad' (SQuAD v1.1 rules, as XQuAD's authors do)"
        )


def _is_unicode_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def _mixed_segmentation(text: str) -> list[str]:
    """MLQA's zh tokens: each character of ``[\\u4e00-\\u9fa5]`` alone, the runs between them split
    on whitespace."""
    tokens: list[str] = []
    start = 0
    for match in _MLQA_HAN.finditer(text):
        tokens.extend(text[start : match.start()].split())
        tokens.append(match.group())
        start = match.end()
    tokens.extend(text[start:].split())
    return tokens


def _squad_normalize(text: str) -> str:
    text = "".join(char for char in text.lower() if char not in _ASCII_PUNCTUATION)
    return " ".join(_SQUAD_ARTICLES.sub(" ", text).split())


def _mlqa_normalize(text: str, lang: str, fixed: bool) -> str:
    text = "".join(char for char in text.lower() if not _is_unicode_punctuation(char))
    if lang == "ar":
        if fixed:  # the article only where a token starts
            text = " ".join(token[2:] if token.startswith("ال") else token for token in text.split())
        else:  # official: every "ال", also inside words (the script's first regex branch never matches)
            text = text.replace("ال", " ")
    elif lang in _MLQA_ARTICLES:
        text = _MLQA_ARTICLES[lang].sub(" ", text)
    tokens = _mixed_segmentation(text) if lang == "zh" else text.split()
    return " ".join(tokens)


def normalize_answer(text: str, lang: str, scorer: Scorer = "squad") -> str:
    """``text`` as ``scorer`` compares it: lower-cased, without punctuation and articles, its tokens joined by
    single spaces (see the module docs for each scorer's rules).

    Args:
        text: an answer.
        lang: the context language.
        scorer: ``"squad"``, ``"mlqa"`` or ``"mlqa-fixed"``.

    Returns:
        The normalised answer.
    """
    check_scorer(scorer, lang)
    if scorer == "squad":
        return _squad_normalize(text)
    return _mlqa_normalize(text, _base(lang), fixed=scorer == "mlqa-fixed")


def answer_tokens(text: str, lang: str, scorer: Scorer = "squad") -> list[str]:
    """The tokens of the normalised answer: the bag that F1 counts.

    Args:
        text: an answer.
        lang: the context language.
        scorer: ``"squad"``, ``"mlqa"`` or ``"mlqa-fixed"``.

    Returns:
        The tokens.
    """
    return normalize_answer(text, lang, scorer).split()


def _check_golds(golds: Sequence[str]) -> None:
    if isinstance(golds, str):
        raise OptionError("gold answers must be a sequence of strings, not a single string")
    if not golds:
        raise OptionError("a question needs at least one gold answer")


def exact_match(prediction: str, golds: Sequence[str], lang: str, scorer: Scorer = "squad") -> float:
    """Whether the normalised prediction equals some normalised gold answer.

    Args:
        prediction: the predicted answer.
        golds: the gold answers.
        lang: the context language.
        scorer: ``"squad"``, ``"mlqa"`` or ``"mlqa-fixed"``.

    Returns:
        1.0 or 0.0.
    """
    _check_golds(golds)
    predicted = normalize_answer(prediction, lang, scorer)
    return float(any(predicted == normalize_answer(gold, lang, scorer) for gold in golds))


def _token_f1(predicted: list[str], gold: list[str]) -> float:
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str], lang: str, scorer: Scorer = "squad") -> float:
    """The best token-overlap F1 of the prediction against any of the gold answers (the arguments are
    those of :func:`exact_match`).

    Returns:
        The F1, in [0, 1].
    """
    _check_golds(golds)
    predicted = answer_tokens(prediction, lang, scorer)
    return max(_token_f1(predicted, answer_tokens(gold, lang, scorer)) for gold in golds)


def qa_scores(
    predictions: Mapping[str, str], golds: Mapping[str, Sequence[str]], lang: str, scorer: Scorer = "squad"
) -> dict[str, float | int | str]:
    """Mean EM and F1 over the questions in ``golds`` (fractions in [0, 1]) under ``scorer``.

    Predictions for ids that are not in ``golds`` are ignored.

    Args:
        predictions: the predicted answer text by question id.
        golds: the gold answer texts by question id.
        lang: the context language (MLQA's scorers are per language).
        scorer: ``"squad"``, ``"mlqa"`` or ``"mlqa-fixed"``.

    Returns:
        ``exact_match``, ``f1``, ``questions`` (number of gold questions), ``missing`` (gold questions without a
        prediction; they score 0, as in the official scripts) and ``scorer``.
    """
    check_scorer(scorer, lang)
    if not golds:
        raise OptionError("no gold questions to score")
    em = f1 = 0.0
    missing = 0
    for qid, answers in golds.items():
        if qid not in predictions:
            _check_golds(answers)
            missing += 1
            continue
        em += exact_match(predictions[qid], answers, lang, scorer)
        f1 += f1_score(predictions[qid], answers, lang, scorer)
    n = len(golds)
    return {"exact_match": em / n, "f1": f1 / n, "questions": n, "missing": missing, "scorer": scorer}


def gxlt_matrix(scores: Mapping[tuple[str, str], float], langs: Sequence[str]) -> tuple[list[str], list[list[object]]]:
    """MLQA's G-XLT table: one row per context language, one column per question language.

    Args:
        scores: (context_lang, question_lang) -> a fraction in [0, 1].
        langs: the languages, in the table's order.

    Returns:
        ``(columns, rows)``: cells x100 rounded to one decimal, "-" where a pair is missing; the final "average"
        row holds each column's mean over its available cells (computed before rounding).
    """
    columns = ["context \\ question", *langs]
    rows: list[list[object]] = []
    for context in langs:
        row: list[object] = [context]
        row.extend(
            round(100 * scores[context, question], 1) if (context, question) in scores else "-" for question in langs
        )
        rows.append(row)
    average: list[object] = ["average"]
    for question in langs:
        cells = [scores[context, question] for context in langs if (context, question) in scores]
        average.append(round(100 * sum(cells) / len(cells), 1) if cells else "-")
    rows.append(average)
    return columns, rows
