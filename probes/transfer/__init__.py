"""Cross-lingual zero-shot transfer: NER and relation extraction with entity features (mLUKE-E) against
word features (mLUKE-W).

- :func:`finetune` / :func:`evaluate` — whole runs (what ``mluke finetune`` / ``mluke evaluate`` do),
  :class:`FineTuneReport`, :class:`TransferReport`; for QA :func:`finetune_qa` / :func:`evaluate_qa`
  (:class:`QaFineTuneReport`, :class:`QaReport` with the G-XLT matrix);
- QA data: :func:`read_squad`, :func:`read_xquad`, :func:`read_mlqa`, :func:`write_squad`; entity-linked input
  (:mod:`probes.transfer.qa_linking`); scores under the official SQuAD v1.1 or MLQA rules :func:`qa_scores`
  (:mod:`probes.transfer.qa_metrics`);
- :func:`read_ner` (CoNLL-2002/2003, WikiANN) and :func:`read_re` (KBP37, RELX) with their writers;
- :func:`ner_scores` (seqeval span F1) and :func:`re_scores` (macro F1 over relation types);
- :mod:`probes.transfer.miniature` and :mod:`probes.transfer.qa_miniature` — cross-lingual sets made from the
  embedded kb in 24 languages.

The models and the training loop are in :mod:`mluke.transfer`.
"""

from probes.transfer.metrics import ner_scores, re_scores
from probes.transfer.ner_data import NerDataset, NerSentence, read_ner, write_conll
from probes.transfer.qa_data import QaDataset, QaExample, read_mlqa, read_squad, read_xquad, write_squad
from probes.transfer.qa_metrics import qa_scores
from probes.transfer.qa_run import QaFineTuneReport, QaReport, evaluate_qa, finetune_qa
from probes.transfer.re_data import ReDataset, ReExample, read_re, write_kbp37
from probes.transfer.run import FineTuneReport, TransferReport, evaluate, finetune

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
