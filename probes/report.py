"""What every evaluation report of :mod:`probes` can do once it has ``to_dict()`` and ``table()``: write
itself as JSON or CSV (through :mod:`kb.files`: an existing file only with ``overwrite``) and become a
DataFrame of its ``rows``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kb.files import json_text, write_csv, write_json

if TYPE_CHECKING:
    from kb.jsontypes import JsonObject


class TableReport:
    """Mixin for report dataclasses with ``rows`` (list of dicts), ``to_dict()`` and ``table()``."""

    rows: list[dict[str, Any]]

    def to_dict(self) -> JsonObject:  # pragma: no cover - every report defines it
        raise NotImplementedError

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

    def to_pandas(self) -> Any:
        """One row per entry of ``rows``."""
        import pandas as pd

        return pd.DataFrame(self.rows)
