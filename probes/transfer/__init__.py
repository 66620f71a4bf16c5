"""Cross-lingual zero-shot transfer: NER and relation extraction with entity features (mLUKE-E) against
word features (mLUKE-W).

- :func:`finetune` / :func:`evaluate` — whole runs (what ``mluke finetune`` / ``mluke evaluate`` do),
  :class:`FineTuneReport`, :class:`TransferReport`;
- :func:`read_ner` (CoNLL-2002/2003, WikiANN) and :func:`read_re` (KBP37, RELX) with their writers;
- :func:`ner_scores` (seqeval span F1) and :func:`re_scores` (macro F1 over relation types);
- :mod:`probes.transfer.miniature` — cross-lingual sets made from the embedded kb in 24 languages.

The models and the training loop are in :mod:`mluke.transfer`.
"""

from probes.transfer.metrics import ner_scores, re_scores
from probes.transfer.ner_data import NerDataset, NerSentence, read_ner, write_conll
from probes.transfer.re_data import ReDataset, ReExample, read_re, write_kbp37
from probes.transfer.run import FineTuneReport, TransferReport, evaluate, finetune

__all__ = ["FineTuneReport", "NerDataset", "NerSentence", "ReDataset", "ReExample", "TransferReport", "evaluate",
           "finetune", "ner_scores", "re_scores", "read_ner", "read_re", "write_conll", "write_kbp37"]
