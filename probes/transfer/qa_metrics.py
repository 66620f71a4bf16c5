"""Extractive-QA scores (exact match, token F1) with MLQA's per-language answer normalisation,
and MLQA's G-XLT table (context language x question language).

Normalisation (our implementation of what MLQA's official evaluation does): lower-case; drop
punctuation, i.e. every character of a Unicode category ``P*`` (``،``, ``؟``, ``।``, ``。`` ...)
plus :data:`string.punctuation` (which adds ``$``, ``+``, ``^`` ...); drop the language's articles
(:data:`ARTICLES`) as whole words; fix whitespace. Only MLQA's seven languages have rules: en, es,
de and vi article lists; ar strips a token-initial ``ال`` (MLQA's regex ``\\sال^|ال`` aims at the
definite article; we remove it from the start of each whitespace token only); hi and zh have none.
Every other language keeps its articles, so French "la" is a token, as MLQA would score it.

Tokens are whitespace-separated, except in zh (MLQA) and, our extension since MLQA has neither,
ja and th: "mixed segmentation" makes every CJK character (Han, kana) or Thai character a token,
while runs of other characters are split on whitespace. The normalised zh answer is thus the
characters joined by spaces ("北京市" -> "北 京 市"), so EM ignores spacing between them, as in MLQA.

Per question, EM (1.0/0.0) and bag-of-tokens F1 (0.0 when no token is shared) are maxima over the
gold answers. Scores are fractions in [0, 1]; callers multiply by 100.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

from kb.errors import OptionError

#: Language -> regex alternation of the articles MLQA removes (as whole words, after lower-casing).
#: ar is handled apart (a token-initial "ال"); hi, zh and every other language have no articles.
ARTICLES: dict[str, str] = {
    "en": "a|an|the",
    "es": "un|una|unos|unas|el|la|los|las",
    "de": "ein|eine|einer|eines|einem|einen|der|die|das|des|dem|den",
    "vi": "của|là|cái|chiếc|những",
    "ar": "ال",
}

_ARTICLE_RES = {lang: re.compile(rf"\b(?:{alternation})\b") for lang, alternation in ARTICLES.items() if lang != "ar"}
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_CJK = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_THAI = re.compile("[\u0e00-\u0e7f]")
#: Languages tokenised by mixed segmentation, and which characters become tokens of their own.
_SEGMENTED = {"zh": _CJK, "ja": _CJK, "th": _THAI}


def _base(lang: str) -> str:
    """The primary language subtag, lower-cased ("zh-Hans" -> "zh")."""
    return re.split(r"[-_]", lang.strip().lower(), maxsplit=1)[0]


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


def _tokenize(text: str, lang: str) -> list[str]:
    """Whitespace tokens, or mixed segmentation for zh/ja/th (see the module docs)."""
    single = _SEGMENTED.get(lang)
    if single is None:
        return text.split()
    tokens: list[str] = []
    run: list[str] = []
    for char in text:
        if single.match(char):
            tokens.extend("".join(run).split())
            run = []
            tokens.append(char)
        else:
            run.append(char)
    tokens.extend("".join(run).split())
    return tokens


def normalize_answer(text: str, lang: str) -> str:
    """``text`` lower-cased, without punctuation and articles, its tokens joined by single spaces.

    This is the string exact match compares; see the module docs for the per-language rules.
    """
    lang = _base(lang)
    text = "".join(char for char in text.lower() if not _is_punctuation(char))
    if lang == "ar":
        text = " ".join(token[2:] if token.startswith("ال") else token for token in text.split())
    elif lang in _ARTICLE_RES:
        text = _ARTICLE_RES[lang].sub(" ", text)
    return " ".join(_tokenize(text, lang))


def answer_tokens(text: str, lang: str) -> list[str]:
    """The tokens of the normalised answer: the bag that F1 counts."""
    return normalize_answer(text, lang).split()


def _check_golds(golds: Sequence[str]) -> None:
    if isinstance(golds, str):
        raise OptionError("gold answers must be a sequence of strings, not a single string")
    if not golds:
        raise OptionError("a question needs at least one gold answer")


def exact_match(prediction: str, golds: Sequence[str], lang: str) -> float:
    """1.0 if the normalised prediction equals some normalised gold answer, else 0.0."""
    _check_golds(golds)
    predicted = normalize_answer(prediction, lang)
    return float(any(predicted == normalize_answer(gold, lang) for gold in golds))


def _token_f1(predicted: list[str], gold: list[str]) -> float:
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str], lang: str) -> float:
    """The best token-overlap F1 of the prediction against any of the gold answers."""
    _check_golds(golds)
    predicted = answer_tokens(prediction, lang)
    return max(_token_f1(predicted, answer_tokens(gold, lang)) for gold in golds)


def qa_scores(predictions: Mapping[str, str], golds: Mapping[str, Sequence[str]], lang: str) -> dict:
    """Mean EM and F1 over the questions in ``golds`` (fractions in [0, 1]).

    Returns ``exact_match``, ``f1``, ``questions`` (number of gold questions) and ``missing``
    (gold questions without a prediction; they score 0, as in MLQA). Predictions for ids that
    are not in ``golds`` are ignored.
    """
    if not golds:
        raise OptionError("no gold questions to score")
    em = f1 = 0.0
    missing = 0
    for qid, answers in golds.items():
        if qid not in predictions:
            _check_golds(answers)
            missing += 1
            continue
        em += exact_match(predictions[qid], answers, lang)
        f1 += f1_score(predictions[qid], answers, lang)
    n = len(golds)
    return {"exact_match": em / n, "f1": f1 / n, "questions": n, "missing": missing}


def gxlt_matrix(scores: Mapping[tuple[str, str], float],
                langs: Sequence[str]) -> tuple[list[str], list[list[object]]]:
    """MLQA's G-XLT table: one row per context language, one column per question language.

    ``scores`` maps (context_lang, question_lang) to a fraction in [0, 1]. Cells are x100 and
    rounded to one decimal, "-" where a pair is missing; the final "average" row holds each
    column's mean over its available cells (computed before rounding).
    """
    columns = ["context \\ question", *langs]
    rows: list[list[object]] = []
    for context in langs:
        row: list[object] = [context]
        row.extend(round(100 * scores[context, question], 1) if (context, question) in scores else "-"
                   for question in langs)
        rows.append(row)
    average: list[object] = ["average"]
    for question in langs:
        cells = [scores[context, question] for context in langs if (context, question) in scores]
        average.append(round(100 * sum(cells) / len(cells), 1) if cells else "-")
    rows.append(average)
    return columns, rows
