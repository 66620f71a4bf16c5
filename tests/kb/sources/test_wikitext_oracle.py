"""Differential test: every article link mwparserfromhell sees outside templates (see
tests/kb/sources/wikitext_oracle.py for what counts as kept) is one of ours, with the same
target and anchor, on hand-written pages shaped like real articles and on seeded generated ones."""

from __future__ import annotations

import pytest

from tests.kb.sources.wikitext_oracle import (
    MEDIAWIKI_TRAILS,
    PageGenerator,
    missing,
    oracle_links,
    our_links,
)

# Pieces of real articles' layouts (infoboxes, hatnotes, tables, galleries, references, files,
# categories, interlanguage links, navboxes), one page per language.
PAGES = {
    "en": """{{Short description|Capital of Japan}}
{{Infobox settlement
| name = Tokyo
| native_name = {{lang|ja|東京}}
| subdivision_name = [[Japan]]
| leader_name = {{ill|Yuriko Koike|ja|小池百合子}}
}}
'''Tokyo''' ({{lang-ja|東京}}), officially the '''[[Tokyo Metropolis]]''',<ref name="census">{{cite web|title=[[Census]] 2020|url=https://example.org}}</ref> is the [[Capital city|capital]] of [[Japan]]ese politics and the most populous city in the [[world]].<ref name="census" />
{{Main|History of Tokyo}}
== History ==
[[File:Edo P2.jpg|thumb|upright=1.2|[[Edo]] in the 17th century, from a [[Byōbu|folding screen]]]]
Tokyo was originally a fishing village named [[Edo]]<nowiki/>an. It became a prominent political centre in 1603 when it became the seat of the [[Tokugawa shogunate]]. The [[Meiji Restoration|Restoration]]s ended the [[Edo period|period]]; '''[[Emperor Meiji]]'''s court moved there.
:{| class="wikitable"
|+ Wards
|-
! Ward !! Population
|-
| [[Chiyoda, Tokyo|Chiyoda]] || 66,680
|-
| [[Shinjuku]] || 346,235
|}
After the war, [[Tokyo Tower]] (1958) and the [[1964 Summer Olympics|Olympics]] marked its recovery.<ref>{{harvnb|Smith|2001}}, see [[Olympic Games]]</ref>
=== Geography ===
* The [[Sumida River|Sumida]] and [[Tama River]]s cross the city.
* ''[[Mount Fuji]]'' is visible on clear days.<!-- [[Hidden link]] -->
# [[Izu Islands]]
; Climate : [[Humid subtropical climate|humid subtropical]]
<gallery mode="packed">
File:Tokyo Tower.jpg|[[Tokyo Tower]] at night
File:Skytree.jpg|The [[Tokyo Skytree]]
</gallery>
<div style="float:right"><small>See also [[Greater Tokyo Area]].</small></div>
The [[Tōkaidō Shinkansen]]<br />line links it to [[Osaka]]. [[AT&amp;T]] and [[Yamanote Line|the ''Yamanote'' line]] too. <code>[[Not shown]]</code> <math>x^2</math>
[[Help:Contents|help]] [[:Category:Tokyo]] [[wikt:Tokyo]] [[:fr:Tokyo|French]] [[#History|above]] [[Paris (France)|]]
{{Navbox|list1=[[Kantō region]] · [[Saitama]]}}
== References ==
{{Reflist}}
[[Category:Tokyo| ]]
[[Category:Capitals in Asia]]
[[de:Tokio]]
[[ja:東京都]]""",
    "de": """{{Infobox Ort in Deutschland
|Name = Berlin
|Bundesland = [[Berlin]]
}}
'''Berlin''' ist die [[Hauptstadt]] und ein [[Land (Deutschland)|Land]] der [[Bundesrepublik Deutschland]].<ref>{{Internetquelle |url=https://example.org |titel=[[Amt für Statistik]]}}</ref> Mit rund 3,8 Millionen Einwohnern ist Berlin die bevölkerungsreichste [[Gemeinde]] [[Deutschland]]s und liegt an der [[Spree]]<nowiki/>n.
[[Datei:Berlin Brandenburger Tor.jpg|mini|Das [[Brandenburger Tor]]]]
== Geschichte ==
{{Hauptartikel|Geschichte Berlins}}
Die [[Mark Brandenburg|Mark]] wurde 1157 gegründet. Unter [[Friedrich II. (Preußen)|Friedrich II.]] wuchs die Stadt; nach dem [[Zweiter Weltkrieg|Zweiten Weltkrieg]] teilte die [[Berliner Mauer|Mauer]] sie.
{| class="wikitable sortable"
! Bezirk !! Einwohner
|-
| [[Mitte (Bezirk)|Mitte]] || 384.172
|-
| [[Pankow]] || 410.716
|}
* '''[[Bär]]'''en im Wappen, [[Fluss]]läufe und [[Havel]]ufer
* [[Köln]]er Dom ist kein Berliner Bau.<ref name="a">[[Kölner Dom]]</ref><ref name="a" />
<gallery>
Datei:Reichstag.jpg|[[Reichstagsgebäude]]
</gallery>
[[Hilfe:Übersicht|Hilfe]] [[Vorlage:Navigationsleiste|Vorlage]]
[[Kategorie:Berlin| ]]
[[en:Berlin]]""",
    "ru": """{{Карточка города
|Русское название = Москва
|Страна = [[Россия]]
}}
'''Москва́''' — [[столица]] [[Россия|Российской Федерации]], [[город федерального значения]], административный центр [[Центральный федеральный округ|Центрального федерального округа]].<ref>{{cite web|title=[[Росстат]]}}</ref> Крупнейший по численности населения город [[Европа|Европы]]; стоит на реке [[Москва (река)|Москве]].
== История ==
[[Файл:Kremlin.jpg|мини|[[Московский Кремль]]]]
Первое упоминание — 1147 год, при [[Юрий Долгорукий|Юрии Долгоруком]]. В [[XIV век]]е Москва стала центром [[Великое княжество Московское|княжества]]; '''[[Наполеон]]'''у не удалось её удержать. Жители [[Москва|Москв]]ы и [[Санкт-Петербург]]а.
::{| class="wikitable"
| [[Тверской район]] || 75 тыс.
|}
* [[Красная площадь]]
* [[Большой театр]]<!-- комментарий -->ом
<gallery>
Файл:Moscow.jpg|[[Москва-Сити]]
</gallery>
[[Справка:Содержание|справка]] [[:en:Moscow|англ.]]
[[Категория:Москва]]
[[en:Moscow]]""",
    "ar": """{{صندوق معلومات مدينة
|الاسم = القاهرة
|البلد = [[مصر]]
}}
'''القاهرة''' هي [[عاصمة]] [[جمهورية مصر العربية]] وأكبر مدنها،<ref>{{استشهاد ويب|عنوان=[[الجهاز المركزي للتعبئة العامة والإحصاء]]}}</ref> تقع على ضفاف [[نهر النيل]]. كانت [[الفسطاط]] نواتها الأولى، وفي [[العصر الفاطمي|عهد الفاطميين]] أسسها [[جوهر الصقلي]]. [[مصر]]ية الطابع، و'''[[الأزهر]]'''ي التقاليد.
== التاريخ ==
[[ملف:Cairo.jpg|تصغير|[[قلعة صلاح الدين]]]]
{| class="wikitable"
| [[حي مصر الجديدة|مصر الجديدة]] || 134,000
|}
* [[الأهرامات]] في [[الجيزة]]
* [[برج القاهرة]]<ref>[[مرجع]]</ref>
<gallery>
ملف:Nile.jpg|[[النيل]]
</gallery>
[[مساعدة:محتويات|مساعدة]] [[:en:Cairo|الإنجليزية]]
[[تصنيف:القاهرة]]
[[en:Cairo]]""",
    "ja": """{{基礎情報 日本の都道府県
|都道府県名 = 東京都
|地方 = [[関東地方]]
}}
'''東京都'''（とうきょうと）は、[[日本]]の[[首都]]であり、[[関東地方]]に位置する[[都道府県|都]]である<ref>{{Cite web|title=[[総務省]]統計}}</ref>。都庁所在地は[[新宿区]]。[[江戸]]<nowiki/>時代には'''[[徳川幕府]]'''が置かれた。
== 歴史 ==
{{main|東京の歴史}}
[[ファイル:Tokyo Tower.jpg|サムネイル|[[東京タワー]]]]
[[1868年]]に[[江戸]]は東京と改称され、[[明治天皇]]が[[京都市|京都]]から移った<ref name="a">[[東京奠都]]</ref><ref name="a" />。
:{| class="wikitable"
| [[千代田区]] || 66,680
|}
* [[東京湾]]
* [[多摩川]]<!-- コメント -->は[[神奈川県]]との境
<gallery>
ファイル:Skytree.jpg|[[東京スカイツリー]]
</gallery>
[[ヘルプ:目次|ヘルプ]] [[:en:Tokyo|英語版]]
[[カテゴリ:東京都]]
[[en:Tokyo]]""",
}


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_every_link_mwparserfromhell_keeps_we_keep_on_real_looking_pages(lang):
    expected = oracle_links(PAGES[lang], lang)
    assert len(expected) >= 10  # the oracle itself sees the page's prose links
    assert missing(expected, our_links(PAGES[lang], lang)) == []


