"""Miniature cross-lingual NER, RE, entity-typing and QA sets made from the embedded kb in 24 languages.

- :mod:`~probes.transfer.miniature.folder` — :func:`write_miniature` (the NER and RE sets and their manifest,
  what the sets are and how they are held out) and :func:`read_manifest`;
- :mod:`~probes.transfer.miniature.ner` / :mod:`~probes.transfer.miniature.relations` — :func:`make_ner`,
  :func:`make_re` and :func:`generate_ner`, :func:`generate_re` (with each example's pattern and entities);
- :mod:`~probes.transfer.miniature.sampling` — what both draw from: :data:`RELATIONS`, :class:`KbWorld`,
  :func:`heldout_entities`, :func:`pattern_split`;
- :mod:`~probes.transfer.miniature.patterns` — the sentence patterns (data) and their rendering;
- :mod:`~probes.transfer.miniature.typing` — the entity-typing sets (Open Entity layout):
  :func:`generate_typing`, :func:`make_typing`, :func:`write_typing_miniature`, their labels :data:`TYPING_LABELS`;
- :mod:`~probes.transfer.miniature.qa` — the QA sets (SQuAD layout), imported by its module path.
"""

from probes.transfer.miniature.folder import read_manifest, write_miniature
from probes.transfer.miniature.ner import generate_ner, make_ner
from probes.transfer.miniature.relations import generate_re, make_re
from probes.transfer.miniature.sampling import (
    NO_RELATION,
    RE_LABELS,
    RELATIONS,
    KbWorld,
    MiniatureSplit,
    heldout_entities,
    pattern_split,
)
from probes.transfer.miniature.typing import TYPING_LABELS, generate_typing, make_typing, write_typing_miniature

__all__ = [
    "NO_RELATION",
    "RELATIONS",
    "RE_LABELS",
    "TYPING_LABELS",
    "KbWorld",
    "MiniatureSplit",
    "generate_ner",
    "generate_re",
    "generate_typing",
    "heldout_entities",
    "make_ner",
    "make_re",
    "make_typing",
    "pattern_split",
    "read_manifest",
    "write_miniature",
    "write_typing_miniature",
]
