"""Cross-lingual zero-shot transfer: NER and relation extraction with entity features (mLUKE-E) against
word features (mLUKE-W), and extractive QA; the evaluation side (data sets, metrics, whole runs).

- :mod:`probes.transfer.runs` — :func:`finetune` / :func:`evaluate` (what ``mluke finetune`` / ``mluke evaluate``
  do), :class:`FineTuneReport`, :class:`TransferReport`; for QA :func:`finetune_qa` / :func:`evaluate_qa`
  (:class:`QaFineTuneReport`, :class:`QaReport` with the G-XLT matrix) and its entity-linked input
  (:mod:`probes.transfer.runs.qa_linking`);
- :mod:`probes.transfer.readers` — :func:`read_ner` (CoNLL-2002/2003, WikiANN), :func:`read_re` (KBP37, RELX),
  :func:`read_squad`, :func:`read_xquad`, :func:`read_mlqa`, with their writers;
- :mod:`probes.transfer.metrics` — :func:`ner_scores` (seqeval span F1), :func:`re_scores` (macro F1 over
  relation types), :func:`qa_scores` (official SQuAD v1.1 or MLQA rules);
- :mod:`probes.transfer.miniature` — cross-lingual NER, RE and QA sets made from the embedded kb in 24
  languages.

The models, inputs and the training loop are in :mod:`mluke.finetuning`.
"""

from probes.transfer.metrics import ner_scores, qa_scores, re_scores
from probes.transfer.readers import (
    NerDataset,
    NerSentence,
    QaDataset,
    QaExample,
    ReDataset,
    ReExample,
    read_mlqa,
    read_ner,
    read_re,
    read_squad,
    read_xquad,
    write_conll,
    write_kbp37,
    write_squad,
)
from probes.transfer.runs import (
    FineTuneReport,
    QaFineTuneReport,
    QaReport,
    TransferReport,
    evaluate,
    evaluate_qa,
    finetune,
    finetune_qa,
)

__all__ = [
    "FineTuneReport",
    "NerDataset",
    "NerSentence",
    "QaDataset",
    "QaExample",
    "QaFineTuneReport",
    "QaReport",
    "ReDataset",
    "ReExample",
    "TransferReport",
    "evaluate",
    "evaluate_qa",
    "finetune",
    "finetune_qa",
    "ner_scores",
    "qa_scores",
    "re_scores",
    "read_mlqa",
    "read_ner",
    "read_re",
    "read_squad",
    "read_xquad",
    "write_conll",
    "write_kbp37",
    "write_squad",
]
