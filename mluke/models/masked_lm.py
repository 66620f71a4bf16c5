"""The mLUKE masked-LM model: transformers' LUKE classes with their known defects fixed,
and scoring that never materialises logits over a whole vocabulary.

Fixes over ``transformers.LukeForMaskedLM`` (5.x):
- the word-prediction head is tied to the word embeddings (declared in
  ``_tied_weights_keys``, so it also survives ``save_pretrained``);
- the entity embedding has no ``padding_idx``: row 0 is a real entity
  ([MASK] in the lite checkpoints) and must be neither zeroed nor frozen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

import torch
from torch import Tensor, nn
from transformers import LukeConfig, LukeForMaskedLM
from transformers.activations import gelu
from transformers.models.luke.modeling_luke import LukeLayer, LukeModel

from kb.errors import OptionError
from mluke.models.compat import tied_weights_keys
from mluke.models.devices import to_device
from mluke.models.normaliser import NORMALISERS, Int8Rows, Normaliser, int8_logsumexp_max, quantize_rows, table_identity

#: Vocabulary rows per step of the full normaliser. On the 2-core development machine, for a
#: 1.2M x 256 entity table, 8K rows were 10-14% faster than 32K at 64-128 prompts per call
#: (their logits stay in the L2 cache) and the same at 8-32 prompts, where reading the table
#: from memory dominates.
DEFAULT_CHUNK = 8_192


class MlukeForMaskedLM(LukeForMaskedLM):
    """``LukeForMaskedLM`` with tied word head, a real entity row 0 and candidate scoring."""

    _tied_weights_keys = tied_weights_keys(
        LukeForMaskedLM._tied_weights_keys, {"lm_head.decoder.weight": "luke.embeddings.word_embeddings.weight"}
    )

    def __init__(self, config: LukeConfig) -> None:
        super().__init__(config)
        emb = self.luke.entity_embeddings.entity_embeddings
        emb.padding_idx = None
        if not emb.weight.is_meta:
            with torch.no_grad():  # transformers zeroed it as a padding row
                emb.weight[0].normal_(0.0, config.initializer_range)

    def forward(self, *args: object, **kwargs: object) -> object:
        """``LukeForMaskedLM.forward``, refusing entity ids without positions (transformers crashes obscurely)."""
        _check_entity_inputs(kwargs)
        return super().forward(*args, **kwargs)

    # -- encoder ------------------------------------------------------------------------
    def encode(self, **inputs: Tensor) -> tuple[Tensor, Tensor | None]:
        """Run the encoder only: word states (batch x words x hidden) and entity states
        (batch x entities x hidden, or ``None`` without entity inputs)."""
        _check_entity_inputs(inputs)
        out = self.luke(**to_device(inputs, self.device), return_dict=True)
        return out.last_hidden_state, out.entity_last_hidden_state

    def encode_entities(self, **inputs: Tensor) -> Tensor:
        """The entity states of :meth:`encode` (batch x entities x hidden), computing in the last
        layer only what they need: keys and values of every token, but queries, attention output
        and feed-forward for the entity rows alone (what scoring entities at [MASK]s uses).

        Equal to ``encode(**inputs)[1]`` up to float rounding; skips most of one layer's word work.
        """
        return encode_entity_rows(self.luke, **to_device(inputs, self.device))

    # -- entity prediction (MEP) ------------------------------------------------------------
    def entity_features(self, entity_hidden: Tensor) -> Tensor:
        """MEP query ``m = LayerNorm(gelu(W h + b))``: (..., hidden) -> (..., entity_emb_size)."""
        return cast(Tensor, self.entity_predictions.transform(entity_hidden))

    def entity_scores(
        self, entity_hidden: Tensor, candidates: Tensor, *, normalize: bool = True, chunk_size: int = DEFAULT_CHUNK
    ) -> Tensor:
        """MEP scores of candidate entities at entity positions.

        entity_hidden: (n, hidden) states at entity [MASK]s; candidates: (n, c) or
        (c,) entity ids. Returns (n, c): log-probabilities under the softmax over
        the whole entity vocabulary when ``normalize`` (the normaliser is
        accumulated ``chunk_size`` rows at a time), else the unnormalised logits,
        which rank candidates identically and cost only n x c dot products.
        """
        m = self.entity_features(entity_hidden)
        table = self.entity_predictions.decoder.weight
        bias = self.entity_predictions.bias
        return _candidate_scores(m, table, bias, candidates, normalize, chunk_size)

    def entity_scores_and_best(
        self,
        entity_hidden: Tensor,
        candidates: Tensor,
        *,
        exclude: Tensor | None = None,
        chunk_size: int = DEFAULT_CHUNK,
        normaliser: Normaliser = "exact",
    ) -> tuple[Tensor, Tensor]:
        """:meth:`entity_scores` (normalised) and the best entity's log-probability at each position, in the
        same pass over the entity table; ``exclude`` ((n, k) ids, -1 for none): entities left out of both
        (what the model sees when the kb lacks them). The candidates' own rows must not be excluded.
        ``normaliser``: "exact" (float32) or "int8" (:mod:`mluke.models.normaliser`: on a CPU, from an int8
        copy of the entity table made on first use and kept with the model; "exact" on other devices)."""
        m = self.entity_features(entity_hidden)
        table, bias = self.entity_predictions.decoder.weight, self.entity_predictions.bias
        rows = (
            self.int8_entity_rows() if check_normaliser(normaliser) == "int8" and table.device.type == "cpu" else None
        )
        return candidate_scores_and_best(m, table, bias, candidates, exclude, chunk_size, rows)

    def int8_entity_rows(self) -> Int8Rows:
        """The entity table and bias quantised to int8 (:func:`mluke.models.normaliser.quantize_rows`), made on
        first use and again when the table changes (training, ``load_state_dict``, ``.to``)."""
        table, bias = self.entity_predictions.decoder.weight, self.entity_predictions.bias
        cached: Int8Rows | None = self.__dict__.get("_int8_entity_rows")
        if cached is None or cached.source != table_identity(table, bias):
            cached = quantize_rows(table.detach(), bias.detach())
            self.__dict__["_int8_entity_rows"] = cached  # not a buffer: never saved, rebuilt from the table
        return cached

    def entity_topk(
        self,
        entity_hidden: Tensor,
        k: int,
        *,
        exclude: Tensor | None = None,
        row_exclude: Tensor | None = None,
        chunk_size: int = DEFAULT_CHUNK,
    ) -> tuple[Tensor, Tensor]:
        """The ``k`` best entities of the whole vocabulary at each entity position, in one pass over
        the entity table, ``chunk_size`` rows at a time: (n, vocab) logits are never held.

        entity_hidden: (n, hidden). ``exclude``: ids never returned (e.g. the special
        entities); ``row_exclude``: (n,) one more id per row not to return (e.g. the
        subject itself; -1 for none). Excluded entities still count in the normaliser.
        Returns (n, k) MEP log-probabilities over the whole vocabulary, best first, and
        (n, k) ids (fewer columns when the vocabulary has fewer than ``k`` entities left).
        """
        m = self.entity_features(entity_hidden)
        table, bias = self.entity_predictions.decoder.weight, self.entity_predictions.bias
        n, vocab = m.shape[0], table.shape[0]
        ft = m.reshape(n, -1).T.contiguous()
        total = torch.full((n,), float("-inf"), dtype=m.dtype, device=m.device)
        best = torch.empty(n, 0, dtype=m.dtype, device=m.device)
        best_ids = torch.empty(n, 0, dtype=torch.long, device=m.device)
        rows = torch.arange(n, device=m.device)
        for start in range(0, vocab, chunk_size):
            stop = min(vocab, start + chunk_size)
            logits = torch.addmm(bias[start:stop].unsqueeze(-1), table[start:stop], ft).T  # (n, chunk)
            total = torch.logaddexp(total, torch.logsumexp(logits, dim=-1))
            if exclude is not None:
                exclude = exclude.to(m.device)
                inside = exclude[(exclude >= start) & (exclude < stop)]
                logits[:, inside - start] = float("-inf")
            if row_exclude is not None:
                row_exclude = row_exclude.to(m.device)
                hit = (row_exclude >= start) & (row_exclude < stop)
                logits[rows[hit], row_exclude[hit] - start] = float("-inf")
            top, ids = logits.topk(min(k, stop - start), dim=-1)
            best, order = torch.cat([best, top], dim=-1).topk(min(k, best.shape[1] + top.shape[1]), dim=-1)
            best_ids = torch.cat([best_ids, ids + start], dim=-1).gather(1, order)
        keep = torch.isfinite(best).all(0)  # columns that are excluded everywhere (tiny vocabularies)
        return (best - total[:, None])[:, keep], best_ids[:, keep]

    # -- word prediction (MLM) ----------------------------------------------------------------
    def word_features(self, word_hidden: Tensor) -> Tensor:
        """LM-head transform ``LayerNorm(gelu(W h + b))``: (..., hidden) -> (..., hidden)."""
        head = self.lm_head
        return cast(Tensor, head.layer_norm(gelu(head.dense(word_hidden))))

    def word_scores(
        self,
        word_hidden: Tensor,
        candidates: Tensor | None = None,
        *,
        normalize: bool = True,
        chunk_size: int = DEFAULT_CHUNK,
    ) -> Tensor:
        """Word predictions at the given (masked) positions only.

        word_hidden: (n, hidden). With ``candidates`` ((n, c) or (c,) word ids):
        (n, c) scores as in :meth:`entity_scores`. Without: (n, vocab) log-softmax.
        """
        f = self.word_features(word_hidden)
        table = self.lm_head.decoder.weight
        bias = self.lm_head.decoder.bias
        if candidates is None:
            logits = f @ table.T + bias
            return torch.log_softmax(logits, dim=-1) if normalize else logits
        return _candidate_scores(f, table, bias, candidates, normalize, chunk_size)

    def mlm_loss(self, word_hidden: Tensor, labels: Tensor) -> Tensor:
        """Cross-entropy of the word head computed at labelled positions only (labels -100 elsewhere)."""
        return head_loss(self.lm_head, word_hidden, labels)

    def mep_loss(self, entity_hidden: Tensor, labels: Tensor) -> Tensor:
        """Cross-entropy of the entity head at labelled entity positions only."""
        return head_loss(self.entity_predictions, entity_hidden, labels)


def encode_entity_rows(luke: LukeModel, **inputs: Tensor) -> Tensor:
    """A ``LukeModel``'s last entity states (batch x entities x hidden), the last layer computed for the
    entity rows only (see :meth:`MlukeForMaskedLM.encode_entities`); fine-tuned heads share it."""
    if inputs.get("entity_ids") is None:
        raise ValueError("encode_entities needs entity_ids and entity_position_ids")
    _check_entity_inputs(inputs)
    ids = inputs["input_ids"]
    token_types = inputs.get("token_type_ids")  # LukeEmbeddings fails on None: pass zeros as LukeModel does
    words = luke.embeddings(
        input_ids=ids,
        token_type_ids=torch.zeros_like(ids) if token_types is None else token_types,
        position_ids=inputs.get("position_ids"),
    )
    ents = luke.entity_embeddings(
        inputs["entity_ids"], inputs["entity_position_ids"], inputs.get("entity_token_type_ids")
    )
    mask = torch.cat(
        [
            inputs.get("attention_mask", torch.ones_like(ids)),
            inputs.get("entity_attention_mask", torch.ones_like(inputs["entity_ids"])),
        ],
        dim=-1,
    )
    additive = (1.0 - mask[:, None, None, :].to(words.dtype)) * torch.finfo(words.dtype).min
    *layers, last = luke.encoder.layer
    for layer in layers:
        words, ents = layer(words, ents, additive)[:2]
    return _last_layer_entity_rows(cast(LukeLayer, last), words, ents, additive)


def _check_entity_inputs(inputs: Mapping[str, object]) -> None:
    """transformers crashes obscurely on entity ids without positions: say what is missing."""
    if inputs.get("entity_ids") is not None and inputs.get("entity_position_ids") is None:
        raise ValueError("entity_ids need entity_position_ids (batch x entities x mention length, padded with -1)")


def _last_layer_entity_rows(layer: LukeLayer, words: Tensor, ents: Tensor, additive_mask: Tensor) -> Tensor:
    """A ``LukeLayer``'s output for the entity rows only (the word rows are only keys and values)."""
    att = layer.attention.self
    split: Callable[[Tensor], Tensor] = att.transpose_for_scores
    both = torch.cat([words, ents], dim=1)
    keys, values = split(att.key(both)), split(att.value(both))
    n = words.shape[1]
    if att.use_entity_aware_attention:
        scores = torch.cat(
            [
                split(att.e2w_query(ents)) @ keys[:, :, :n].transpose(-1, -2),
                split(att.e2e_query(ents)) @ keys[:, :, n:].transpose(-1, -2),
            ],
            dim=-1,
        )
    else:
        scores = split(att.query(ents)) @ keys.transpose(-1, -2)
    probs = torch.softmax(scores / att.attention_head_size**0.5 + additive_mask, dim=-1)
    context = (att.dropout(probs) @ values).permute(0, 2, 1, 3).flatten(2)
    attended = layer.attention.output(context, ents)
    return cast(Tensor, layer.output(layer.intermediate(attended), attended))


