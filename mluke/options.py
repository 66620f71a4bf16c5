"""The options of linking and probing as objects: :class:`LinkOptions` and :class:`ProbeOptions`.

Each is a frozen dataclass checked when it is made, so a bad value fails before a model is loaded, with
the same error wherever it comes from. The public functions take ``options=`` and, for convenience,
the same fields as keyword arguments (:class:`LinkKeywords`, :class:`ProbeKeywords`); internal code
passes the object only. This module imports no model code (the CLI builds options from its flags
before anything slow is imported).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, TypeVar

from kb.errors import MlukeError, OptionError, option

Method = Literal["combined", "prior", "model", "global", "knowbert"]
#: The linking methods (see :mod:`mluke.linking.texts`; "knowbert": :mod:`mluke.linking.knowbert`).
METHODS: tuple[Method, ...] = ("combined", "prior", "model", "global", "knowbert")
Mode = Literal["entity", "word", "both"]
Normalize = Literal["candidates", "vocabulary"]
Decoding = Literal["independent", "left-to-right", "confidence"]

#: Streams link up to this many texts per :meth:`mluke.Linker.link` call ...
CHUNK_TEXTS = 256
#: ... and at most this many characters; a longer text is linked alone, in segments.
CHUNK_CHARS = 1 << 16
#: Windows per segment of a long text.
SEGMENT_WINDOWS = 64
#: A corpus's chunks never straddle a multiple of this many lines, so a corpus cut into shards of this many
#: lines (:mod:`mluke.distributed`) is linked in the same batches as the whole file, with the same output.
SHARD_LINES = 1_000


@dataclass(frozen=True)
class LinkOptions:
    """How :func:`mluke.link` and :class:`mluke.Linker` decide (checked when made).

    Args:
        method: "combined" (model + prior), "prior", "model", "global" (combined, resolving
            mentions one at a time in order of confidence and feeding resolved entities back in), or
            "knowbert" (a KnowBert model's integrated linker, :mod:`mluke.linking.knowbert`).
        prior_weight: weight of ``log p(e|m)`` next to the model's log-probability ("combined", "global").
        nil_threshold: mentions whose confidence (0 to 1) is below it are NIL; ``None``: the calibration's
            ("knowbert": ``None`` leaves NIL to the integrated linker's NULL decision).
        candidates: keep every candidate's scores on each linked mention.
        window_chars: texts are read by the model in windows of about this many characters.
        batch_size: windows per forward pass.
        chunk_texts: streams link up to this many texts at a time ...
        chunk_chars: ... and this many characters; a longer text is linked alone, in segments.
        segment_windows: windows per segment of a long text in a stream.
        shard_lines: a corpus's chunks never straddle a multiple of this many lines (``mluke link CORPUS`` and
            :mod:`mluke.distributed` cut corpora alike, so they give the same output).
        knowledge_base: "knowbert" only: the knowledge base of a model with several whose linker decides
            (``None``: the model's first).

    Raises:
        OptionError: an unknown method, a NIL threshold outside [0, 1], a prior weight that is negative or not
            finite (nan, inf), a size that is not a whole number of at least 1, or a knowledge base with a method
            other than "knowbert".
    """

    method: Method = "combined"
    prior_weight: float = 1.0
    nil_threshold: float | None = None
    candidates: bool = False
    window_chars: int = 1000
    batch_size: int = 16
    chunk_texts: int = CHUNK_TEXTS
    chunk_chars: int = CHUNK_CHARS
    segment_windows: int = SEGMENT_WINDOWS
    shard_lines: int = SHARD_LINES
    knowledge_base: str | None = None

    def __post_init__(self) -> None:
        check_methods([self.method])
        if self.knowledge_base is not None and self.method != "knowbert":
            raise OptionError(
                "{knowledge_base}: only method 'knowbert' links with a named knowledge base",
                options={"knowledge_base": option("knowledge_base", self.knowledge_base)},
            )
        check_nil_threshold(self.nil_threshold)
        if not _is_number(self.prior_weight) or not (math.isfinite(self.prior_weight) and self.prior_weight >= 0):
            raise OptionError(
                "{prior_weight}: expected a finite number of at least 0 (the weight of log p(entity | mention); "
                "0 leaves the model alone)",
                options={"prior_weight": option("prior_weight", self.prior_weight)},
            )
        for name in ("window_chars", "batch_size", "chunk_texts", "chunk_chars", "segment_windows", "shard_lines"):
            check_count(name, getattr(self, name))


#: The names of :class:`LinkOptions`'s fields.
LINK_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(LinkOptions))


class LinkKeywords(TypedDict, total=False):
    """The fields of :class:`LinkOptions`, as keyword arguments of the public linking functions."""

    method: Method
    prior_weight: float
    nil_threshold: float | None
    candidates: bool
    window_chars: int
    batch_size: int
    chunk_texts: int
    chunk_chars: int
    segment_windows: int
    shard_lines: int
    knowledge_base: str | None


@dataclass(frozen=True)
class ProbeOptions:
    """How :func:`mluke.probe` asks and answers (checked when made; see :mod:`mluke.probing.cloze`).

    Args:
        mode: "entity", "word" or "both"; ``None``: entity mode for an mLUKE checkpoint, else word mode.
        use_subject_entity: give the subject's entity over [X] where it is in the entity vocabulary
            (``None``: as ``True``); ``False``: [Y] only.
        top_k: predictions kept per subject.
        normalize: log-probabilities over the "candidates" or the whole "vocabulary" (same ranking).
        exclude_subject: a subject is never its own answer.
        batch_size: prompts per forward pass.
        threshold: answer with every candidate of at least this probability instead of the ``top_k``.
        max_pieces: open-vocabulary word answers: the longest, in word pieces.
        decoding: open-vocabulary word answers: "independent", "left-to-right" or "confidence" order.
        beam: open-vocabulary word answers: partial answers kept at each step.
        knowledge: a KnowBert model (:mod:`mluke.knowbert.word_model`): run its knowledge layer; ``False``: the
            bare encoder, to compare P@1 with and without the layer.

    Raises:
        MlukeError: an unknown mode or normalisation, a threshold outside (0, 1] (nan included);
            :class:`OptionError`: a ``top_k`` outside 1 to :data:`MAX_TOP_K`, a ``max_pieces`` above
            :data:`MAX_PIECES`, a ``beam`` above :data:`MAX_BEAM`, a size that is not a whole number of at least 1.
    """

    mode: Mode | None = None
    use_subject_entity: bool | None = None
    top_k: int = 5
    normalize: Normalize = "candidates"
    exclude_subject: bool = True
    batch_size: int = 64
    threshold: float | None = None
    max_pieces: int = 5
    decoding: Decoding = "confidence"
    beam: int = 5
    knowledge: bool = True

    def __post_init__(self) -> None:
        if self.mode is not None and self.mode not in ("entity", "word", "both"):
            raise MlukeError("{mode}: expected 'entity', 'word' or 'both'", options={"mode": option("mode", self.mode)})
        check_count("top_k", self.top_k, MAX_TOP_K, "predictions kept per subject")
        check_count("batch_size", self.batch_size)
        check_count("max_pieces", self.max_pieces, MAX_PIECES, "word pieces of an open-vocabulary answer")
        check_count("beam", self.beam, MAX_BEAM, "partial answers kept per step")
        check_normalize(self.normalize)
        check_threshold(self.threshold)


class ProbeKeywords(TypedDict, total=False):
    """The fields of :class:`ProbeOptions`, as keyword arguments of :func:`mluke.probe`."""

    mode: Mode | None
    use_subject_entity: bool | None
    top_k: int
    normalize: Normalize
    exclude_subject: bool
    batch_size: int
    threshold: float | None
    max_pieces: int
    decoding: Decoding
    beam: int
    knowledge: bool


O = TypeVar("O", LinkOptions, ProbeOptions)


def merge_options(kind: type[O], options: O | None, keywords: Mapping[str, Any], caller: str) -> O:
    """``options``, or one made from ``keywords`` (the fields given as keyword arguments to ``caller``).

    Both at once is fine where they agree; a keyword whose value differs from the one in ``options``
    is a ``TypeError`` (which one should win?), and so is a keyword that is no field.
    """
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(keywords) - names)
    if unknown:
        raise TypeError(f"{caller}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}")
    if options is None:
        return kind(**keywords)
    if not isinstance(options, kind):
        raise TypeError(f"{caller}(options=...): expected a {kind.__name__}, got {type(options).__name__}")
    clash = sorted(k for k, v in keywords.items() if getattr(options, k) != v)
    if clash:
        given = ", ".join(f"{k}={keywords[k]!r}" for k in clash)
        raise TypeError(
            f"{caller}() got options= and {given}, which differ from the options' "
            f"({', '.join(f'{k}={getattr(options, k)!r}' for k in clash)}); "
            f"pass one of them (dataclasses.replace(options, ...) makes a changed copy)"
        )
    return options


#: The largest ``top_k``: more predictions per subject than any vocabulary has words or entities mean nothing.
MAX_TOP_K = 100_000
#: The longest open-vocabulary word answer, in word pieces, and the widest beam.
MAX_PIECES = 64
MAX_BEAM = 1_000


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_count(name: str, value: object, high: int | None = None, what: str = "") -> None:
    """An :class:`OptionError` naming the option ``name`` unless ``value`` is a whole number from 1 to ``high``."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= (high or value):
        return
    expected = f"a whole number from 1 to {high:,}" if high else "a whole number of at least 1"
    raise OptionError(
        f"{{{name}}}: expected {expected}" + (f" ({what})" if what else ""), options={name: option(name, value)}
    )


def check_nil_threshold(value: float | None) -> None:
    """A NIL threshold is a confidence in [0, 1] (or ``None``: the calibration's default)."""
    if value is not None and not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise OptionError(
            "{nil_threshold}: expected a confidence between 0 and 1 (mentions below it are NIL)",
            options={"nil_threshold": option("nil_threshold", value)},
        )


def check_methods(methods: Iterable[str], name: str = "method") -> tuple[str, ...]:
    """The linking methods asked for, each checked (in order, without repeats), or an error listing the valid
    ones that names the option ``name`` (``method``, or ``methods`` for a list)."""
    chosen = tuple(dict.fromkeys([methods] if isinstance(methods, str) else methods))
    bad = [m for m in chosen if m not in METHODS]
    if bad or not chosen:
        value = ",".join(bad) if bad else ""
        raise OptionError(
            f"{{method}}: expected {'one' if len(chosen) < 2 else 'a comma-separated list'} of {', '.join(METHODS)}",
            options={"method": option(name, value)},
        )
    return chosen


def check_threshold(threshold: float | None) -> None:
    """An error unless ``threshold`` (when given) is a probability in (0, 1]: 0 would answer with everything."""
    if threshold is not None and not (isinstance(threshold, (int, float)) and 0 < threshold <= 1):
        raise MlukeError(
            "{threshold}: expected a probability in (0, 1]", options={"threshold": option("threshold", threshold)}
        )


def check_normalize(normalize: str) -> None:
    """An error unless ``normalize`` is "candidates" or "vocabulary"."""
    if normalize not in ("candidates", "vocabulary"):
        raise MlukeError(
            "{normalize}: expected 'candidates' or 'vocabulary'", options={"normalize": option("normalize", normalize)}
        )
