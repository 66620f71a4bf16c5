"""Logits of our fine-tuning heads and of transformers' LUKE heads given the same weights and inputs, on a tiny
config (the parity tests of the typing and relation heads)."""

from __future__ import annotations

import torch

from mluke.finetuning.models import TransferModel

TINY = {
    "vocab_size": 40,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "entity_emb_size": 16,
    "max_position_embeddings": 40,
    "type_vocab_size": 1,
    "num_labels": 5,
}


def head_logits(
    reference: type, task: str, spans: list[list[tuple[int, int]]], *, eaa: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ours, transformers') logits of 3 rows of 9 random word ids, the entities of row r over ``spans[r]`` with
    ids 1, 2, ... (typing: [MASK]; relations: [HEAD], [TAIL]; the entity table holds these and [PAD]); every
    weight drawn from N(0, 0.3).

    ``reference`` is a transformers head class (``LukeForEntityClassification``...); its weights are loaded into
    a :class:`TransferModel` of ``task`` with entity features, the names being the same (``luke.*``,
    ``classifier.*``). A bias ours has and the reference lacks is set to zero.
    """
    from transformers import LukeConfig, LukeModel

    config = LukeConfig(use_entity_aware_attention=eaa, entity_vocab_size=len(spans[0]) + 1, **TINY)
    torch.manual_seed(3)
    ref = reference(config)
    with torch.no_grad():
        for p in ref.parameters():  # no zero rows or unit norms: every weight matters
            p.normal_(0.0, 0.3)
    ref.eval()
    ours = TransferModel(LukeModel(config, add_pooling_layer=False), task, "entity", [f"t{i}" for i in range(5)])
    state = {k: v for k, v in ref.state_dict().items() if not k.startswith("luke.pooler.")}
    if "classifier.bias" not in state:
        state["classifier.bias"] = torch.zeros(TINY["num_labels"])
    ours.load_state_dict(state, strict=True)
    ours.eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 40, (3, 9), generator=generator)
    mask = torch.ones_like(ids)
    mask[2, 6:] = 0
    n = len(spans[0])
    positions = torch.full((3, n, 4), -1)
    for r, row in enumerate(spans):
        for e, (s, end) in enumerate(row):
            positions[r, e, : end - s] = torch.arange(s, end)
    batch = {
        "input_ids": ids,
        "attention_mask": mask,
        "entity_ids": torch.arange(1, n + 1).repeat(3, 1),
        "entity_position_ids": positions,
        "entity_attention_mask": torch.ones(3, n, dtype=torch.long),
    }
    with torch.no_grad():
        return ours(batch), ref(**batch).logits
