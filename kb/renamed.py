"""Keyword arguments that were renamed: the old name still works for a while, with a DeprecationWarning.

The entity database parameter is called ``db`` everywhere; a few public functions called it ``kb`` before
0.2, and :func:`renamed_keyword` keeps those calls working.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keyword(old: str, new: str) -> Callable[[F], F]:
    """Accept ``old=`` as a deprecated spelling of the keyword argument ``new=`` of the decorated function.

    Args:
        old: the former keyword name.
        new: the keyword name the function now takes.

    Returns:
        A decorator; passing both names at once raises ``TypeError``.
    """

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{function.__qualname__}() got both {old}= and {new}=; use {new}=")
                warnings.warn(
                    f"{function.__qualname__}({old}=...) is deprecated; use {new}=...",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
