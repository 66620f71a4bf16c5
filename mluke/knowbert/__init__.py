"""A KnowBert-style knowledge layer (Peters et al., 2019) for our encoders: a knowledge attention and
recontextualization layer with an integrated entity linker, inserted between two encoder layers.

- :class:`KnowBertModel`: an mLUKE or XLM-R masked LM with a knowledge layer after layer ``L`` for each of one or
  more named knowledge bases (:data:`DEFAULT_KB`: the name of a lone one);
- :class:`KnowledgeLayer`: the layer itself (KAR); :class:`KnowBertConfig`: its settings; :class:`LinkDecision`:
  the integrated linker's choice per span (:meth:`KnowBertModel.link`; :data:`NULL_CHOICE` for NULL);
- :class:`EntityTable`: the frozen entity vectors it links to (an mLUKE checkpoint's, or a safetensors file);
- :class:`SpanCandidates`: the spans and kb candidates of a batch (:data:`IGNORE`: a span without supervision);
- :class:`CandidateSelector`: spans, candidates and gold of texts and corpus documents (:func:`collate` batches
  them); :class:`MultiSelector`: the selectors of several knowledge bases over shared windows (:class:`KbSpans`,
  :func:`collate_knowledge`); :class:`KnowledgeBaseSource`: one knowledge base of a training run;
  :func:`mask_window`: KnowBert's masked-LM masking; :class:`KnowBertTrainer`: the two training stages;
- :class:`TextCandidates`: spans and candidates placed on another tokenization's pieces (fine-tuning rows, prompts;
  every knowledge base's with ``others``); :func:`open_knowbert_words`: a KnowBert folder as a word-mode probing
  model, the layer on or off; :func:`kb_dbs`: the kb each knowledge base takes its candidates from when used.
"""

from mluke.knowbert.batch import IGNORE, SpanCandidates
from mluke.knowbert.candidates import (
    CandidateSelector,
    KbSpans,
    MultiSelector,
    SelectionStats,
    Window,
    collate,
    collate_knowledge,
)
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable
from mluke.knowbert.kb_sources import kb_dbs
from mluke.knowbert.layer import NULL_CHOICE, KarOutput, KnowledgeLayer, LinkDecision
from mluke.knowbert.masking import MaskingOptions, MaskVocabulary, mask_window
from mluke.knowbert.model import DEFAULT_KB, KnowBertModel, KnowBertOutput
from mluke.knowbert.pieces import TextCandidates
from mluke.knowbert.run import KnowledgeBaseSource
from mluke.knowbert.train_config import KnowBertTrainConfig
from mluke.knowbert.training import KnowBertTrainer
from mluke.knowbert.word_model import open_knowbert_words

__all__ = [
    "DEFAULT_KB",
    "IGNORE",
    "NULL_CHOICE",
    "CandidateSelector",
    "EntityTable",
    "KarOutput",
    "KbSpans",
    "KnowBertConfig",
    "KnowBertModel",
    "KnowBertOutput",
    "KnowBertTrainConfig",
    "KnowBertTrainer",
    "KnowledgeBaseSource",
    "KnowledgeLayer",
    "LinkDecision",
    "MaskVocabulary",
    "MaskingOptions",
    "MultiSelector",
    "SelectionStats",
    "SpanCandidates",
    "TextCandidates",
    "Window",
    "collate",
    "collate_knowledge",
    "kb_dbs",
    "mask_window",
    "open_knowbert_words",
]
