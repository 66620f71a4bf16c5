"""Mentions: find a kb's names in text and propose entities for each (the candidate selector of entity
linking).

- ``index``: :class:`MentionIndex` (compiled per language, saved as one SQLite file) and :class:`Mention`;
- ``candidates``: :class:`CandidateGenerator` and its sources :class:`AnchorCandidates`,
  :class:`NameCandidates`, :class:`CombinedCandidates`, giving :class:`Candidate` entities with a prior;
- ``surfaces``: the normalised form names and text are compared in (:func:`surface_key`), the script
  rules and the cutting of text into matching units;
- ``units``: the numpy side of batch detection (unit fingerprints and look-up tables).
"""

from kb.mentions.candidates import (
    AnchorCandidates,
    Candidate,
    CandidateGenerator,
    CombinedCandidates,
    NameCandidates,
    SurfaceSource,
)
from kb.mentions.index import Mention, MentionIndex
from kb.mentions.surfaces import surface_key

__all__ = [
    "AnchorCandidates",
    "Candidate",
    "CandidateGenerator",
    "CombinedCandidates",
    "Mention",
    "MentionIndex",
    "NameCandidates",
    "SurfaceSource",
    "surface_key",
]
