"""Wikitext markup other than links: what :func:`kb.sources.wikitext.parse_wikitext` removes before it
reads the links (comments, templates, tables, tags whose content is not prose, external-link brackets,
formatting), with ``<nowiki>`` contents kept aside as placeholders and put back afterwards."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_DROP_TAGS = (
    "ref|references|math|chem|ce|score|timeline|gallery|syntaxhighlight|source|graph|mapframe|maplink"
    "|templatedata|templatestyles|imagemap|hiero|inputbox|categorytree|indicator|section|charinsert"
    "|pre|code|noinclude|includeonly|onlyinclude"
)
#: Tags whose content is dropped (not prose), as documented above.
DROPPED_TAGS = frozenset(_DROP_TAGS.split("|"))
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# The page's own characters of the placeholder plane (private use, group 2) are saved like
# <nowiki> contents, so that none of them is taken for a placeholder when the pieces are put back.
_NOWIKI_RE = re.compile(
    r"<nowiki\s*>(.*?)</nowiki\s*>|<nowiki\s*/>|([\U000f0000-\U000ffffd])", re.DOTALL | re.IGNORECASE
)
_DROP_TAG_RE = re.compile(
    rf"<({_DROP_TAGS})(?:\s[^>]*?)?/>|<({_DROP_TAGS})(?:\s[^>]*)?>.*?</\2\s*>", re.DOTALL | re.IGNORECASE
)
# Every pattern starts with a literal, so that the regex engine scans for it at C speed.
_OPEN_BRACES_RE = re.compile(r"\{\{+")
_CLOSE_BRACES_RE = re.compile(r"\}\}+")
_TABLE_RE = re.compile(r"\n[ \t:]*(?:\{\||\|\})")
_EXTLINK_RE = re.compile(r"\[(?:https?:|ftp:|mailto:|//)[^\s\[\]<>]*(?:[ \t]+([^\]\n]*))?\]", re.IGNORECASE)
_HEADING_RE = re.compile(r"\n(=+)[ \t]*([^\n]*?)[ \t]*\1[ \t]*(?=\n|$)")
_QUOTES_RE = re.compile(r"''+")
_LIST_RE = re.compile(r"\n(?:[*#:;]+[ \t]*|----+[ \t]*(?=\n|$))")
_TAG_RE = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")
_MAGIC_RE = re.compile(r"__[A-Z]+__")
_BLANK_LINES_RE = re.compile(r"\n[ \t\u00a0]*\n[ \t\u00a0\n]*")
_SPACES_RE = re.compile(r"  +")
_LINK_END_RE = re.compile(r"\]\](?=<|''|\{\{)")
_PLACEHOLDER_RE = re.compile("[\U000f0000-\U000ffffc]")
# Ends a link trail where markup was removed (``<nowiki/>``, quotes or a tag right after ``]]``);
# the last code point of the placeholder plane, never an index into the saved pieces.
TRAIL_STOP = "\U000ffffd"
_PLANE_RE = re.compile("[\U000f0000-\U000ffffd]")
_PLACEHOLDER_BASE = 0xF0000


def _tokens(
    text: str, open_re: re.Pattern[str], close_re: re.Pattern[str] | None, is_open: Callable[[str], bool] | None = None
) -> list[tuple[int, int, bool, int]]:
    """``(start, end, is_opener, levels)`` of the tokens in ``text``, in order.

    With two patterns, a run of brackets counts one level per pair. With one
    pattern, ``is_open`` tells the openers and every token is one
    level: ``\n:{|`` (a colon-indented table) opens one table, not two.
    """
    if close_re is None:
        return [(m.start(), m.end(), is_open(m.group()), 1) for m in open_re.finditer(text)]  # type: ignore[misc]
    toks = [(m.start(), m.end(), True, max(1, (m.end() - m.start()) // 2)) for m in open_re.finditer(text)]
    toks.extend((m.start(), m.end(), False, (m.end() - m.start()) // 2) for m in close_re.finditer(text))
    toks.sort()
    return toks


def _strip_balanced(text: str, toks: list[tuple[int, int, bool, int]], unclosed_to_end: bool) -> str:
    """Remove the spans between matching opening and closing tokens (one pass, with a stack).

    A closer with nothing open is dropped; an unclosed opener is dropped alone, or with
    the rest of the text if ``unclosed_to_end``.
    """
    stack: list[list[int]] = []  # [start, levels still open]
    cut: list[tuple[int, int]] = []
    for start, end, is_open, levels in toks:
        if is_open:
            stack.append([start, end, levels])
            continue
        if not stack:
            cut.append((start, end))
            continue
        opened_at = -1
        while levels and stack:
            top = stack[-1]
            used = min(levels, top[2])
            top[2] -= used
            levels -= used
            if top[2] == 0:
                opened_at = stack.pop()[0]
        if opened_at >= 0:
            cut.append((opened_at, end))
    if stack:
        if unclosed_to_end:
            cut.append((stack[0][0], len(text)))
        else:
            cut.extend((start, end) for start, end, _ in stack)
    if not cut:
        return text
    cut.sort()
    out: list[str] = []
    keep_from = 0
    for start, end in cut:
        if start >= keep_from:
            out.append(text[keep_from:start])
            keep_from = end
        elif end > keep_from:
            keep_from = end
    out.append(text[keep_from:])
    return "".join(out)


def _protect_nowiki(text: str, saved: list[str]) -> str:
    def keep(m: re.Match[str]) -> str:
        piece = m.group(2) if m.group(2) is not None else m.group(1)
        if piece is None:  # <nowiki/> still ends a link trail and a line-start marker, as in MediaWiki
            return TRAIL_STOP
        saved.append(piece)
        return chr(_PLACEHOLDER_BASE + len(saved) - 1) if len(saved) < 0xFFFD else ""

    return _NOWIKI_RE.sub(keep, text)


def _end_link_trails(text: str) -> str:
    """Put a trail stop after every ``]]`` that a tag, a quote run or a template follows.

    MediaWiki reads a link trail before it renders quotes and tags, so ``'''[[T]]'''s``,
    ``[[T]]<ref>..</ref>s`` and ``[[T]]<br>s`` show ``T`` as the anchor; removing the
    markup first would join ``s`` to it. A template right after a link (``{{sfn|..}}``,
    ``{{'s}}``, ``{{nbsp}}``) almost always expands to something that is not a letter,
    so it ends the trail too. The stop is removed with the placeholders. (Comments are
    removed before this: ``[[T]]<!-- -->s`` is ``Ts``, as in MediaWiki.)
    """
    return _LINK_END_RE.sub("]]" + TRAIL_STOP, text)


def restore(text: str, saved: list[str]) -> str:
    """Decode HTML entities and put ``<nowiki>`` contents back (both change lengths: done per piece)."""
    if TRAIL_STOP in text:
        text = text.replace(TRAIL_STOP, "")
    if "&" in text:
        text = html.unescape(text)
    return put_back(text, saved)


def put_back(text: str, saved: list[str]) -> str:
    """Put the saved pieces back in place of their placeholders."""
    if saved and _PLACEHOLDER_RE.search(text):
        text = _PLACEHOLDER_RE.sub(lambda m: saved[ord(m.group()) - _PLACEHOLDER_BASE], text)
    return text


def strip_markup(wikitext: str, saved: list[str]) -> str:
    """Everything but links: comments, tags, templates, tables, external links, formatting.

    ``<nowiki>`` contents are replaced by placeholders appended to ``saved``.
    """
    text = "\n" + wikitext  # line-start patterns look for "\n"
    if "<!--" in text:
        text = _COMMENT_RE.sub("", text)
    # Placeholders and trail stops are made below: the page's own characters of their plane are saved first.
    if ("nowiki" in text and "<" in text) or _PLANE_RE.search(text):
        text = _protect_nowiki(text, saved)
    if "]]" in text and ("<" in text or "''" in text or "{{" in text):
        text = _end_link_trails(text)
    if "<" in text:
        text = _DROP_TAG_RE.sub("", text)
    if "{{" in text or "}}" in text:
        text = _strip_balanced(text, _tokens(text, _OPEN_BRACES_RE, _CLOSE_BRACES_RE), unclosed_to_end=False)
    if "{|" in text:
        text = _strip_balanced(text, _tokens(text, _TABLE_RE, None, lambda t: "{|" in t), unclosed_to_end=True)
    if "[" in text:
        text = _EXTLINK_RE.sub(_extlink_text, text)
    if "\n=" in text:
        text = _HEADING_RE.sub(r"\n\2", text)
    if "''" in text:
        text = _QUOTES_RE.sub("", text)
    text = _LIST_RE.sub("\n", text)
    if "<" in text:
        text = _TAG_RE.sub("", text)
    if "__" in text:
        text = _MAGIC_RE.sub("", text)
    text = _BLANK_LINES_RE.sub("\n\n", text)
    text = _SPACES_RE.sub(" ", text)
    return text.strip()


def _extlink_text(m: re.Match[str]) -> str:
    return m.group(1) or ""
