"""A KnowBert-style knowledge layer (Peters et al., 2019) for our encoders: a knowledge attention and
recontextualization layer with an integrated entity linker, inserted between two encoder layers."""

from mluke.knowbert.batch import IGNORE, SpanCandidates
from mluke.knowbert.candidates import CandidateSelector, SelectionStats, Window, collate
from mluke.knowbert.masking import MaskingOptions, MaskVocabulary, mask_window

__all__ = [
    "IGNORE",
    "CandidateSelector",
    "MaskVocabulary",
    "MaskingOptions",
    "SelectionStats",
    "SpanCandidates",
    "Window",
    "collate",
    "mask_window",
]
