"""Whole transfer runs: fine-tune on English, evaluate in every language (what ``mluke finetune`` /
``mluke evaluate`` do).

- :mod:`~probes.transfer.runs.ner_re` — :func:`finetune` / :func:`evaluate` for NER, relation extraction and
  entity typing;
- :mod:`~probes.transfer.runs.qa` — :func:`finetune_qa` / :func:`evaluate_qa` for extractive QA, with the
  entity-linked input of :mod:`~probes.transfer.runs.qa_linking` and the reports of
  :mod:`~probes.transfer.runs.qa_reports`;
- :mod:`~probes.transfer.runs.record` — :func:`finetune_record` / :func:`evaluate_record` for ReCoRD
  (:class:`RecordReport`).
"""

from probes.transfer.runs.ner_re import FineTuneReport, TransferReport, evaluate, finetune
from probes.transfer.runs.qa import evaluate_qa, finetune_qa
from probes.transfer.runs.qa_reports import QaFineTuneReport, QaReport
from probes.transfer.runs.record import RecordReport, evaluate_record, finetune_record

__all__ = [
    "FineTuneReport",
    "QaFineTuneReport",
    "QaReport",
    "RecordReport",
    "TransferReport",
    "evaluate",
    "evaluate_qa",
    "evaluate_record",
    "finetune",
    "finetune_qa",
    "finetune_record",
]
