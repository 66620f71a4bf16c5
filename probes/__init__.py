"""probes: cloze probing, cross-lingual transfer, retrieval and the analyses of the mLUKE paper.

Uses both :mod:`kb` and :mod:`mluke`; nothing imports ``probes`` back.
"""
