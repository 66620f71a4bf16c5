"""Cross-lingual zero-shot transfer: NER, relation extraction and entity typing with entity features (mLUKE-E)
against word features (mLUKE-W), extractive QA and ReCoRD; the evaluation side (data sets, metrics, whole runs).

- :mod:`probes.transfer.runs` — :func:`finetune` / :func:`evaluate` (what ``mluke finetune`` / ``mluke evaluate``
  do), :class:`FineTuneReport`, :class:`TransferReport`; for QA :func:`finetune_qa` / :func:`evaluate_qa`
  (:class:`QaFineTuneReport`, :class:`QaReport` with the G-XLT matrix) and its entity-linked input
  (:mod:`probes.transfer.runs.qa_linking`); for ReCoRD :func:`finetune_record` / :func:`evaluate_record`
  (:class:`RecordReport`);
- :mod:`probes.transfer.readers` — :func:`read_ner` (CoNLL-2002/2003, WikiANN), :func:`read_re` (KBP37, RELX;
  TACRED: :func:`read_tacred`), :func:`read_squad`, :func:`read_xquad`, :func:`read_mlqa`, :func:`read_typing`
  (Open Entity), :func:`read_record` (ReCoRD), with their writers;
- :mod:`probes.transfer.metrics` — :func:`ner_scores` (seqeval span F1), :func:`re_scores` (macro F1 over
  relation types), :func:`qa_scores` (official SQuAD v1.1 or MLQA rules), :func:`typing_scores` (loose micro
  P/R/F1), :func:`tacred_scores` (TACRED's micro P/R/F1 over the positive relations), :func:`record_scores`
  (ReCoRD's official EM/F1);
- :mod:`probes.transfer.miniature` — cross-lingual NER, RE, typing, QA and ReCoRD sets made from the embedded kb in 24
  languages.

The models, inputs and the training loop are in :mod:`mluke.finetuning`.
"""

from probes.transfer import metrics, readers, runs
from probes.transfer.metrics import *  # noqa: F403  (the names listed in its __all__)
from probes.transfer.readers import *  # noqa: F403
from probes.transfer.runs import *  # noqa: F403

# The names of each room's own ``__all__``, listed there once.
__all__: list[str] = []
__all__ += metrics.__all__
__all__ += readers.__all__
__all__ += runs.__all__
