"""The confidence side of :class:`mluke.Linker`: the calibration features of a scored mention
(:func:`mluke.linking.calibration.features`) and the confidence they give, for linking and for fitting a calibration."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kb.errors import TextInputError
from kb.mentions import Mention
from mluke.linking.calibration import Calibration, features
from mluke.linking.coherence import Support
from mluke.linking.scoring import ModelScores, rank_candidates, restricted
from mluke.options import LinkOptions

if TYPE_CHECKING:
    from mluke.models.checkpoint import Mluke


class ConfidenceMixin:
    """Features and confidence of linked mentions; mixed into :class:`mluke.Linker`, which provides the
    model bundle, the calibration and the scoring (``_scored``)."""

    bundle: Mluke
    calibration: Calibration

    #: scores mentions: (mentions with link probabilities, model scores, kb support); the Linker's method
    _scored: Callable[
        ..., tuple[list[list[Mention]], dict[tuple[int, int], ModelScores], dict[tuple[int, int], Support]]
    ]

    def mention_features(
        self,
        texts: list[str],
        mentions: list[list[Mention]],
        lang: str,
        options: LinkOptions | None = None,
        *,
        missing: Sequence[Iterable[str]] | None = None,
    ) -> list[list[tuple[str | None, float, list[float]]]]:
        """What :attr:`calibration` maps to a confidence, per mention; for fitting one
        (:mod:`probes.linking_calibration`).

        Args:
            texts: the texts.
            mentions: one list of :class:`kb.mentions.Mention` per text.
            lang: their language.
            options: how to score (``method``, ``prior_weight``, ...; default: :class:`LinkOptions`'s defaults).
            missing: per text, entity keys to treat as missing from the kb: left out of the model's
                normaliser and best entity over the vocabulary (the caller leaves them out of the candidates).

        Returns:
            Per mention: (top candidate, link probability, :func:`mluke.linking.calibration.features`).
        """
        options = options or LinkOptions()
        method = options.method
        exclude = None
        if missing is not None and self.bundle.entity_vocab is not None:
            vocab = self.bundle.entity_vocab
            exclude = {
                t: [v for v in vocab.ids_of_keys(sorted(keys)) if v is not None] for t, keys in enumerate(missing)
            }
        mentions, scores, support = self._scored(
            text_list(texts), [list(m) for m in mentions], lang, options, exclude=exclude
        )
        out = []
        for t, found in enumerate(mentions):
            row: list[tuple[str | None, float, list[float]]] = []
            for i, m in enumerate(found):
                ranked = rank_candidates(m.candidates, restricted(scores.get((t, i))), method, options.prior_weight)
                if not ranked:
                    row.append((None, m.link_probability or 0.0, []))
                    continue
                ms = scores.get((t, i)) if method != "prior" else None
                lp = 1.0 if m.link_probability is None else m.link_probability
                row.append((ranked[0]["key"], lp, self._features(ranked, ms, support[(t, i)])))
            out.append(row)
        return out

    def _features(self, rows: list[dict[str, Any]], scores: ModelScores | None, support: Support) -> list[float]:
        """:func:`mluke.linking.calibration.features` of a mention whose candidates ``rows`` are ranked best first."""
        top = rows[0]["key"]
        full = scores.full.get(top) if scores is not None else None
        vocab = self.bundle.entity_vocab
        best = scores.best if scores else None
        return features(rows, full, len(vocab) if vocab is not None else 1, best, support.get(top, 0.0))

    def _confidence(
        self, m: Mention, rows: list[dict[str, Any]], model_scores: ModelScores | None, support: Support
    ) -> float:
        """Link probability x calibrated probability that the top of ``rows`` is right
        (:mod:`mluke.linking.calibration`)."""
        if not rows:
            return 0.0
        lp = 1.0 if m.link_probability is None else m.link_probability
        return lp * self.calibration.probability(self._features(rows, model_scores, support))


def text_list(texts: Any) -> list[str]:
    """``texts`` as a list of strings, or a :class:`TextInputError` saying what linking takes."""
    what = "link() takes a text (str) or a list of texts"
    if texts is None or isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TextInputError(f"{what}; got {type(texts).__name__}")
    batch = list(texts)
    bad = next((i for i, t in enumerate(batch) if not isinstance(t, str)), None)
    if bad is not None:
        raise TextInputError(f"{what}; item {bad} is {type(batch[bad]).__name__}")
    return batch
