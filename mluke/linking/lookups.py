"""The kb look-ups of :class:`mluke.Linker` for what it shows of a mention: the qualified names of each group of
candidates and the title of each top candidate, read for a whole call at once and cached per linker."""

from __future__ import annotations

from kb.db import EntityDB
from kb.entities import qualified_names, qualified_names_of_groups

#: Entries of each of a :class:`Linker`'s kb caches (qualified names, titles) before they are emptied.
NAMES_CACHED = 1 << 14


class KbLookupMixin:
    """Names and titles from the kb, batched and cached; mixed into :class:`mluke.Linker`, which provides ``db``
    and the two caches."""

    db: EntityDB
    #: qualified names of each group of candidates, and the title of each top candidate, by language
    _name_cache: dict[tuple[tuple[str, ...], str], dict[str, str]]
    _title_cache: dict[tuple[str, str], str | None]

    def _qualified(self, keys: tuple[str, ...], lang: str) -> dict[str, str]:
        return qualified_names(self.db, list(keys), lang)

    def _cached_names(self, keys: tuple[str, ...], lang: str) -> dict[str, str]:
        """:func:`kb.entities.qualified_names` of one mention's candidates (cached; see :meth:`_prefetch`)."""
        found = self._name_cache.get((keys, lang))
        return found if found is not None else self._prefetch([keys], [], lang)[0][0]

    def _title(self, key: str, lang: str) -> str | None:
        """The page title of ``key`` in ``lang``, else its label (cached; see :meth:`_prefetch`)."""
        if (key, lang) in self._title_cache:
            return self._title_cache[(key, lang)]
        return self._prefetch([], [key], lang)[1][0]

    def _prefetch(
        self, groups: list[tuple[str, ...]], keys: list[str], lang: str
    ) -> tuple[list[dict[str, str]], list[str | None]]:
        """Qualified names of each group of candidates and titles of ``keys``, read from the kb for all of them at
        once (a few statements per 500 keys, not a few per mention) and cached (up to :data:`NAMES_CACHED` each)."""
        new = [g for g in dict.fromkeys(groups) if (g, lang) not in self._name_cache]
        named = dict(zip(new, qualified_names_of_groups(self.db, [list(g) for g in new], lang))) if new else {}
        titled: dict[str, str | None] = {}
        if unknown := [k for k in dict.fromkeys(keys) if (k, lang) not in self._title_cache]:
            entities = self.db.entities(unknown)
            for key in unknown:
                e = entities.get(key)
                titled[key] = (e.titles.get(lang) or e.labels.get(lang)) if e is not None else None
        for cache, fresh in ((self._name_cache, named), (self._title_cache, titled)):
            if len(cache) + len(fresh) > NAMES_CACHED:
                cache.clear()
        self._name_cache.update({(g, lang): v for g, v in named.items()})
        self._title_cache.update({(k, lang): v for k, v in titled.items()})
        names = [
            named[g] if g in named else self._name_cache.get((g, lang)) or self._qualified(g, lang) for g in groups
        ]
        titles = [titled[k] if k in titled else self._title_cache.get((k, lang)) for k in keys]
        return names, titles
