"""Wikitext to plain text with link spans: the fast reader behind the Wikipedia dump builder.

:func:`parse_wikitext` turns an article's wikitext into the text a reader sees
(prose, headings, list items) and the article links in it, as
``(start, end, target title)`` spans over that text (Python string indices, i.e.
code points; an emoji outside the BMP is one position).

What it does, in this order, with a few C-speed regular expressions and one
Python-level loop per link:

- drops comments, templates and parser functions (``{{...}}``, ``{{{...}}}``,
  nested to any depth), tables (``{| ... |}``, also indented: ``:{| ... |}``),
  and tags whose content is not prose (:data:`DROPPED_TAGS`): ``<ref>``, ``<math>``,
  ``<gallery>``, ``<syntaxhighlight>``...;
  keeps the content of ``<nowiki>`` literally (never parsed as markup);
- drops file/image/media and category links (with nested links in captions)
  and interlanguage links, using the namespace names of the dump's own
  ``<siteinfo>`` plus the canonical English ones that MediaWiki accepts everywhere;
- keeps the anchor text of other links: ``[[T]]``, ``[[T|a]]``, ``[[T#s|a]]``,
  ``[[T]]suffix`` (the link trail joins the anchor: the letters of MediaWiki's ``$linkTrail``
  for the language, see :data:`LINK_TRAILS`; ``<nowiki/>`` ends it), the pipe trick ``[[T (x)|]]``;
  links into other namespaces (``[[Help:X|x]]``), section links (``[[#s]]``) and
  inter-wiki links (``[[:fr:X]]``, ``[[wikt:x]]``) stay as text but are not
  article links;
- strips external-link brackets (``[http://x text]`` -> ``text``), bold/italic
  quotes, heading ``=``, list markers, remaining HTML tags and magic words, and
  decodes HTML entities (``&nbsp;``, ``&amp;``).

Broken markup (unclosed templates, links, comments or tags) never raises: an
unclosed ``{{`` or ``[[`` is dropped as two characters, an unclosed comment or
table runs to the end of the page, as MediaWiki renders them.

It is not a full MediaWiki parser: templates are not expanded (their text is
lost, as with ``mwparserfromhell``'s ``strip_code``). See benchmarks/RESULTS.md
for its speed against ``mwparserfromhell``.
"""

from __future__ import annotations

import re

from kb.sources.wiki_links import LinkRules, classify_target, display
from kb.sources.wiki_markup import TRAIL_STOP, put_back, restore, strip_markup

_LINK_OPEN_RE = re.compile(r"\[\[")
_LINK_CLOSE_RE = re.compile(r"\]\]")


def parse_wikitext(wikitext: str, rules: LinkRules) -> tuple[str, list[tuple[int, int, str]]]:
    """Plain text of an article and its article links ``[(start, end, title)]``.

    ``text[start:end]`` is the link's anchor text (with its trail); ``title`` is the
    normalised target title (before redirects), without the section.
    """
    saved: list[str] = []
    text = strip_markup(wikitext, saved)
    if "[[" not in text:
        return restore(text, saved).rstrip(), []
    text, links = _read_links(text, rules, saved)
    stripped = text.strip()  # removed links may leave spaces at the ends
    lead = text.find(stripped[:1]) if stripped else 0
    if lead:
        links = [(s - lead, e - lead, t) for s, e, t in links]
    return stripped, links


def _read_links(
    text: str, rules: LinkRules, saved: list[str], level: int = 0
) -> tuple[str, list[tuple[int, int, str]]]:
    pieces: list[str] = []
    links: list[tuple[int, int, str]] = []
    pos = 0  # length of the output so far
    i = 0  # read position in ``text``
    trail_match = rules._trail_re.match if rules._trail_re is not None else None  # type: ignore[attr-defined]
    tokens = [(m.start(), m.end(), True) for m in _LINK_OPEN_RE.finditer(text)]
    tokens.extend((m.start(), m.end(), False) for m in _LINK_CLOSE_RE.finditer(text))
    tokens.sort()
    n = len(tokens)
    k = 0
    while k < n:
        start, stop, is_open = tokens[k]
        if i < start:
            before = text[i:start]
            if saved or "&" in before or TRAIL_STOP in before:
                before = restore(before, saved)
            if before[:1] == " " and pieces and pieces[-1][-1:] == " ":
                before = before[1:]  # a dropped link leaves no double space
            pieces.append(before)
            pos += len(before)
        i = stop
        k += 1
        if not is_open:  # a stray closer: dropped
            continue
        if k < n and not tokens[k][2]:  # the usual case: no link inside this one
            j = k + 1
        else:  # find the matching closer, counting nested links (file captions)
            depth, j = 1, k
            while j < n and depth:
                depth += 1 if tokens[j][2] else -1
                j += 1
            if depth:  # unclosed: the two brackets are dropped
                continue
        close_start, i = tokens[j - 1][0], tokens[j - 1][1]
        nested = j - 1 > k
        k = j
        target, sep, anchor = text[stop:close_start].partition("|")
        kind, title = classify_target(rules, put_back(target, saved))
        if kind == "hidden":
            continue
        if nested:  # links inside an anchor: keep their text only
            inner = anchor if sep else target
            shown = (
                _read_links(inner, rules, saved, level + 1)[0]
                if level < 8
                else restore(inner.replace("[[", "").replace("]]", ""), saved)
            )
        else:
            shown = anchor if sep and anchor and not anchor.isspace() else display(target, anchor if sep else None)
            if saved or "&" in shown or TRAIL_STOP in shown:
                shown = restore(shown, saved)
        if trail_match is not None:
            tm = trail_match(text, i)
            if tm is not None:
                shown += tm.group()
                i = tm.end()
        if kind == "article":
            stripped = shown.strip()
            if stripped:
                lead = shown.find(stripped[0])
                links.append((pos + lead, pos + lead + len(stripped), title))
        pieces.append(shown)
        pos += len(shown)
    rest = text[i:]
    if rest[:1] == " " and pieces and pieces[-1][-1:] == " ":
        rest = rest[1:]
    pieces.append(restore(rest, saved) if saved or "&" in rest or TRAIL_STOP in rest else rest)
    return "".join(pieces), links
