"""The :class:`Service`: the model and the kb, loaded once, and what each endpoint computes from them (plain data in
and out; :mod:`mluke.serve.app` puts HTTP around it). Everything that touches them runs on the
:class:`mluke.serve.batching.Batcher`'s one worker thread."""

from __future__ import annotations

import functools
import hashlib
import math
import os
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, cast

from kb.db import EntityDB
from kb.entities import qualified_names
from kb.errors import MlukeError, NotFoundError
from mluke.linking.linker import Linker
from mluke.options import LinkOptions
from mluke.results import LinkedMention
from mluke.serve.batching import Batcher
from mluke.serve.config import ServeConfig
from mluke.serve.offsets import Utf16, lone_surrogate

#: Files whose bytes identify a model (their hash is its fingerprint); the first MiB of the weights is read.
_IDENTITY_FILES = ("config.json", "entity_vocab.json", "model.safetensors", "pytorch_model.bin")


class RequestError(MlukeError):
    """A request the service refuses: ``status`` (a 4xx) and the request ``field`` at fault."""

    def __init__(self, field: str | None, message: str, status: int = 422) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.status = status


def fingerprint(folder: Path) -> str:
    """A short hash of a checkpoint folder's config, entity vocabulary and weights (their sizes and first MiB)."""
    digest = hashlib.sha256()
    for name in _IDENTITY_FILES:
        path = folder / name
        if path.is_file():
            digest.update(f"{name}:{path.stat().st_size}:".encode())
            with path.open("rb") as f:
                digest.update(f.read(1 << 20))
    return digest.hexdigest()[:16]


def qid(key: str | None) -> str | None:
    """``key`` when it is a Wikidata QID (``Q`` and digits), else ``None``."""
    return key if key and key[0] == "Q" and key[1:].isdigit() else None


