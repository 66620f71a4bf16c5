"""Whole transfer runs: fine-tune on English, evaluate in every language (what ``mluke finetune`` /
``mluke evaluate`` do).

- :mod:`~probes.transfer.runs.ner_re` — :func:`finetune` / :func:`evaluate` for NER, relation extraction and
  entity typing;
- :mod:`~probes.transfer.runs.qa` — :func:`finetune_qa` / :func:`evaluate_qa` for extractive QA, with the
  entity-linked input of :mod:`~probes.transfer.runs.qa_linking` and the reports of
  :mod:`~probes.transfer.runs.qa_reports`.
"""

from probes.transfer.runs.ner_re import FineTuneReport, TransferReport, evaluate, finetune
from probes.transfer.runs.qa import evaluate_qa, finetune_qa
from probes.transfer.runs.qa_reports import QaFineTuneReport, QaReport

__all__ = [
    "FineTuneReport",
    "QaFineTuneReport",
    "QaReport",
    "TransferReport",
    "evaluate",
    "evaluate_qa",
    "finetune",
    "finetune_qa",
]
