"""Initialising mLUKE from an XLM-R checkpoint.

Copied from XLM-R: word embeddings (plus two new rows for ``<ent>``/``<ent2>``,
set to the mean word embedding), position and type embeddings, the embedding
LayerNorm, every encoder layer and the LM head (its decoder stays tied to the
word embeddings). New: the entity embeddings (``entity_emb_size`` dims) and
their projection, the MEP head, and - when used - the entity-aware attention
queries, which start as copies of the word query.

The entity position table starts as XLM-R's word position table shifted by
two: words use RoBERTa position ids (the word at sequence index i has position
id i + 2, ``padding_idx + 1`` being the first), while ``entity_position_ids``
hold sequence indices, so entity position row i is word position row i + 2 and
a mention gets the same position vectors as the words it covers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch
from transformers import LukeConfig

from mluke.models.masked_lm import MlukeForMaskedLM

#: Parameters mLUKE adds to XLM-R: the only ones stage 1 trains.
NEW_PARAMETERS = re.compile(r"^(luke\.entity_embeddings\.|entity_predictions\.|.*\.(w2e|e2w|e2e)_query\.)")


def is_new_parameter(name: str) -> bool:
    return bool(NEW_PARAMETERS.match(name))


def init_from_xlmr(
    xlmr: str | os.PathLike[str],
    *,
    entity_vocab_size: int,
    entity_emb_size: int = 256,
    use_entity_aware_attention: bool = False,
    dropout: float | None = None,
    seed: int = 0,
) -> MlukeForMaskedLM:
    """A new mLUKE model whose word side is the given ``XLMRobertaForMaskedLM`` (hub name or folder)."""
    from transformers import XLMRobertaForMaskedLM

    from kb.errors import MlukeError

    try:
        src = XLMRobertaForMaskedLM.from_pretrained(str(xlmr))
    except OSError as exc:
        where = "folder" if Path(str(xlmr)).exists() else "hub model (offline?)"
        raise MlukeError(f"cannot load the XLM-R checkpoint {str(xlmr)!r} as a {where}: {exc}") from None
    sc = src.config
    config = LukeConfig(
        vocab_size=sc.vocab_size + 2,
        entity_vocab_size=entity_vocab_size,
        hidden_size=sc.hidden_size,
        entity_emb_size=entity_emb_size,
        num_hidden_layers=sc.num_hidden_layers,
        num_attention_heads=sc.num_attention_heads,
        intermediate_size=sc.intermediate_size,
        hidden_act=sc.hidden_act,
        hidden_dropout_prob=sc.hidden_dropout_prob if dropout is None else dropout,
        attention_probs_dropout_prob=sc.attention_probs_dropout_prob if dropout is None else dropout,
        max_position_embeddings=sc.max_position_embeddings,
        type_vocab_size=sc.type_vocab_size,
        initializer_range=sc.initializer_range,
        layer_norm_eps=sc.layer_norm_eps,
        use_entity_aware_attention=use_entity_aware_attention,
        bos_token_id=0,
        pad_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = MlukeForMaskedLM(config)
    s = src.state_dict()
    with torch.no_grad():
        luke = model.luke
        words = s["roberta.embeddings.word_embeddings.weight"]
        luke.embeddings.word_embeddings.weight[: words.shape[0]] = words
        luke.embeddings.word_embeddings.weight[words.shape[0] :] = words.mean(0)
        for name in (
            "position_embeddings.weight",
            "token_type_embeddings.weight",
            "LayerNorm.weight",
            "LayerNorm.bias",
        ):
            luke.embeddings.get_parameter(name).copy_(s[f"roberta.embeddings.{name}"])
        for name, param in luke.encoder.named_parameters():
            key = f"roberta.encoder.{name}"
            if key in s:
                param.copy_(s[key])
            else:  # w2e/e2w/e2e queries start as the word query
                param.copy_(s[f"roberta.encoder.{re.sub(r'(w2e|e2w|e2e)_query', 'query', name)}"])
        for name in ("dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "decoder.bias"):
            model.lm_head.get_parameter(name).copy_(_extend(s[f"lm_head.{name}"], model.lm_head.get_parameter(name)))
        ent = luke.entity_embeddings
        pos = s["roberta.embeddings.position_embeddings.weight"]
        if sc.pad_token_id is None:
            raise MlukeError(f"{xlmr}: config.json has no pad_token_id (XLM-R positions start after it)")
        offset = sc.pad_token_id + 1
        ent.position_embeddings.weight[: pos.shape[0] - offset] = pos[offset:]
        ent.position_embeddings.weight[pos.shape[0] - offset :] = pos[-1]
        ent.token_type_embeddings.weight.copy_(s["roberta.embeddings.token_type_embeddings.weight"])
        ent.LayerNorm.weight.copy_(s["roberta.embeddings.LayerNorm.weight"])
        ent.LayerNorm.bias.copy_(s["roberta.embeddings.LayerNorm.bias"])
        model.entity_predictions.bias.zero_()
    model.lm_head.bias = model.lm_head.decoder.bias
    return model


def _extend(src: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Copy of ``src`` grown to ``like``'s length (the two new word rows get the mean)."""
    if src.shape == like.shape:
        return src
    out = like.detach().clone()
    out[: src.shape[0]] = src
    out[src.shape[0] :] = src.mean(0)
    return out
