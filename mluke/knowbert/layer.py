"""The knowledge attention and recontextualization layer (KAR) of KnowBert (Peters et al., 2019, §3.3).

In the order of the paper's Figure 1, for word vectors ``H`` [B, T, hidden] and the spans and candidates of
:class:`~mluke.knowbert.batch.SpanCandidates`:

1. ``H_proj = H W1 + b1``: word vectors projected to the entity dimension ``d`` (Eq. 1);
2. span vectors: self-attentive pooling over each span's word pieces (ends inclusive; Lee et al., 2017),
   then LayerNorm;
3. optionally one transformer layer of span self-attention (Eq. 2), so linking decisions see each other;
4. candidate scores ``psi = MLP([s . e / sqrt(d), log p(e|m)])`` (Eq. 3; the frozen entity vectors pass a
   learned LayerNorm first); candidates below the threshold ``delta`` leave the softmax, and a span with
   none left takes the learned NULL embedding; ``e~`` = the score-weighted entity embedding;
5. ``s' = LayerNorm(s + e~)`` (Eq. 6);
6. word-to-span attention: one transformer layer whose queries are ``H_proj`` and whose keys and values are
   the real spans of the same text;
7. ``H' = LayerNorm(H + W2 H'_proj + b2)`` (Eq. 7), ``W2`` initialised as the pseudo-inverse of ``W1``.

Dropout sits where BERT's layers have it. The entity table is a buffer: it is never trained and never in
:meth:`KnowledgeLayer.parameters`, and it is the table's own tensor, not a copy (1.2 GB for mLUKE's 1.2M x 256).
"""

from __future__ import annotations

import math
from typing import NamedTuple, cast

import torch
from torch import Tensor, nn

from mluke.knowbert.batch import IGNORE, SpanCandidates
from mluke.knowbert.config import KnowBertConfig
from mluke.knowbert.entities import EntityTable


class KarOutput(NamedTuple):
    """What :meth:`KnowledgeLayer.forward` returns."""

    hidden_states: Tensor  #: [B, T, hidden], the recontextualised word vectors
    linking_scores: Tensor  #: [B, S, K], psi before thresholding (-inf for padding spans and candidates)


NULL_CHOICE = -1  #: :attr:`LinkDecision.candidate` of a span linked to NULL (and of a padding span)


class LinkDecision(NamedTuple):
    """What :meth:`KnowledgeLayer.decode` returns."""

    candidate: Tensor  #: int64 [B, S]: the chosen candidate index 0 .. K-1, or NULL_CHOICE (-1)
    probability: Tensor  #: float32 [B, S]: its probability (of NULL for NULL) among the K candidates + NULL


