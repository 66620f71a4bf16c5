"""Version-aware shims for transformers 4.x and 5.x, in one place.

mluke supports ``transformers>=4.46`` (tested at the floor in CI) and 5.x. Where the two
series differ in an API mluke relies on, the difference is bridged here and nowhere else:

- ``PreTrainedModel._tied_weights_keys``: 4.x lists the tied parameter names (the
  tie target is implied by ``get_output_embeddings``); 5.x maps each tied name to its
  source. :func:`tied_weights_keys` adds ties in whichever form the installed series uses.
- ``from_pretrained``'s dtype: 5.x names it ``dtype``; 4.x calls it ``torch_dtype`` and passes an
  unknown ``dtype`` on to the model's constructor, which refuses it. :func:`dtype_kwargs` names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, overload

import transformers

if TYPE_CHECKING:
    import torch

#: The major version of the installed transformers (4 or 5).
TRANSFORMERS_MAJOR = int(transformers.__version__.split(".")[0])


@overload
def tied_weights_keys(inherited: Mapping[str, str], ties: Mapping[str, str]) -> dict[str, str]: ...
@overload
def tied_weights_keys(inherited: Sequence[str] | None, ties: Mapping[str, str]) -> list[str]: ...
def tied_weights_keys(
    inherited: Mapping[str, str] | Sequence[str] | None, ties: Mapping[str, str]
) -> dict[str, str] | list[str]:
    """``inherited`` (a parent class's ``_tied_weights_keys``) plus ``ties`` (tied name -> source name).

    5.x: a dict of both. 4.x: a list of the tied names (4.x ties each of them to the input
    embeddings or through ``tie_weights``; its LUKE heads already tie the sources given here).
    """
    if isinstance(inherited, Mapping):
        return {**inherited, **ties}
    names = list(inherited or [])
    return names + [name for name in ties if name not in names]


def dtype_kwargs(dtype: torch.dtype | None) -> dict[str, torch.dtype]:
    """The keyword that sets the weights' dtype in ``from_pretrained`` (none for ``None``: the stored dtype)."""
    if dtype is None:
        return {}
    return {"dtype" if TRANSFORMERS_MAJOR >= 5 else "torch_dtype": dtype}
