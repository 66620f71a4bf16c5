"""parse_wikitext on the cases of issue 26: indented tables, trails ended by markup, MediaWiki's trail letters."""

from __future__ import annotations

import pytest

from kb.sources.wiki_links import LinkRules
from kb.sources.wikitext import parse_wikitext

EN = LinkRules("en")


def _links(text: str, rules: LinkRules = EN) -> tuple[str, list[tuple[str, str]]]:
    plain, links = parse_wikitext(text, rules)
    return plain, [(plain[s:e], t) for s, e, t in links]


@pytest.mark.parametrize("indent", [":", "::", " :", ""])
def test_an_indented_table_ends_at_its_closer(indent):
    page = f"Before [[A]].\n{indent}{{| class=wikitable\n|-\n| a || [[In table]]\n|}}\nAfter [[Link]] end."
    assert _links(page) == ("Before A.\nAfter Link end.", [("A", "A"), ("Link", "Link")])


def test_nested_and_consecutive_indented_tables():
    page = ":{| class=x\n| outer\n{| class=y\n| [[Inner]]\n|}\n|}\nmiddle [[M]]\n::{|\n| [[T2]]\n|}\nend [[E]]s"
    assert _links(page) == ("middle M\nend Es", [("M", "M"), ("Es", "E")])


def test_an_unclosed_indented_table_still_runs_to_the_end():
    assert _links("a [[A]]\n:{|\n| [[B]]\nno closer") == ("a A", [("A", "A")])


@pytest.mark.parametrize(
    "page, plain, anchor",
    [
        ("x [[Target]]<nowiki/>text y", "x Targettext y", "Target"),
        ("x '''[[Target]]'''s y", "x Targets y", "Target"),
        ("x [[Target]]''s'' y", "x Targets y", "Target"),
        ("x [[Target]]<ref>note</ref>s y", "x Targets y", "Target"),
        ("x [[Target]]<br />s y", "x Targets y", "Target"),
        ("x [[Target]]<nowiki>s</nowiki> y", "x Targets y", "Target"),
        ("x [[Target]]{{sfn|Smith|2001}}s y", "x Targets y", "Target"),
        ("x [[Target]]<!-- c -->s y", "x Targets y", "Targets"),  # comments go before MediaWiki reads trails
        ("x [[Target]]s y", "x Targets y", "Targets"),
    ],
)
def test_markup_after_the_link_ends_its_trail(page, plain, anchor):
    assert _links(page) == (plain, [(anchor, "Target")])


def test_nowiki_at_line_start_keeps_the_list_marker():
    assert _links("a\n<nowiki/>* not a list [[A]]") == ("a\n* not a list A", [("A", "A")])


@pytest.mark.parametrize(
    "lang, page, anchor",
    [
        ("en", "[[Japan]]ese", "Japanese"),
        ("en", "[[Japan]]Ese", "Japan"),  # MediaWiki's English trail is [a-z]+
        ("en", "[[Caf]]é", "Caf"),
        ("de", "[[Bär]]en und [[Fluss]]ä", "Bären"),
        ("ru", "[[Москва]]у", "Москвау"),
        ("ru", "[[Москва]]Х", "Москва"),
        ("ar", "[[مصر]]ية", "مصرية"),
        ("ar", "[[مصر]]\u064eي", "مصر\u064eي"),  # Arabic combining marks belong to the trail
        ("zh", "[[東京]]abc", "東京abc"),
        ("zh", "[[東京]]都", "東京"),
        ("ja", "[[東京]]は", "東京"),
        ("ja", "[[東京]]abc", "東京abc"),  # MessagesJa.php has no $linkTrail: English's applies
        ("fr", "[[Paris]]ien", "Parisien"),  # no MediaWiki table here: any letters, as before
    ],
)
def test_link_trails_follow_mediawikis_letters(lang, page, anchor):
    _plain, links = _links(page, LinkRules(lang))
    assert links[0][0] == anchor


def test_the_pages_own_private_use_characters_survive_the_trail_marks():
    # The trail marks are placeholders of plane 15; the page's own characters there stay themselves.
    assert _links("0 '''[[0|\U000f0001]]'''s \U000f0000") == ("0 \U000f0001s \U000f0000", [("\U000f0001", "0")])