class CrossAttentionBlock(nn.Module):
    """A post-LayerNorm transformer layer whose queries come from ``x`` and keys and values from ``memory``
    (``memory`` = ``x``: self-attention). A query whose memory is all padding attends to nothing (zero
    context) instead of averaging the padding."""

    def __init__(self, dim: int, heads: int, ffn: int, dropout: float, eps: float) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"the entity dimension {dim} is not a multiple of {heads} attention heads")
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.attention_out = nn.Linear(dim, dim)
        self.attention_norm = nn.LayerNorm(dim, eps=eps)
        self.ffn_in, self.ffn_out = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
        self.ffn_norm = nn.LayerNorm(dim, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: Tensor) -> Tensor:
        b, n, dim = x.shape
        return x.view(b, n, self.heads, dim // self.heads).transpose(1, 2)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor) -> Tensor:
        """x [B, N, d], memory [B, M, d], memory_mask bool [B, M] (True: real) -> [B, N, d]."""
        q, k, v = self._split(self.query(x)), self._split(self.key(memory)), self._split(self.value(memory))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        real = memory_mask[:, None, None, :]
        probs = scores.masked_fill(~real, torch.finfo(scores.dtype).min).softmax(-1)
        probs = probs * real.any(-1, keepdim=True).to(probs.dtype)  # all padding: attend to nothing
        context = (self.dropout(probs) @ v).transpose(1, 2).flatten(2)
        attended = self.attention_norm(x + self.dropout(self.attention_out(context)))
        fed = self.ffn_out(nn.functional.gelu(self.ffn_in(attended)))
        return cast(Tensor, self.ffn_norm(attended + self.dropout(fed)))


def span_weights(logits: Tensor, span_start: Tensor, span_end: Tensor, span_mask: Tensor) -> Tensor:
    """Self-attentive pooling weights [B, S, T]: a softmax of the word logits [B, T] inside each span (both
    ends inclusive); zero outside the span and for padding spans."""
    positions = torch.arange(logits.shape[1], device=logits.device)
    inside = (positions >= span_start[..., None]) & (positions <= span_end[..., None]) & span_mask[..., None]
    weights = logits[:, None, :].masked_fill(~inside, torch.finfo(logits.dtype).min).softmax(-1)
    return weights * inside.any(-1, keepdim=True).to(weights.dtype)


class KnowledgeLayer(nn.Module):
    """KnowBert's KAR for one knowledge base: links candidate spans to the entity table and mixes the linked
    entities back into the word vectors (see the module docs for the steps)."""

    entity_vectors: Tensor

    def __init__(self, hidden_size: int, entities: EntityTable, config: KnowBertConfig | None = None) -> None:
        super().__init__()
        config = config or KnowBertConfig()
        self.config = config
        self.num_entities = len(entities)
        d, eps = entities.dim, config.layer_norm_eps
        self.register_buffer("entity_vectors", entities.vectors, persistent=False)  # shared, not copied
        self.to_entity = nn.Linear(hidden_size, d)  # W1 (Eq. 1)
        self.span_logit = nn.Linear(d, 1)  # self-attentive span pooling
        self.span_norm = nn.LayerNorm(d, eps=eps)
        self.span_encoder = (
            CrossAttentionBlock(d, config.span_heads, config.span_ffn, config.dropout, eps)
            if config.span_attention
            else None
        )
        self.entity_norm = nn.LayerNorm(d, eps=eps)
        self.score_mlp = nn.Sequential(nn.Linear(2, config.mlp_hidden), nn.ReLU(), nn.Linear(config.mlp_hidden, 1))
        self.null_embedding = nn.Parameter(torch.zeros(d))
        self.enhanced_norm = nn.LayerNorm(d, eps=eps)
        self.word_to_span = CrossAttentionBlock(d, config.word_heads, config.word_ffn, config.dropout, eps)
        self.to_hidden = nn.Linear(d, hidden_size)  # W2 (Eq. 7)
        self.output_norm = nn.LayerNorm(hidden_size, eps=eps)
        self.dropout = nn.Dropout(config.dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """BERT's initialisation (normal weights, zero biases, unit LayerNorms), then W2 = pinv(W1)."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, self.config.initializer_range)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.null_embedding, 0.0, self.config.initializer_range)
        self.init_output_projection()

    @torch.no_grad()
    def init_output_projection(self) -> None:
        """Set ``W2`` to the pseudo-inverse of ``W1`` (and ``b2 = -W2 b1``), so that projecting to the entity
        dimension and back is the orthogonal projection onto ``W1``'s row space (KnowBert §3.3; Algorithm 1
        does this again after the linker is trained, before stage 2)."""
        w1 = self.to_entity.weight.double()
        w2 = torch.linalg.pinv(w1)
        self.to_hidden.weight.copy_(w2.to(self.to_hidden.weight.dtype))
        self.to_hidden.bias.copy_((-(w2 @ self.to_entity.bias.double())).to(self.to_hidden.bias.dtype))

    def forward(self, hidden_states: Tensor, candidates: SpanCandidates) -> KarOutput:
        """Word vectors [B, T, hidden] with their spans and candidates -> recontextualised word vectors and
        the linking scores."""
        candidates = candidates.to(hidden_states.device)
        self._check(candidates, hidden_states.shape[1])
        span_mask = candidates.span_mask
        projected = self.to_entity(hidden_states)
        spans = self.span_vectors(projected, candidates)
        entities = self.entity_norm(self.entity_vectors[candidates.entity_ids].to(projected.dtype))
        scores = self.scores(spans, entities, candidates)
        weighted = self.weighted_entities(scores, entities, candidates.candidate_mask & span_mask[..., None])
        enhanced = self.enhanced_norm(spans + self.dropout(weighted))
        words = self.word_to_span(projected, enhanced, span_mask)
        out = self.output_norm(hidden_states + self.dropout(self.to_hidden(words)))
        return KarOutput(out, scores)

    def span_vectors(self, projected: Tensor, candidates: SpanCandidates) -> Tensor:
        """Span vectors [B, S, d]: pooled, normalised and (with span attention) contextualised."""
        weights = span_weights(
            self.span_logit(projected).squeeze(-1), candidates.span_start, candidates.span_end, candidates.span_mask
        )
        spans: Tensor = self.span_norm(weights @ projected)
        if self.span_encoder is not None:
            spans = self.span_encoder(spans, spans, candidates.span_mask)
        return spans

    def scores(self, spans: Tensor, entities: Tensor, candidates: SpanCandidates) -> Tensor:
        """psi [B, S, K] = MLP([span . entity / sqrt(d), log prior]); -inf for padding."""
        dot = (spans[:, :, None, :] * entities).sum(-1) / math.sqrt(entities.shape[-1])
        real = candidates.candidate_mask & candidates.span_mask[..., None]
        prior = candidates.log_prior.to(dot.dtype).clamp(min=self.config.log_prior_floor).masked_fill(~real, 0.0)
        psi = cast(Tensor, self.score_mlp(torch.stack([dot, prior], dim=-1))).squeeze(-1)
        return psi.masked_fill(~real, float("-inf"))

    def weighted_entities(self, scores: Tensor, entities: Tensor, real: Tensor) -> Tensor:
        """e~ [B, S, d]: the softmax over the candidates at or above the threshold, weighting their vectors;
        the NULL embedding for a span with no such candidate."""
        keep = real & (scores >= self.config.threshold)
        weights = scores.masked_fill(~keep, torch.finfo(scores.dtype).min).softmax(-1) * keep.to(scores.dtype)
        weighted = (weights[..., None] * entities).sum(-2)
        return torch.where(keep.any(-1, keepdim=True), weighted, self.null_embedding.to(weighted.dtype))

    def linking_loss(self, scores: Tensor, gold: Tensor) -> Tensor:
        """The negative log-likelihood of the gold candidates (KnowBert's Eq. 4), mean over supervised spans.

        The softmax runs over a span's K candidates and NULL (class K), whose logit is the threshold: a
        span learns NULL by scoring all its candidates below it, which is what the layer then uses."""
        null = scores.new_full((*scores.shape[:-1], 1), self.config.threshold)
        logits = torch.cat([scores, null], dim=-1)
        supervised = gold != IGNORE
        picked, target = logits[supervised], gold[supervised]
        if not bool(torch.isfinite(picked.gather(1, target[:, None])).all()):
            raise ValueError("a gold candidate index points at a padding candidate (candidate_mask False)")
        if target.numel() == 0:
            return picked.sum() * 0.0  # no supervision in this batch: zero, still part of the graph
        return nn.functional.cross_entropy(picked, target)

    def decode(self, scores: Tensor) -> LinkDecision:
        """Each span's link: its best candidate when that scores above the threshold, else NULL (as KnowBert
        decodes), with the probability of the choice under the linking loss's softmax over K candidates + NULL."""
        null = scores.new_full((*scores.shape[:-1], 1), self.config.threshold)
        probs = torch.cat([scores, null], dim=-1).float().softmax(-1)
        best, index = scores.max(-1)
        linked = best > self.config.threshold
        index = torch.where(linked, index, torch.full_like(index, NULL_CHOICE))
        chosen = torch.where(linked, probs.gather(-1, index.clamp(min=0)[..., None]).squeeze(-1), probs[..., -1])
        return LinkDecision(index, chosen)

    def _check(self, candidates: SpanCandidates, length: int) -> None:
        """Refuse spans outside the text and candidates outside the table (indexing would fail obscurely)."""
        real = candidates.span_mask
        start, end = candidates.span_start[real], candidates.span_end[real]
        if bool(((start < 0) | (end >= length) | (end < start)).any()):
            raise ValueError(f"span positions must satisfy 0 <= start <= end < {length} (the input's length)")
        ids = candidates.entity_ids
        if bool(((ids < 0) | (ids >= self.num_entities)).any()):
            raise ValueError(f"candidate entity ids must be rows of the entity table (0 .. {self.num_entities - 1})")
        gold = candidates.gold
        if gold is not None and bool(((gold != IGNORE) & ((gold < 0) | (gold > ids.shape[-1]))).any()):
            raise ValueError(f"gold must be a candidate index 0 .. K-1, K (= {ids.shape[-1]}) for NULL, or IGNORE")
