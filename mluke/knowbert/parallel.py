"""What DDP wraps when KnowBert trains in several processes (:class:`mluke.knowbert.training.KnowBertTrainer`
under ``torchrun``): a module returning the model's mean losses (each knowledge base's linking loss, then the
masked LM's), so that DDP's search for parameters
without a gradient starts from the losses alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from mluke.knowbert.model import KnowBertModel


class LossModule(torch.nn.Module):
    """The model's mean linking loss per knowledge base (in ``model.names`` order) and its masked-LM loss
    (``None`` where a batch has none)."""

    def __init__(self, model: KnowBertModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor | None, ...]:
        """:meth:`KnowBertModel.forward`'s arguments -> (linking loss of each knowledge base ..., masked-LM loss)."""
        out = self.model(*args, **kwargs)
        return (*(out.kb_losses.get(name) for name in self.model.names), out.mlm_loss)


def wrap_losses(model: KnowBertModel, world: int, device: torch.device) -> torch.nn.Module:
    """The :class:`LossModule` of ``model``, under DDP when ``world`` > 1.

    Build it again whenever the set of trained parameters changes (each stage, after the encoder is frozen
    or unfrozen): DDP synchronises the parameters that train when it is built. ``find_unused_parameters``: a
    linking batch leaves everything above the knowledge layer without a gradient, and the layer's output half
    too (the linking loss reads the scores only); a parameter that no loss reaches on any rank keeps no
    gradient, so AdamW skips it as in one process. Buffers (the entity table) are not broadcast at every
    step: they never change.
    """
    module: torch.nn.Module = LossModule(model)
    if world == 1:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids, find_unused_parameters=True, forward_sync_buffers=False)
