"""Fine-tuning mLUKE for cross-lingual transfer: span NER, relation classification, entity typing, ReCoRD and
extractive QA with entity features (mLUKE-E) or word features (mLUKE-W). (Called ``mluke.transfer`` before 0.2.)

- :func:`new_model` / :class:`TransferModel` — the heads on the mLUKE encoder (``models``);
- :class:`FineTuner` / :class:`FineTuneConfig` — the seeded, resumable training loop (``training``);
- :func:`save_transfer` / :func:`load_transfer` — checkpoints in the hub layout with their labels;
- :func:`predict_spans` / :func:`predict_relations` / :func:`predict_types` / :func:`predict_record` — predictions
  (``predict``);
- ``inputs`` — span enumeration, marked pairs, typing mentions and batch tensors;
- ``qa`` — QA windows, answer positions and span decoding;
- ``record`` — ReCoRD rows (query + passage, the placeholder and every mention as slots) and what they cut off;
- :func:`open_knowbert_bundle` / :func:`attach_knowledge` — knowledge-enhanced word features (``features="knowbert"``,
  ``knowledge``).

Readers of the datasets, metrics and whole runs (what ``mluke finetune`` / ``mluke evaluate`` do) are in
:mod:`probes.transfer`.
"""

from mluke.finetuning.checkpoint import load_transfer, save_transfer
from mluke.finetuning.knowledge import attach_knowledge, open_knowbert_bundle
from mluke.finetuning.models import TransferModel, new_model
from mluke.finetuning.predict import decode_spans, predict_record, predict_relations, predict_spans, predict_types
from mluke.finetuning.training import FineTuneConfig, FineTuner

__all__ = [
    "FineTuneConfig",
    "FineTuner",
    "TransferModel",
    "attach_knowledge",
    "decode_spans",
    "load_transfer",
    "new_model",
    "open_knowbert_bundle",
    "predict_record",
    "predict_relations",
    "predict_spans",
    "predict_types",
    "save_transfer",
]