class Service:
    """The loaded model and kb, and the computations of the endpoints.

    Args:
        config: what to serve (:class:`mluke.serve.config.ServeConfig`).
        linker: an already built :class:`mluke.Linker` (tests, embedding); default: one made from ``config``.
    """

    def __init__(self, config: ServeConfig, linker: Linker | None = None) -> None:
        self.config = config
        self.limits = config.limits
        self.linker = linker if linker is not None else Linker(config.model, config.db, device=config.device)
        self.db: EntityDB = self.linker.db
        self.languages = tuple(self.db.languages)
        self.served_by = self._identity()
        self.batcher = Batcher(
            self._link_batch,
            batch_texts=self.limits.batch_texts,
            queue_texts=self.limits.queue_texts,
            gather_ms=self.limits.gather_ms,
            batching=self.limits.batching,
        )
        self._kind = functools.lru_cache(maxsize=1 << 14)(self._entity_kind)
        self._label = functools.lru_cache(maxsize=1 << 16)(self._entity_label)

    def _identity(self) -> dict[str, Any]:
        from mluke import __version__

        source = self.config.model
        if source is None:
            from mluke.demo.model import demo_model

            folder: Path | None = demo_model(progress=False)
        else:
            folder = Path(source) if Path(source).is_dir() else None
        name = str(folder) if folder is not None else str(source)
        info = self.db.info()
        return {
            "model": name,
            "model_fingerprint": fingerprint(folder) if folder is not None else "",
            "kb": str(self.db.path),
            "kb_built": info.get("created"),
            "version": __version__,
        }

    # -- checks ----------------------------------------------------------------------------------
    def check_lang(self, lang: str) -> str:
        """``lang`` if the kb has it, else a :class:`RequestError` naming ``lang``."""
        if lang not in self.languages:
            raise RequestError("lang", f"unknown language {lang!r}: expected one of {', '.join(self.languages)}")
        return lang

    def check_texts(self, texts: list[str], field: str = "texts", *, empty_ok: bool = False) -> list[str]:
        """The texts if the service takes them: not too many, not too long, not empty, valid Unicode."""
        if not texts:
            raise RequestError(field, "expected at least one text")
        if len(texts) > self.limits.max_texts:
            raise RequestError(field, f"{len(texts)} texts; this service takes at most {self.limits.max_texts}", 413)
        for i, text in enumerate(texts):
            where = f"{field}[{i}]" if field == "texts" else field
            if len(text) > self.limits.max_text_chars:
                raise RequestError(
                    where, f"{len(text):,} characters; this service takes at most {self.limits.max_text_chars:,}", 413
                )
            if not empty_ok and not text.strip():
                raise RequestError(where, "empty text: expected some text to link")
            bad = lone_surrogate(text)
            if bad is not None:
                raise RequestError(where, f"not valid Unicode text (a lone surrogate at character {bad})")
        return texts

    def check_count(self, field: str, value: int, high: int) -> int:
        if value > high:
            raise RequestError(field, f"{value} is more than this service gives ({high})", 413)
        return value

    # -- linking ---------------------------------------------------------------------------------
    def _link_batch(self, key: Hashable, texts: list[str], items: list[Any]) -> Sequence[Any]:
        lang, options, given = cast("tuple[str, LinkOptions, bool]", key)
        spans = [[(a, a + n) for a, n in s] for s in items] if given else None
        return self.linker.link(texts, lang, options=options, spans=spans)

    def link_options(self, fields: dict[str, Any]) -> LinkOptions:
        """The :class:`mluke.LinkOptions` of a request's fields (``candidates``: a count here, a flag there)."""
        k = self.check_count("candidates", fields["candidates"], self.limits.max_candidates)
        return LinkOptions(
            method=fields["method"],
            prior_weight=float(fields["prior_weight"]),
            nil_threshold=None if fields["nil_threshold"] is None else float(fields["nil_threshold"]),
            candidates=k > 0,
            window_chars=fields["window_chars"],
        )

    async def link(
        self, texts: list[str], lang: str, options: LinkOptions, spans: list[list[tuple[int, int]]] | None = None
    ) -> list[list[LinkedMention]]:
        """The linked mentions of each text (``spans``: given [start, length] per text), batched with others."""
        key = (lang, options, spans is not None)
        return await self.batcher.link(key, texts, spans if spans is not None else [None] * len(texts))

    def mention_json(self, m: LinkedMention, lang: str, k: int, utf16: Utf16) -> dict[str, Any]:
        """A linked mention as the API gives it (:class:`mluke.serve.schemas.LinkedMention`); ``utf16``: its text's
        offsets."""
        top = m.key or (m.candidates[0]["key"] if m.candidates else None)
        out: dict[str, Any] = {
            "start": m.start,
            "end": m.end,
            "start_utf16": utf16(m.start),
            "end_utf16": utf16(m.end),
            "surface": m.surface,
            "key": m.key,
            "qid": qid(m.key),
            "label": self._label(m.key, lang) if m.key else None,
            "name": m.name,
            "title": m.title,
            "kind": self.kind(top) if top else None,
            "confidence": m.confidence,
            "score": _finite(m.score),
            "prior": m.prior,
            "link_probability": m.link_probability,
            "nil": m.nil,
        }
        if k:
            out["candidates"] = [
                {
                    "key": c["key"],
                    "qid": qid(c["key"]),
                    "name": c.get("name"),
                    "prior": c.get("prior", 0.0),
                    "score": _finite(c.get("score")),
                    "model": _finite(c.get("model")),
                }
                for c in (m.candidates or [])[:k]
            ]
        return out

    def kind(self, key: str) -> str | None:
        """The kb's kind of the entity ``key`` (country, city, ...; ``None``: none or no such entity), cached."""
        return self._kind(key)

    def _entity_label(self, key: str, lang: str) -> str | None:
        return self.db.label(key, lang, ("en",))

    def _entity_kind(self, key: str) -> str | None:
        entity = self.db.get(key)
        return entity.kind if entity is not None else None

    def linked_json(self, text: str, found: list[LinkedMention], lang: str, k: int) -> list[dict[str, Any]]:
        utf16 = Utf16(text)
        return [self.mention_json(m, lang, k, utf16) for m in found]

    # -- the stages and the kb -------------------------------------------------------------------
    def mentions(self, texts: list[str], lang: str) -> list[list[dict[str, Any]]]:
        """Mention detection alone: spans, surfaces, link probabilities (stored or estimated)."""
        out = []
        for text in texts:
            utf16 = Utf16(text)
            found = self.linker.estimator.fill(text, self.linker.index.detect(text, lang), lang)
            out.append(
                [
                    {
                        "start": m.start,
                        "end": m.end,
                        "start_utf16": utf16(m.start),
                        "end_utf16": utf16(m.end),
                        "surface": m.surface,
                        "link_probability": m.link_probability,
                        "candidates": len(m.candidates),
                    }
                    for m in found
                ]
            )
        return out

    def candidates(self, surfaces: list[str], lang: str, k: int) -> list[dict[str, Any]]:
        """Each surface's candidates with priors and qualified names, best first."""
        out = []
        for surface in surfaces:
            found = self.linker.index.candidates(lang, surface)[:k]
            names = qualified_names(self.db, [c.key for c in found], lang) if found else {}
            out.append(
                {
                    "surface": surface,
                    "link_probability": self.linker.index.link_probability(lang, surface),
                    "candidates": [
                        {"key": c.key, "qid": qid(c.key), "name": names.get(c.key), "prior": c.prior, "count": c.count}
                        for c in found
                    ],
                }
            )
        return out

    def entity(self, key: str) -> dict[str, Any]:
        """Names in every language, qualified names (a description), kind and facts of ``key``."""
        try:
            entity = self.db.entity(key)
        except NotFoundError:
            raise RequestError("key", f"no entity {key!r} in the kb", 404) from None
        langs = sorted(set(entity.labels) | set(entity.titles))
        names = {lang: entity.name(lang, ()) or key for lang in langs}
        qualified = {lang: qualified_names(self.db, [key], lang)[key] for lang in langs}
        facts = [
            {
                "property": f.property,
                "property_label": self.db.property_label(f.property, "en"),
                "object": f.object,
                "object_label": self.db.label(f.object, "en", ("en",)),
            }
            for f in self.db.facts(subject=key)[:200]
        ]
        return {
            "key": key,
            "qid": qid(key),
            "kind": entity.kind,
            "names": names,
            "titles": dict(entity.titles),
            "aliases": {lang: list(a) for lang, a in entity.aliases.items()},
            "qualified_names": qualified,
            "facts": facts,
        }

    def probe(self, request: dict[str, Any]) -> dict[str, Any]:
        """A cloze question (:func:`mluke.probe`) with the served model and kb."""
        from mluke.probing.cloze import probe

        wanted = request.get("model")
        if wanted not in (None, self.served_by["model"], os.path.basename(self.served_by["model"])):
            raise RequestError("model", f"this service serves only {self.served_by['model']!r} (GET /info)")
        result = probe(
            request["template"],
            request["lang"],
            subjects=request.get("subjects"),
            candidates=request.get("candidates"),
            model=self.linker.bundle,
            db=self.db,
            mode=request.get("mode"),
            top_k=request["top_k"],
            threshold=request.get("threshold"),
        )
        return {
            "template": result.template,
            "lang": result.lang,
            "relation": result.relation,
            "mode": result.mode,
            "rows": [
                {
                    "subject": r.subject,
                    "label": r.label,
                    "answers": [
                        {"key": p.key, "label": p.label, "score": p.score, "source": p.source} for p in r.predictions
                    ],
                    "gold": list(r.gold),
                }
                for r in result.rows
            ],
            "notes": list(result.notes),
        }


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