def test_the_oracle_reads_the_cases_of_issue_26_as_mediawiki_renders_them():
    page = PAGES["en"]
    expected = oracle_links(page, "en")
    assert ("Edo", "Edo") in expected and ("Edo", "Edoan") not in expected  # <nowiki/> ends the trail
    assert ("Emperor Meiji", "Emperor Meiji") in expected  # so does '''
    assert ("Japan", "Japanese") in expected and ("Tama River", "Tama Rivers") in expected
    assert ("Tokyo Tower", "Tokyo Tower") in expected  # after the colon-indented table
    assert not {t for t, _ in expected} & {"Shinjuku", "Census", "Saitama", "Hidden link", "Not shown", "Olympic Games"}
    assert ("Paris (France)", "Paris") in expected and ("AT&T", "AT&T") in expected


def test_our_parser_keeps_no_more_than_the_oracle_on_real_looking_pages():
    # The other direction: nothing from tables, templates, references or captions leaks into our links.
    for lang, page in PAGES.items():
        assert missing(our_links(page, lang), oracle_links(page, lang)) == [], lang


@pytest.mark.parametrize("lang", sorted(MEDIAWIKI_TRAILS))
def test_every_link_mwparserfromhell_keeps_we_keep_on_generated_pages(lang):
    checked = 0
    for seed in range(25):
        page = PageGenerator(lang, seed).page()
        expected = oracle_links(page, lang)
        checked += len(expected)
        assert missing(expected, our_links(page, lang)) == [], (seed, page)
    assert checked > 300


def test_the_generator_is_seeded():
    assert PageGenerator("de", 7).page() == PageGenerator("de", 7).page() != PageGenerator("de", 8).page()
