"""Mentions: find a kb's names in text and propose entities for each (the candidate selector of entity
linking).

- ``index``: :class:`MentionIndex` (compiled per language, saved as one SQLite file) and :class:`Mention`;
- ``candidates``: :class:`CandidateGenerator`, :class:`CombinedCandidates`, giving :class:`Candidate`
  entities with a prior; ``db_candidates``: the sources :class:`AnchorCandidates` and
  :class:`NameCandidates` of an entity database, mixed by :func:`~kb.mentions.db_candidates.default_source`;
- ``surfaces``: the normalised form names and text are compared in (:func:`surface_key`), the script
  rules and the cutting of text into matching units;
- ``units``: the numpy side of batch detection (unit fingerprints and look-up tables).
"""

from kb.mentions.candidates import (
    Candidate,
    CandidateGenerator,
    CombinedCandidates,
    SurfaceSource,
)
from kb.mentions.compiled import Mention
from kb.mentions.db_candidates import AnchorCandidates, NameCandidates
from kb.mentions.index import MentionIndex
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
