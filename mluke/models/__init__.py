"""The model: mLUKE and English LUKE checkpoints, their tokenizers and the masked-LM classes.

- ``checkpoint``: :func:`load` / :func:`save` of the studio-ousia layout, the :class:`Mluke` bundle;
- ``tokenizer``: :class:`MlukeTokenizer` (fairseq word ids with offsets, entity inputs); ``xlmr``: the XLM-R
  word tokenizer it wraps; ``encoding``: the encoded batch; ``entity_vocab``: a checkpoint's entity vocabulary;
- ``luke``: English LUKE (:class:`LukeTokenizer`, byte-level BPE); ``masked_lm``: :class:`MlukeForMaskedLM`,
  with candidate-restricted scoring; ``word_models``: any other masked LM as a word-only model;
- ``devices``: where and in which precision a model runs; ``compat``: transformers 4.x / 5.x differences;
  ``errors``: :class:`CheckpointError`.

Nothing here imports the rest of mluke. Names are imported on first use (torch and transformers are slow to
import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.lazy import lazy_getattr

if TYPE_CHECKING:
    from mluke.models.checkpoint import Mluke as Mluke, load as load, save as save
    from mluke.models.errors import CheckpointError as CheckpointError
    from mluke.models.luke import LukeTokenizer as LukeTokenizer
    from mluke.models.masked_lm import MlukeForMaskedLM as MlukeForMaskedLM
    from mluke.models.tokenizer import MlukeTokenizer as MlukeTokenizer
    from mluke.models.word_models import load_word_model as load_word_model

_LAZY = {
    "Mluke": "mluke.models.checkpoint",
    "load": "mluke.models.checkpoint",
    "save": "mluke.models.checkpoint",
    "CheckpointError": "mluke.models.errors",
    "LukeTokenizer": "mluke.models.luke",
    "MlukeForMaskedLM": "mluke.models.masked_lm",
    "MlukeTokenizer": "mluke.models.tokenizer",
    "load_word_model": "mluke.models.word_models",
}

__all__ = list(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY)
