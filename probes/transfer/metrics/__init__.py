"""Scores of the transfer runs.

- :mod:`~probes.transfer.metrics.ner_re` — :func:`ner_scores` (seqeval span F1) and :func:`re_scores` (macro F1
  over relation types);
- :mod:`~probes.transfer.metrics.qa` — :func:`qa_scores` under the official SQuAD v1.1 or MLQA rules;
- :mod:`~probes.transfer.metrics.re_subsets` — RE scores on the seen and unseen facts of the miniature sets;
- :mod:`~probes.transfer.metrics.tacred` — :func:`tacred_scores`, TACRED's micro P/R/F1 over the positive
  relations (``no_relation`` excluded);
- :mod:`~probes.transfer.metrics.typing` — :func:`typing_scores`, loose micro P/R/F1 of entity typing (Open Entity);
- :mod:`~probes.transfer.metrics.record` — :func:`record_scores`, ReCoRD's EM and F1 (its official script's rules).
"""

from probes.transfer.metrics.ner_re import ner_scores, re_scores
from probes.transfer.metrics.qa import qa_scores
from probes.transfer.metrics.record import record_scores
from probes.transfer.metrics.tacred import tacred_scores
from probes.transfer.metrics.typing import typing_scores

__all__ = ["ner_scores", "qa_scores", "re_scores", "record_scores", "tacred_scores", "typing_scores"]
