"""The :class:`Linker`: a model, a kb and a mention index, ready to link many texts (see :mod:`mluke.linking.texts`)."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast, overload

from tqdm import tqdm

from kb import open_db
from kb.db import EntityDB
from kb.errors import MlukeError
from kb.languages import check_language
from kb.mentions import Mention, MentionIndex
from kb.mentions.linkability import LinkEstimator
from kb.mentions.places import PlaceContext
from kb.renamed import renamed_keyword
from mluke.linking.calibration import DEFAULT_CALIBRATION, Calibration
from mluke.linking.coherence import KbCoherence, Support
from mluke.linking.confidence import ConfidenceMixin, text_list
from mluke.linking.lookups import KbLookupMixin
from mluke.linking.scoring import ModelScores, WindowScorer, cut_windows, rank_candidates, restricted
from mluke.linking.streams import StreamMixin, ignore_progress
from mluke.models.checkpoint import Mluke
from mluke.models.normaliser import Normaliser
from mluke.opening import open_model
from mluke.options import LinkOptions, merge_options
from mluke.results import LinkedMention

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.models.devices import Device, DType
    from mluke.options import LinkKeywords


class Linker(KbLookupMixin, StreamMixin, ConfidenceMixin):
    """A model, a kb and a mention index, ready to link many texts (see :mod:`mluke.linking.texts`).

    Args:
        model: a loaded :func:`mluke.load` bundle, or a checkpoint folder or hub name; default: the
            embedded demo model (trained on first use).
        db: an :class:`kb.EntityDB` or the path of one; default: the embedded kb (``kb=``: deprecated).
        index: a :class:`kb.mentions.MentionIndex` to detect mentions with; default: one over ``db``.
        languages: the languages the default index covers (default: all of the kb's).
        device: where the model runs (``"auto"``, ``"cuda"``, ...; see :mod:`mluke.models.devices`).
        dtype: the precision it runs in (``"bf16"``, ...).
        calibration: maps a mention's scores to a confidence (:mod:`mluke.linking.calibration`).
        normaliser: how the confidence's normaliser over the whole entity vocabulary is computed: "int8"
            (default; on a CPU, from an int8 copy of the entity table, several times faster, log-probabilities
            within about 1e-3 nats, :mod:`mluke.models.normaliser`) or "exact" (float32).

    Raises:
        MlukeError: a model without an entity vocabulary (when linking), a missing kb, a bad checkpoint.
    """

    @renamed_keyword("kb", "db")
    def __init__(
        self,
        model: Mluke | str | os.PathLike[str] | None = None,
        db: EntityDB | str | os.PathLike[str] | None = None,
        *,
        index: MentionIndex | None = None,
        languages: list[str] | None = None,
        device: Device = None,
        dtype: DType = None,
        calibration: Calibration | None = None,
        normaliser: Normaliser = "int8",
    ) -> None:
        self.db = open_db(os.fspath(db) if isinstance(db, os.PathLike) else db)
        self.bundle = open_model(model, device=device, dtype=dtype)
        self.scorer = WindowScorer(self.bundle, normaliser)
        self.index = index if index is not None else MentionIndex.for_db(self.db, languages=languages)
        #: Maps a mention's scores to the probability that its top candidate is right
        #: (:mod:`mluke.linking.calibration`).
        self.calibration = calibration if calibration is not None else DEFAULT_CALIBRATION
        self.estimator = LinkEstimator(self.db)
        self.coherence = KbCoherence(self.db)
        self.places = PlaceContext(self.db)
        #: qualified names of each group of candidates, and the title of each top candidate, by language
        self._name_cache: dict[tuple[tuple[str, ...], str], dict[str, str]] = {}
        self._title_cache: dict[tuple[str, str], str | None] = {}
        #: qualified names of one mention's candidates (a :class:`KnowBertLinker` has its own)
        self._names: Callable[[tuple[str, ...], str], dict[str, str]] = self._cached_names

    @overload
    def link(
        self,
        texts: str,
        lang: str,
        *,
        options: LinkOptions | None = ...,
        spans: list[tuple[int, int]] | None = ...,
        progress: bool = ...,
        **keywords: Unpack[LinkKeywords],
    ) -> list[LinkedMention]: ...

    @overload
    def link(
        self,
        texts: list[str],
        lang: str,
        *,
        options: LinkOptions | None = ...,
        spans: list[list[tuple[int, int]]] | None = ...,
        progress: bool = ...,
        **keywords: Unpack[LinkKeywords],
    ) -> list[list[LinkedMention]]: ...

    @overload
    def link(
        self,
        texts: str | list[str],
        lang: str,
        *,
        options: LinkOptions | None = ...,
        spans: list[tuple[int, int]] | list[list[tuple[int, int]]] | None = ...,
        progress: bool = ...,
        **keywords: Unpack[LinkKeywords],
    ) -> list[LinkedMention] | list[list[LinkedMention]]: ...

    def link(
        self,
        texts: str | list[str],
        lang: str,
        *,
        options: LinkOptions | None = None,
        spans: list[tuple[int, int]] | list[list[tuple[int, int]]] | None = None,
        progress: bool = False,
        **keywords: Unpack[LinkKeywords],
    ) -> list[LinkedMention] | list[list[LinkedMention]]:
        """Link one text or a list of texts (see :func:`mluke.link`).

        Args:
            texts: a text, or a list of texts.
            lang: their language (one of the kb's).
            options: how to link; or give its fields as keywords (``method="prior"``, ...).
            spans: link these character spans (gold mentions) instead of the detected ones, one list per
                text (one list for one text); a span whose surface the kb does not know comes back NIL.
            progress: a progress bar over the text windows the model reads, when there are several batches.
            **keywords: the fields of :class:`LinkOptions`, when ``options`` is not given.

        Returns:
            The text's :class:`LinkedMention` list (a list of them for a list of texts).

        Raises:
            TextInputError: something else than a text or a list of texts.
            OptionError: a bad option, or a language the kb lacks.
            TypeError: ``options`` and a keyword that differs from it.
        """
        single = isinstance(texts, str)
        batch = [texts] if isinstance(texts, str) else text_list(texts)
        check_language(lang, self.db.languages)
        options = merge_options(LinkOptions, options, keywords, "Linker.link")
        if spans is None:
            mentions = self.index.detect_batch(batch, lang)
        else:
            given = cast("list[list[tuple[int, int]]]", [spans] if single else list(spans))
            if len(given) != len(batch):
                raise MlukeError(f"spans: {len(given)} lists for {len(batch)} texts; give one list of spans per text")
            mentions = [self.index.mentions_at(t, s, lang, row=i) for i, (t, s) in enumerate(zip(batch, given))]
        results = self._resolve(batch, mentions, lang, options, progress)
        return results[0] if single else results

    def link_iter(
        self,
        texts: Iterable[str],
        lang: str,
        *,
        options: LinkOptions | None = None,
        advance: Callable[[int], object] | None = None,
        **keywords: Unpack[LinkKeywords],
    ) -> Iterator[tuple[str, Iterable[LinkedMention]]]:
        """:meth:`link` over a stream of texts, in memory that does not grow with it.

        Texts are read and linked ``options.chunk_texts`` at a time (and at most ``chunk_chars``
        characters); their mentions come as lists. A text longer than ``chunk_chars`` is linked on its
        own, ``segment_windows`` windows at a time, and its mentions come as an iterator that links it as
        it is read (once; it holds one segment's mentions at a time). The results are those of
        :meth:`link` on the same texts (up to the last bits of float32 scores, see :mod:`mluke.linking.texts`).

        Args:
            texts: any iterable of texts, read as the stream is consumed.
            lang: their language (one of the kb's).
            options: how to link; or give its fields as keywords.
            advance: called with the number of characters of each chunk or segment done (a progress
                bar's ``update``).
            **keywords: the fields of :class:`LinkOptions`, when ``options`` is not given.

        Returns:
            ``(text, mentions)`` per text, in order, as soon as its chunk is linked.

        Raises:
            OptionError: a bad option or language, at once.
            TextInputError: an item that is not a text, when it is reached.
        """
        check_language(lang, self.db.languages)
        options = merge_options(LinkOptions, options, keywords, "Linker.link_iter")
        return self._stream(iter(texts), lang, options, advance or ignore_progress)

    def link_mentions(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        lang: str,
        *,
        options: LinkOptions | None = None,
        **keywords: Unpack[LinkKeywords],
    ) -> list[list[LinkedMention]]:
        """Link given mentions, candidates as they are: a caller may narrow them (e.g. drop an entity to see
        what linking does when the kb lacks it).

        Args:
            texts: the texts.
            mentions: one list of :class:`kb.mentions.Mention` per text.
            lang: their language (one of the kb's).
            options: how to link; or give its fields as keywords.
            **keywords: the fields of :class:`LinkOptions`, when ``options`` is not given.

        Returns:
            One list of :class:`LinkedMention` per text, in the order of ``mentions``.
        """
        check_language(lang, self.db.languages)
        options = merge_options(LinkOptions, options, keywords, "Linker.link_mentions")
        return self._resolve(text_list(texts), [list(m) for m in mentions], lang, options)

    def _resolve(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        lang: str,
        options: LinkOptions,
        progress: bool = False,
        windows: list[list[tuple[int, int]]] | None = None,
    ) -> list[list[LinkedMention]]:
        """Score and decide the detected (or given) ``mentions`` of ``texts``; ``windows``: each text's
        windows to encode (default: all of it, cut every ``window_chars`` characters)."""
        if options.method == "knowbert":  # a KnowBertLinker (mluke.linking.knowbert) overrides this method
            raise MlukeError("method 'knowbert' needs a KnowBert model folder ('mluke knowbert train' makes one)")
        mentions, scores, support = self._scored(texts, mentions, lang, options, progress, windows)
        ranked = [
            [
                rank_candidates(m.candidates, restricted(scores.get((t, i))), options.method, options.prior_weight)
                for i, m in enumerate(found)
            ]
            for t, found in enumerate(mentions)
        ]
        every = [rows for text in ranked for rows in text if rows]
        self._prefetch([tuple(r["key"] for r in rows) for rows in every], [rows[0]["key"] for rows in every], lang)
        return [
            [
                self._decide(m, scores.get((t, i)), support[(t, i)], lang, options, ranked[t][i])
                for i, m in enumerate(found)
            ]
            for t, found in enumerate(mentions)
        ]

    def _scored(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        lang: str,
        options: LinkOptions,
        progress: bool = False,
        windows: list[list[tuple[int, int]]] | None = None,
        exclude: dict[int, list[int]] | None = None,
    ) -> tuple[list[list[Mention]], dict[tuple[int, int], ModelScores], dict[tuple[int, int], Support]]:
        """The mentions, places written with their region or country narrowed (:mod:`kb.mentions.places`), with
        their link probabilities filled in (:class:`kb.mentions.linkability.LinkEstimator`), the model's scores
        of each (none for ``method="prior"``) and their kb support (:mod:`mluke.linking.coherence`)."""
        mentions = [
            self.estimator.fill(
                texts[t],
                self.places.narrow(
                    texts[t],
                    found,
                    lang,
                    windows[t] if windows is not None else cut_windows(texts[t], options.window_chars),
                ),
                lang,
            )
            for t, found in enumerate(mentions)
        ]
        support = self._support(texts, mentions, options, windows)
        scores: dict[tuple[int, int], ModelScores] = {}
        if options.method != "prior":
            ids = self.scorer.candidate_ids(mentions)
            jobs = self.scorer.jobs(texts, mentions, ids, options.window_chars, windows)
            with tqdm(
                total=len(jobs),
                desc="linking",
                unit="windows",
                disable=not progress or len(jobs) <= options.batch_size,
                mininterval=0.5,
                dynamic_ncols=True,
            ) as bar:
                sure = self._sure(options.nil_threshold, mentions, support) if options.method == "global" else None
                scores = self.scorer.score(texts, mentions, ids, jobs, options, bar, sure, exclude)
        return mentions, scores, support

    def _support(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        options: LinkOptions,
        windows: list[list[tuple[int, int]]] | None,
    ) -> dict[tuple[int, int], Support]:
        """kb coherence (:mod:`mluke.linking.coherence`) of each mention among the mentions of its window (the
        one its start is in): the context the model reads, and the same whether a text is linked at once or
        streamed in segments."""
        out: dict[tuple[int, int], Support] = {}
        self.coherence.prefetch([c.key for found in mentions for m in found for c in m.candidates])
        for t, found in enumerate(mentions):
            spans = windows[t] if windows is not None else cut_windows(texts[t], options.window_chars)
            starts = [a for a, _ in spans]
            groups: dict[int, list[int]] = {}
            for i, m in enumerate(found):
                groups.setdefault(bisect_right(starts, m.start), []).append(i)
            for idx in groups.values():
                out.update(zip(((t, i) for i in idx), self.coherence.support([found[i] for i in idx])))
        return out

    def _threshold(self, nil_threshold: float | None) -> float:
        return self.calibration.threshold if nil_threshold is None else nil_threshold

    def _sure(
        self, nil_threshold: float | None, mentions: list[list[Mention]], support: dict[tuple[int, int], Support]
    ) -> Callable[[tuple[int, int], list[dict[str, Any]], ModelScores], bool]:
        """Whether a mention the global method resolved is linked: its confidence reaches the NIL threshold."""
        threshold = self._threshold(nil_threshold)

        def sure(key: tuple[int, int], rows: list[dict[str, Any]], found: ModelScores) -> bool:
            return self._confidence(mentions[key[0]][key[1]], rows, found, support[key]) >= threshold

        return sure

    def _decide(
        self,
        m: Mention,
        model_scores: ModelScores | None,
        support: Support,
        lang: str,
        options: LinkOptions,
        rows: list[dict[str, Any]],
    ) -> LinkedMention:
        """``m`` as a :class:`LinkedMention`, from its candidates ranked by :func:`rank_candidates` (``rows``)."""
        method = options.method
        best = rows[0] if rows else None
        confidence = self._confidence(m, rows, model_scores if method != "prior" else None, support)
        nil = best is None or confidence < self._threshold(options.nil_threshold)
        names = self._names(tuple(r["key"] for r in rows), lang) if rows else {}
        key = best["key"] if best else None
        title = self._title(key, lang) if key is not None else None
        if options.candidates:
            for r in rows:
                r["name"] = names.get(r["key"])
        return LinkedMention(
            m.start,
            m.end,
            m.surface,
            None if nil else key,
            names.get(key) if key else None,
            title,
            confidence,
            best["score"] if best else float("-inf"),
            best["prior"] if best else 0.0,
            m.link_probability,
            nil,
            rows if options.candidates else None,
        )
