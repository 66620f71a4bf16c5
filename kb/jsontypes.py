"""Type aliases for JSON data: what ``json.dumps`` writes and ``json.loads`` reads.

Public methods that return report, provenance or statistics records (``to_dict``, ``info``, ``describe``...)
are typed with these rather than ``Any``: the values are JSON, whatever their keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

#: One JSON value. ``Sequence``/``Mapping`` (read-only, covariant) so that a ``list[str]`` or a
#: ``dict[str, int]`` is one too.
JsonValue: TypeAlias = "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"

#: A JSON object (a record with string keys).
JsonObject: TypeAlias = "dict[str, JsonValue]"
