"""A KnowBert-style knowledge layer (Peters et al., 2019) for our encoders: a knowledge attention and
recontextualization layer with an integrated entity linker, inserted between two encoder layers."""

from mluke.knowbert.batch import IGNORE, SpanCandidates
from mluke.knowbert.candidates import CandidateSelector, SelectionStats, Window, collate

__all__ = ["IGNORE", "CandidateSelector", "SelectionStats", "SpanCandidates", "Window", "collate"]
