"""``mluke.link``: entity linking in any of the kb's languages, to the shared entity inventory.

1. Mentions and candidates come from :class:`kb.MentionIndex` (longest
   non-overlapping matches of the kb's surface forms, link-probability filter,
   top 30 candidates by prior p(e|m)).
2. Each mention gets an entity [MASK] over its words; the model scores the
   candidates with the MEP head restricted to them (softmax over the candidates
   in the entity vocabulary), and the score is combined with the prior:
   ``log p_model(e) + prior_weight * log p(e|m)``. Of n candidates, k in the
   entity vocabulary, each of the others gets the uniform model probability
   1/n and the k known ones share the remaining k/n by their MEP softmax, so
   the model's probabilities sum to one. ``method="prior"`` or ``"model"``
   uses one side only.
   ``method="global"`` follows Yamada et al. (2022): all mentions start as
   entity [MASK]s; at each step the most confident one (softmax of the combined
   scores over its candidates) is resolved and its entity becomes an input
   entity for the remaining ones, one forward pass per step.
3. Every mention gets a confidence in [0, 1] (:mod:`mluke.linking.calibration`): its link
   probability (the kb's anchor statistic, or the estimate of
   :mod:`kb.mentions.linkability` where the kb has none) times the calibrated
   probability that its top candidate is right. A mention whose confidence is
   below ``nil_threshold`` (default: the calibration's, 0.5 or as fitted), or that
   has no candidate, is NIL, even with a single candidate.
   ``method="knowbert"`` lets a KnowBert model's integrated linker decide instead, NULL included
   (:mod:`mluke.linking.knowbert`).
4. Entities are shown by a qualified name (:func:`kb.entities.qualified_names`):
   "Cambridge (United Kingdom)" vs "Cambridge (Canada)".

Long texts are cut into windows of about ``window_chars`` characters at spaces
or sentence ends; every window is encoded once with all its mentions.

Streams (:meth:`Linker.link_iter`, :func:`mluke.linking.files.iter_link_file`, what ``mluke link``
runs) link a few hundred texts at a time and hand each text's mentions on as soon
as they are decided, so memory stays flat however long the input: a text longer
than ``chunk_chars`` is linked in segments of ``segment_windows`` windows (its
mentions detected chunk by chunk, :meth:`kb.mentions.MentionIndex.iter_detect`),
with the same windows and mentions as one :meth:`Linker.link` call, hence the same
results (scores may differ in the last bits of float32: a batch pads its windows
to its longest, and other batches hold other windows).

Where things are: the options (:class:`mluke.LinkOptions`) in :mod:`mluke.options`, the
:class:`mluke.Linker` in :mod:`mluke.linking.linker`, the model's scoring and the ranking of candidates in
:mod:`mluke.linking.scoring`, files and streams in :mod:`mluke.linking.files`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kb.db import EntityDB
from kb.renamed import renamed_keyword
from mluke.models.checkpoint import Mluke
from mluke.options import LinkOptions, merge_options
from mluke.results import LinkedMention

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is Python 3.11+; only type checkers read this

    from mluke.models.devices import Device, DType
    from mluke.options import LinkKeywords


@renamed_keyword("kb", "db")
def link(
    texts: str | list[str],
    lang: str,
    *,
    db: EntityDB | str | os.PathLike[str] | None = None,
    model: Mluke | str | os.PathLike[str] | None = None,
    options: LinkOptions | None = None,
    spans: list[tuple[int, int]] | list[list[tuple[int, int]]] | None = None,
    device: Device = None,
    dtype: DType = None,
    kbs: Mapping[str, EntityDB | str | os.PathLike[str] | None] | None = None,
    **keywords: Unpack[LinkKeywords],
) -> list[LinkedMention] | list[list[LinkedMention]]:
    """Link the entity mentions of one text (or a list of texts) in ``lang`` to kb entities.

    The linker it builds (model, kb, mention index) is kept for the next call with the same model, kb file,
    language, device, dtype and kind of linker (:mod:`mluke.reuse`: at most a few, a rebuilt kb or retrained
    model is never served stale; ``mluke.clear_cache()`` forgets them), so a loop of small calls loads once.
    To hold one explicitly, build a :class:`mluke.Linker` (``method="knowbert"``: a :class:`mluke.KnowBertLinker`).

    Args:
        texts: a text, or a list of texts.
        lang: their language (one of the kb's).
        db: an :class:`kb.EntityDB` or the path of one; default: the embedded kb (``kb=``: deprecated).
        model: a loaded :func:`mluke.load` bundle, or a checkpoint folder or hub name; default: the
            embedded demo model, like :func:`mluke.probe`; for ``method="knowbert"``, a KnowBert model
            folder (``mluke knowbert train``'s ``RUN/model``, :mod:`mluke.linking.knowbert`).
        options: how to link (:class:`mluke.LinkOptions`: ``method`` "combined", "prior", "model",
            "global" or "knowbert", ``prior_weight``, ``nil_threshold``, ``candidates``, ...); or give its
            fields as keywords (``method="prior"``).
        spans: link these character spans instead of detecting mentions (one list per text).
        device: where the model runs (:mod:`mluke.models.devices`).
        dtype: the precision it runs in.
        kbs: ``method="knowbert"``: the kb of knowledge bases by name (:func:`mluke.knowbert.kb_dbs`).
        **keywords: the fields of :class:`mluke.LinkOptions`, when ``options`` is not given.

    Returns:
        Per text, :class:`mluke.LinkedMention` objects (character span, surface, entity key, titles,
        score, prior, NIL flag, and with ``candidates=True`` every candidate's scores); for one text,
        its list.

    Raises:
        OptionError: a bad option, or a language the kb lacks.
        TextInputError: something else than a text or a list of texts.
        TypeError: ``options`` and a keyword that differs from it.
    """
    from mluke.linking.knowbert import open_linker
    from mluke.reuse import BUILT, db_identity, dbs_identity, model_identity

    options = merge_options(LinkOptions, options, keywords, "link")
    key = (
        "link",
        model_identity(model),
        db_identity(db),
        options.method == "knowbert",
        options.knowledge_base,
        lang,
        str(device),
        str(dtype),
        dbs_identity(kbs),
    )
    linker = BUILT.get(
        key, lambda: open_linker(model, db, options, languages=[lang], device=device, dtype=dtype, kbs=kbs)
    )
    return linker.link(texts, lang, options=options, spans=spans)
