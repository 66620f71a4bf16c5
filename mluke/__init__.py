"""mluke: multilingual knowledge probing and entity linking with mLUKE.

The knowledge side lives in the sibling package :mod:`kb` (entity database,
embedded knowledge base, entity vocabulary). Errors raised on purpose are
:class:`MlukeError` subclasses.
"""

from kb.errors import MlukeError

__version__ = "0.1.0"

__all__ = ["MlukeError", "__version__"]