def head_loss(head: nn.Module, hidden: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy of a prediction ``head`` over the positions of ``hidden`` whose label is not -100
    (a zero that keeps the graph when there is none); the masked-LM losses of mLUKE and KnowBert."""
    keep = labels != -100
    if not keep.any():
        return hidden.sum() * 0.0
    return nn.functional.cross_entropy(head(hidden[keep]), labels[keep])


def _candidate_scores(
    features: Tensor, table: Tensor, bias: Tensor, candidates: Tensor, normalize: bool, chunk_size: int
) -> Tensor:
    """(n, d) features against candidate rows of ``table`` (+ bias) -> (n, c), in float32 whatever the model's
    precision (the few candidate rows cost nothing to upcast, and close candidates stay apart)."""
    candidates = candidates.to(features.device)
    features, rows, offsets = features.float(), table[candidates].float(), bias[candidates].float()
    if candidates.dim() == 1:
        scores = features @ rows.T + offsets
    else:
        scores = torch.einsum("nd,ncd->nc", features, rows) + offsets
    if normalize:
        scores = scores - chunked_logsumexp(features, table, bias, chunk_size).unsqueeze(-1)
    return scores


def candidate_scores_and_best(
    features: Tensor,
    table: Tensor,
    bias: Tensor,
    candidates: Tensor,
    exclude: Tensor | None,
    chunk_size: int,
    rows: Int8Rows | None = None,
) -> tuple[Tensor, Tensor]:
    """(n, c) candidates' log-probabilities over the whole vocabulary, and (n,) the best log-probability of
    any entity, both without the ``exclude`` ids of each row (:func:`chunked_logsumexp_max`); one pass.
    ``rows``: the int8 copy of ``table`` to take the normaliser from
    (:func:`mluke.models.normaliser.int8_logsumexp_max`; the candidates' own logits stay float32)."""
    scores = _candidate_scores(features, table, bias, candidates, False, chunk_size)
    if rows is not None:
        total, best = int8_logsumexp_max(features, rows, table, bias, chunk_size, exclude)
    else:
        total, best = chunked_logsumexp_max(features.float(), table, bias, chunk_size, exclude)
    return scores - total.unsqueeze(-1), best - total


def check_normaliser(normaliser: str) -> Normaliser:
    """``normaliser`` if it is one of :data:`mluke.models.normaliser.NORMALISERS`, else an ``OptionError``."""
    if normaliser not in NORMALISERS:
        raise OptionError(f"normaliser={normaliser!r}: expected one of {', '.join(map(repr, NORMALISERS))}")
    return cast(Normaliser, normaliser)


def chunked_logsumexp(features: Tensor, table: Tensor, bias: Tensor, chunk_size: int = DEFAULT_CHUNK) -> Tensor:
    """``logsumexp(features @ table.T + bias, -1)`` without holding all (n, vocab) logits: (n,).

    Each chunk is computed as ``table_chunk @ features.T`` (vocabulary rows as the long
    matrix side): on CPU BLAS this is about 1.5x faster than the other orientation for
    the few rows of a batch.
    """
    return chunked_logsumexp_max(features, table, bias, chunk_size)[0]


def chunked_logsumexp_max(
    features: Tensor, table: Tensor, bias: Tensor, chunk_size: int = DEFAULT_CHUNK, exclude: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """:func:`chunked_logsumexp` and, in the same pass, the largest logit of each row: ((n,), (n,)).

    ``exclude``: (n, k) vocabulary ids left out of row i's sum and maximum (-1: none), e.g. entities a
    caller treats as missing from the kb, so that nothing computed here can see them.
    """
    lead = features.shape[:-1]
    ft = features.reshape(-1, features.shape[-1]).T.contiguous().to(table.dtype)
    n = ft.shape[1]
    total = torch.full((n,), float("-inf"), dtype=torch.float32, device=features.device)
    best = torch.full((n,), float("-inf"), dtype=torch.float32, device=features.device)
    if exclude is not None:
        exclude = exclude.reshape(n, -1).to(features.device)
        rows = torch.arange(n, device=features.device)[:, None].expand_as(exclude)
    for start in range(0, table.shape[0], chunk_size):
        stop = start + chunk_size
        logits = torch.addmm(bias[start:stop].unsqueeze(-1), table[start:stop], ft).float()  # (chunk, n)
        if exclude is not None:
            hit = (exclude >= start) & (exclude < stop)
            if hit.any():
                logits[exclude[hit] - start, rows[hit]] = float("-inf")
        total = torch.logaddexp(total, torch.logsumexp(logits, dim=0))  # accumulated in float32
        best = torch.maximum(best, logits.max(dim=0).values)
    return total.reshape(lead), best.reshape(lead)
