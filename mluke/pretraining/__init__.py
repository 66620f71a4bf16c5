"""Pretraining mLUKE: corpus building, masking, language sampling, the two-stage trainer.

Public names: :class:`TrainConfig`, :func:`pretrain`, :class:`Trainer`,
:func:`build_corpus`, :func:`build_wiki_corpus`, :class:`Corpus`, :class:`Document`, :func:`init_from_xlmr`.
"""

from mluke.pretraining.config import TrainConfig
from mluke.pretraining.corpus import Document, build_corpus, build_wiki_corpus
from mluke.pretraining.corpus_reader import Corpus
from mluke.pretraining.init import init_from_xlmr
from mluke.pretraining.trainer import Trainer, pretrain

__all__ = [
    "Corpus",
    "Document",
    "TrainConfig",
    "Trainer",
    "build_corpus",
    "build_wiki_corpus",
    "init_from_xlmr",
    "pretrain",
]
