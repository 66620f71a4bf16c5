"""A KnowBert-style knowledge layer (Peters et al., 2019) for our encoders: a knowledge attention and
recontextualization layer with an integrated entity linker, inserted between two encoder layers."""

from mluke.knowbert.batch import IGNORE, SpanCandidates

__all__ = ["IGNORE", "SpanCandidates"]
