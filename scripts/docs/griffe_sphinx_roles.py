"""A griffe extension that renders the Sphinx roles of our docstrings in the API reference.

Docstrings say :func:`probe`, :class:`~kb.EntityDB` or :mod:`kb.errors`. Markdown would show the role
verbatim, so each role becomes an optional cross-reference: a link where the target is documented on the
site, else the name as code. Relative names are resolved in the scope of the object whose docstring
holds them (griffe's own resolution), so ``probe`` in ``mluke``'s docstring points at ``mluke.probe``.
The .py files are not changed; only what mkdocstrings renders.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|type):`([^`]+)`")


def _target(text: str) -> tuple[str, str]:
    """(display, target) of a role's text: ``~a.b`` shows ``b``; ``title <a.b>`` shows ``title``."""
    explicit = re.fullmatch(r"(.+?)\s*<([^>]+)>", text)
    if explicit:
        return explicit.group(1), explicit.group(2).lstrip("~!")
    target = text.lstrip("!")
    if target.startswith("~"):
        target = target[1:]
        return target.rsplit(".", 1)[-1], target
    return target, target


def _resolve(obj: griffe.Object, target: str) -> str:
    """The absolute path of ``target`` as seen from ``obj``, or ``target`` itself when it cannot be found."""
    first, _, rest = target.partition(".")
    first = first.rstrip("()")
    scope: griffe.Object | None = obj
    while scope is not None:
        try:
            path = scope.resolve(first)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            scope = scope.parent
            continue
        return f"{path}.{rest}" if rest else path
    return target.rstrip("()")


def render(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs cross-reference."""

    def replace(match: re.Match[str]) -> str:
        display, target = _target(match.group(1))
        identifier = html.escape(_resolve(obj, target), quote=True)
        return f'<autoref identifier="{identifier}" optional><code>{html.escape(display)}</code></autoref>'

    return ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles in every docstring of a package once the whole package is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = render(obj.docstring.value, obj)
            stack.extend(member for member in obj.members.values() if not member.is_alias)

    def on_package_loaded(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """The same hook under its griffe 1.x name (rewriting twice changes nothing: no role is left)."""
        self.on_package(pkg=pkg, **kwargs)
