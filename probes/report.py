"""What every evaluation report of :mod:`probes` can do once it has ``to_dict()`` and ``table()``: write
itself as JSON or CSV (through :mod:`kb.files`: an existing file only with ``overwrite``) and become a
DataFrame of its ``rows``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, ClassVar

from kb.files import json_text, write_csv, write_json

if TYPE_CHECKING:
    import pandas as pd

    from kb.jsontypes import JsonObject


class TableReport:
    """Mixin for report dataclasses with ``rows`` (list of dicts), an ``average`` and ``table()``."""

    rows: list[dict[str, Any]]
    #: The fields that head :meth:`to_dict`, in order (the run's settings: model, features, ...).
    head: ClassVar[tuple[str, ...]] = ()

    @property
    def average(self) -> dict[str, Any]:  # pragma: no cover - every report defines it
        raise NotImplementedError

    def to_dict(self) -> JsonObject:
        """Plain data: the fields named in :attr:`head`, the rows as ``languages``, then the ``average``."""
        return {**{name: getattr(self, name) for name in self.head}, "languages": self.rows, "average": self.average}

    def table(self) -> tuple[list[str], list[list[Any]]]:  # pragma: no cover - every report defines it
        raise NotImplementedError

    def to_json(self, path: str | os.PathLike[str] | None = None, *, overwrite: bool = False) -> str:
        """The report as JSON; also written to ``path`` when given."""
        if path is not None:
            write_json(self.to_dict(), path, overwrite=overwrite)
        return json_text(self.to_dict())

    def to_csv(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """The printed table (:meth:`table`) as CSV."""
        columns, rows = self.table()
        write_csv(columns, rows, path, overwrite=overwrite)

    def to_pandas(self) -> pd.DataFrame:
        """One row per entry of ``rows``."""
        import pandas as pd

        return pd.DataFrame(self.rows)
