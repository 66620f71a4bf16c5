"""News-style sentences for checking how the linker treats ordinary text (``benchmarks/news_linking.py``).

Each case names one mention of its sentence and what must happen to it:

- ``start``: a famous name (country, capital, big city) opening a sentence, "London is the capital of the
  United Kingdom.": it must link to ``gold``;
- ``place``: a city written with its region or country, "London, Ontario", "Valencia, Venezuela" (in Japanese
  and Chinese the country comes first, ベネズエラのバレンシア, 委内瑞拉巴伦西亚; in Russian, with case endings,
  "в городе Валенсия (Венесуэла)"): it must link to ``gold``, the city the region or country picks;
- ``unlinked``: a common word or part of a person's name that is also a place name ("Paris Hilton",
  "Die Essen in Essen ...", パリパリ): it must stay unlinked (NIL or not detected).

``gold`` is the entity's English title in the embedded kb ("London (Canada)"), resolved to a key by
:func:`gold_key`. :data:`TEST` (166 cases in en, de, fr, es, ja, zh, ru, :mod:`probes.news_linking_heldout`)
was written before the second round of tuning and is scored once at its end; :data:`DEV` is what tuning looks
at: a few tuning sentences and the first held-out set (161 cases), which was scored after the first round and so
no longer measures anything held out. :data:`THIRD_TEST` (178 cases, :mod:`probes.news_linking_heldout3`) was
written before the third round of tuning, when the second set had been looked at, and is scored once at its end.
:data:`FOURTH_TEST` (168 cases, :mod:`probes.news_linking_heldout4`) was written before the fourth round, when
the first three sets had been looked at, and is scored once before that round and once at its end.
:data:`FIFTH_TEST` (180 cases, :mod:`probes.news_linking_heldout5`) was written before the fifth round, when
the first four sets had been looked at, and is scored once before that round and once at its end.
:func:`score_news` links the sentences and judges each case, :func:`news_summary` counts the right ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from kb.db import EntityDB
from probes.news_linking_heldout import HELD_OUT
from probes.news_linking_heldout3 import HELD_OUT_3
from probes.news_linking_heldout4 import HELD_OUT_4
from probes.news_linking_heldout5 import HELD_OUT_5

if TYPE_CHECKING:
    from mluke.linking.linker import Linker

Kind = Literal["start", "place", "unlinked"]
KINDS: tuple[Kind, ...] = ("start", "place", "unlinked")


class NewsCase(NamedTuple):
    """One sentence and the mention it checks: the ``occurrence``-th (0-based) ``surface`` in ``text``."""

    lang: str
    kind: Kind
    text: str
    surface: str
    gold: str | None = None
    occurrence: int = 0

    def span(self) -> tuple[int, int]:
        """Character offsets of the checked mention in :attr:`text`."""
        at = -1
        for _ in range(self.occurrence + 1):
            at = self.text.find(self.surface, at + 1)
            if at < 0:
                raise ValueError(f"{self.surface!r} occurs fewer than {self.occurrence + 1} times in {self.text!r}")
        return at, at + len(self.surface)


def _cases(lang: str, kind: Kind, rows: list[tuple[str, ...]]) -> list[NewsCase]:
    out = []
    for row in rows:
        text, surface, *rest = row
        if kind == "unlinked":
            out.append(NewsCase(lang, kind, text, surface, None, int(rest[0]) if rest else 0))
        else:
            out.append(NewsCase(lang, kind, text, surface, rest[0]))
    return out


#: The first held-out set: scored after the first round of tuning, tuning data since.
_FIRST_TEST: dict[str, dict[Kind, list[tuple[str, ...]]]] = {
    "en": {
        "start": [
            ("London is the capital of the United Kingdom.", "London", "London"),
            ("China is a big country.", "China", "China"),
            ("Paris hosted the Olympic Games in 2024.", "Paris", "Paris"),
            ("Japan reported strong export growth in March.", "Japan", "Japan"),
            ("Moscow rejected the proposal on Tuesday.", "Moscow", "Moscow"),
            ("Germany will hold elections next year.", "Germany", "Germany"),
            ("Tokyo has more than thirteen million inhabitants.", "Tokyo", "Tokyo"),
            ("Brazil won the match in extra time.", "Brazil", "Brazil"),
            ("India launched a new satellite last week.", "India", "India"),
            ("Berlin announced new rules for rents.", "Berlin", "Berlin"),
            ("Canada and Mexico signed the agreement.", "Canada", "Canada"),
            ("France is sending aid to the region.", "France", "France"),
            ("Chicago police arrested two men on Sunday.", "Chicago", "Chicago"),
            ("Beijing responded with new tariffs.", "Beijing", "Beijing"),
        ],
        "place": [
            ("The team will play in London, Ontario, next week.", "London", "London (Canada)"),
            ("She studied at a university in Cambridge, Massachusetts.", "Cambridge", "Cambridge (United States)"),
            ("Protests continued in Valencia, Spain, on Monday.", "Valencia", "Valencia (Spain)"),
            ("The plant is located in Córdoba, Mexico.", "Córdoba", "Córdoba (Mexico)"),
            ("Flooding hit Hyderabad, Pakistan, after the monsoon.", "Hyderabad", "Hyderabad (Pakistan)"),
            ("He was born in Birmingham, Alabama, in 1950.", "Birmingham", "Birmingham (United States)"),
            ("The festival returns to Athens, Georgia, in June.", "Athens", "Athens (United States)"),
            ("A new bridge opened in Hamilton, New Zealand.", "Hamilton", "Hamilton (New Zealand)"),
            ("Tripoli, Lebanon, saw heavy fighting overnight.", "Tripoli", "Tripoli (Lebanon)"),
            ("The museum in Alexandria, Virginia, reopened.", "Alexandria", "Alexandria (United States)"),
            ("Officials in San Jose, Costa Rica, confirmed the quake.", "San Jose", "San José"),
            ("The mayor of Mérida, Venezuela, resigned.", "Mérida", "Mérida (Venezuela)"),
            ("Students marched in Santiago, Chile.", "Santiago", "Santiago"),
            ("The band played a show in Perth, Australia.", "Perth", "Perth"),
        ],
        "unlinked": [
            ("Paris Hilton arrived at the party late.", "Paris"),
            ("Michael Jordan said he would return.", "Jordan"),
            ("Chad Smith played drums.", "Chad"),
            ("Jack London wrote about the Yukon.", "London"),
            ("Reading is good for children.", "Reading"),
            ("Nice work on the report, everyone.", "Nice"),
            ("The French president met the press.", "French"),
            ("Orlando Bloom starred in the film.", "Orlando"),
            ("Austin Butler won the award.", "Austin"),
            ("Mobile phones are banned in class.", "Mobile"),
            ("Victoria Beckham launched a new collection.", "Victoria"),
            ("Yesterday Jordan Peterson gave a talk.", "Jordan"),
        ],
    },
    "de": {
        "start": [
            ("Berlin ist die Hauptstadt Deutschlands.", "Berlin", "Berlin"),
            ("Frankreich gewann das Spiel gegen Spanien.", "Frankreich", "France"),
            ("Wien liegt an der Donau.", "Wien", "Vienna"),
            ("München ist eine teure Stadt.", "München", "Munich"),
            ("China will mehr Strom erzeugen.", "China", "China"),
            ("Hamburg hat einen großen Hafen.", "Hamburg", "Hamburg"),
            ("Japan exportiert viele Autos.", "Japan", "Japan"),
            ("Polen hat eine neue Regierung.", "Polen", "Poland"),
        ],
        "place": [
            ("Das Spiel findet in London, Kanada, statt.", "London", "London (Canada)"),
            ("Sie wohnt in Valencia, Spanien.", "Valencia", "Valencia (Spain)"),
            ("Er arbeitet in Córdoba, Spanien.", "Córdoba", "Córdoba (Spain)"),
            ("Der Flughafen von Hyderabad, Pakistan, war geschlossen.", "Hyderabad", "Hyderabad (Pakistan)"),
            ("Sie studierte in Cambridge, USA.", "Cambridge", "Cambridge (United States)"),
            ("Ein Sturm traf Mérida, Venezuela.", "Mérida", "Mérida (Venezuela)"),
            ("Der Bürgermeister von Birmingham, USA, trat zurück.", "Birmingham", "Birmingham (United States)"),
        ],
        "unlinked": [
            ("Die Essen in Essen waren gut.", "Essen"),  # the first: the meals
            ("Das Essen war kalt.", "Essen"),
            ("Paris Hilton kam spät zur Party.", "Paris"),
            ("Jack London schrieb über Alaska.", "London"),
            ("Victoria Beckham stellte eine Kollektion vor.", "Victoria"),
            ("Orlando Bloom spielte die Hauptrolle.", "Orlando"),
            ("Die Halle war voll besetzt.", "Halle"),
        ],
    },
    "fr": {
        "start": [
            ("Paris est la capitale de la France.", "Paris", "Paris"),
            ("Londres a annoncé de nouvelles mesures.", "Londres", "London"),
            ("Madrid accueillera le sommet en juin.", "Madrid", "Madrid"),
            ("Berlin a réagi rapidement.", "Berlin", "Berlin"),
            ("Genève accueille la conférence.", "Genève", "Geneva"),
            ("Rome a connu une forte chaleur.", "Rome", "Rome"),
            ("Tokyo prépare les Jeux.", "Tokyo", "Tokyo"),
            ("Moscou a rejeté l'offre.", "Moscou", "Moscow"),
        ],
        "place": [
            ("Le match aura lieu à London (Ontario) la semaine prochaine.", "London", "London (Canada)"),
            ("Elle habite à Valencia, au Venezuela.", "Valencia", "Valencia"),
            ("Un séisme a frappé Córdoba, en Espagne.", "Córdoba", "Córdoba (Spain)"),
            ("Des inondations ont touché Hyderabad, au Pakistan.", "Hyderabad", "Hyderabad (Pakistan)"),
            ("Il est né à Cambridge (Massachusetts).", "Cambridge", "Cambridge (United States)"),
            ("Le maire de Mérida, au Venezuela, a démissionné.", "Mérida", "Mérida (Venezuela)"),
        ],
        "unlinked": [
            ("Paris Hilton est arrivée en retard.", "Paris"),
            ("Jack London a écrit sur le Yukon.", "London"),
            ("Victoria Beckham a lancé une collection.", "Victoria"),
            ("Florence Foresti joue ce soir.", "Florence"),
            ("Orlando Bloom joue le rôle principal.", "Orlando"),
            ("Les Tours de la ville sont hautes.", "Tours"),
        ],
    },
    "es": {
        "start": [
            ("Madrid es la capital de España.", "Madrid", "Madrid"),
            ("Londres anunció nuevas medidas.", "Londres", "London"),
            ("Lima recibió a los visitantes.", "Lima", "Lima"),
            ("Bogotá tiene un nuevo alcalde.", "Bogotá", "Bogotá"),
            ("Múnich acoge la feria.", "Múnich", "Munich"),
            ("China anunció nuevos aranceles.", "China", "China"),
            ("Francia y Alemania firmaron el acuerdo.", "Francia", "France"),
            ("Berlín respondió a las críticas.", "Berlín", "Berlin"),
        ],
        "place": [
            ("La fábrica está en Córdoba, Argentina.", "Córdoba", "Córdoba"),
            ("Hubo protestas en Valencia, Venezuela.", "Valencia", "Valencia"),
            ("Nació en London, Canadá.", "London", "London (Canada)"),
            ("El alcalde de Mérida, Venezuela, renunció.", "Mérida", "Mérida (Venezuela)"),
            ("Hubo un incendio en Cambridge, Estados Unidos.", "Cambridge", "Cambridge (United States)"),
            ("Inundaciones en Hyderabad, Pakistán.", "Hyderabad", "Hyderabad (Pakistan)"),
        ],
        "unlinked": [
            ("Paris Hilton llegó tarde a la fiesta.", "Paris"),
            ("Santiago Segura dirigió la película.", "Santiago"),
            ("Victoria Beckham presentó su colección.", "Victoria"),
            ("Orlando Bloom protagonizó la película.", "Orlando"),
            ("Jack London escribió sobre el Yukón.", "London"),
            ("León XIV habló ante los fieles.", "León"),
            ("Michael Jordan dijo que volvería.", "Jordan"),
        ],
    },
    "ja": {
        "start": [
            ("東京は日本の首都です。", "東京", "Tokyo"),
            ("アメリカは新たな関税を発表した。", "アメリカ", "United States"),
            ("中国は経済成長を続けている。", "中国", "China"),
            ("ロンドンで会議が開かれた。", "ロンドン", "London"),
            ("パリは観光客でにぎわっている。", "パリ", "Paris"),
            ("英国は新しい首相を選んだ。", "英国", "United Kingdom"),
            ("ドイツは輸出を増やした。", "ドイツ", "Germany"),
            ("大阪は食の街として知られる。", "大阪", "Osaka"),
        ],
        "place": [
            ("スペインのバレンシアで抗議が続いた。", "バレンシア", "Valencia (Spain)"),
            ("カナダのロンドンで試合が行われた。", "ロンドン", "London (Canada)"),
            ("パキスタンのハイデラバードで洪水が起きた。", "ハイデラバード", "Hyderabad (Pakistan)"),
            ("スペインのコルドバに工場がある。", "コルドバ", "Córdoba (Spain)"),
            ("ベネズエラ・メリダの市長が辞任した。", "メリダ", "Mérida (Venezuela)"),
        ],
        "unlinked": [
            ("パリパリのせんべいを食べた。", "パリ"),
            ("ナポリタンを注文した。", "ナポリ"),
            ("ローマ字で名前を書いた。", "ローマ"),
            ("松本さんは会社員です。", "松本"),
            ("チャド・スミスがドラムを叩いた。", "チャド"),
            ("日本語を勉強している。", "日本"),
            ("ボストンバッグを買った。", "ボストン"),
            ("福岡さんに電話した。", "福岡"),
        ],
    },
    "zh": {
        "start": [
            ("中国是一个大国。", "中国", "China"),
            ("北京今天天气晴朗。", "北京", "Beijing"),
            ("美国宣布了新的关税。", "美国", "United States"),
            ("伦敦举办了一场展览。", "伦敦", "London"),
            ("巴黎是法国的首都。", "巴黎", "Paris"),
            ("中国外交部长访问了非洲。", "中国", "China"),
            ("上海的人口超过两千万。", "上海", "Shanghai"),
            ("日本首相发表了讲话。", "日本", "Japan"),
        ],
        "place": [
            ("委内瑞拉巴伦西亚发生了抗议。", "巴伦西亚", "Valencia"),
            ("巴基斯坦海得拉巴发生了洪水。", "海得拉巴", "Hyderabad (Pakistan)"),
            ("阿根廷科尔多瓦有一家工厂。", "科尔多瓦", "Córdoba"),
            ("加拿大伦敦举行了比赛。", "伦敦", "London (Canada)"),
            ("委内瑞拉梅里达的市长辞职了。", "梅里达", "Mérida (Venezuela)"),
        ],
        "unlinked": [
            ("王长春是一名医生。", "长春"),
            ("香港脚很难治。", "香港"),
            ("李成都是我的同学。", "成都"),
            ("张先生喜欢吃北京烤鸭。", "北京"),
            ("他会说日本语。", "日本"),
        ],
    },
    "ru": {
        "start": [
            ("Москва — столица России.", "Москва", "Moscow"),
            ("Лондон объявил о новых мерах.", "Лондон", "London"),
            ("Китай увеличил экспорт.", "Китай", "China"),
            ("Париж примет саммит.", "Париж", "Paris"),
            ("Берлин ответил на критику.", "Берлин", "Berlin"),
            ("Германия проведёт выборы.", "Германия", "Germany"),
            ("Токио готовится к Играм.", "Токио", "Tokyo"),
            ("Франция направила помощь.", "Франция", "France"),
        ],
        "place": [
            ("Протесты прошли в городе Валенсия (Испания).", "Валенсия", "Valencia (Spain)"),
            ("Наводнение затронуло город Хайдарабад (Пакистан).", "Хайдарабад", "Hyderabad (Pakistan)"),
            ("Завод находится в городе Кордова (Аргентина).", "Кордова", "Córdoba"),
            ("Матч прошёл в городе Лондон (Канада).", "Лондон", "London (Canada)"),
            ("Он учился в городе Кембридж (США).", "Кембридж", "Cambridge (United States)"),
            ("Мэр города Мерида (Венесуэла) ушёл в отставку.", "Мерида", "Mérida (Venezuela)"),
        ],
        "unlinked": [
            ("Фридрих Энгельс написал много книг.", "Энгельс"),
            ("Сергей Киров был убит в 1934 году.", "Киров"),
            ("Джек Лондон писал о Юконе.", "Лондон"),
            ("Виктория Бекхэм представила коллекцию.", "Виктория"),
            ("Сергей Королёв создал первую ракету.", "Королёв"),
        ],
    },
}

#: Tuning sentences, none of them in :data:`TEST`.
_DEV: dict[str, dict[Kind, list[tuple[str, ...]]]] = {
    "en": {
        "start": [
            ("Rome is crowded in summer.", "Rome", "Rome"),
            ("Spain raised its minimum wage.", "Spain", "Spain"),
        ],
        "place": [
            ("The storm reached London, Ontario.", "London", "London (Canada)"),
            ("A plant closed in Valencia, Venezuela.", "Valencia", "Valencia"),
        ],
        "unlinked": [
            ("Paris Jackson sang.", "Paris"),
            ("Georgia May Jagger modelled the dress.", "Georgia"),
        ],
    },
    "de": {
        "start": [("Paris ist schön.", "Paris", "Paris")],
        "place": [("Er lebt in Córdoba, Spanien.", "Córdoba", "Córdoba (Spain)")],
        "unlinked": [("Das Essen ist fertig.", "Essen")],
    },
    "fr": {
        "start": [("Londres est grande.", "Londres", "London")],
        "place": [("Il vit à Valencia, au Venezuela.", "Valencia", "Valencia")],
        "unlinked": [("Paris Match a publié une photo.", "Paris")],
    },
    "es": {
        "start": [("París es bonita.", "París", "Paris")],
        "place": [("Vive en Córdoba, Argentina.", "Córdoba", "Córdoba")],
        "unlinked": [("Victoria Abril actuó.", "Victoria")],
    },
    "ja": {
        "start": [("パリは美しい。", "パリ", "Paris")],
        "place": [("カナダのロンドンは寒い。", "ロンドン", "London (Canada)")],
        "unlinked": [("長崎さんが来た。", "長崎")],
    },
    "zh": {
        "start": [("中国外交部发表声明。", "中国", "China")],
        "place": [("委内瑞拉巴伦西亚很热。", "巴伦西亚", "Valencia")],
        "unlinked": [("王长春来了。", "长春")],
    },
    "ru": {
        "start": [("Москва готовится к зиме.", "Москва", "Moscow")],
        "place": [("Город Валенсия (Венесуэла) пострадал.", "Валенсия", "Valencia")],
        "unlinked": [("Фридрих Энгельс родился в Бармене.", "Энгельс")],
    },
}


def _flatten(table: dict[str, dict[Kind, list[tuple[str, ...]]]]) -> list[NewsCase]:
    return [case for lang, kinds in table.items() for kind in KINDS for case in _cases(lang, kind, kinds.get(kind, []))]


#: The held-out set (see the module docs).
TEST: list[NewsCase] = _flatten(HELD_OUT)
#: The third held-out set (:mod:`probes.news_linking_heldout3`), written before the third round of tuning.
THIRD_TEST: list[NewsCase] = _flatten(HELD_OUT_3)
#: The fourth held-out set (:mod:`probes.news_linking_heldout4`), written before the fourth round of tuning.
FOURTH_TEST: list[NewsCase] = _flatten(HELD_OUT_4)
#: The fifth held-out set (:mod:`probes.news_linking_heldout5`), written before the fifth round of tuning.
FIFTH_TEST: list[NewsCase] = _flatten(HELD_OUT_5)
#: The first held-out set (161 cases), tuning data since it was scored.
FIRST_TEST: list[NewsCase] = _flatten(_FIRST_TEST)
#: The tuning set: the tuning sentences and the first held-out set.
DEV: list[NewsCase] = _flatten(_DEV) + FIRST_TEST


def gold_key(db: EntityDB, case: NewsCase) -> str | None:
    """The kb key of ``case.gold`` (an English title), ``None`` for an ``unlinked`` case.

    Raises:
        LookupError: the kb has no entity with that English title.
    """
    if case.gold is None:
        return None
    key = db.resolve_title("en", case.gold)
    if key is None:
        raise LookupError(f"no entity titled {case.gold!r} in English in {db.path}")
    return key


class NewsResult(NamedTuple):
    """How the linker treated one case: the mention it linked over the case's span (``None``: none detected),
    its key (``None``: NIL) and whether that is right."""

    case: NewsCase
    surface: str | None
    key: str | None
    right: bool


def score_news(linker: Linker, cases: list[NewsCase], **options: Any) -> list[NewsResult]:
    """Link every case's sentence with ``linker`` (``options``: :class:`mluke.LinkOptions` fields) and judge
    the case's mention: ``start`` and ``place`` are right when a mention over exactly the case's span links to
    the gold entity; ``unlinked`` when no mention overlapping the span is linked."""
    out: list[NewsResult] = []
    by_lang: dict[str, list[NewsCase]] = {}
    for case in cases:
        by_lang.setdefault(case.lang, []).append(case)
    for lang, group in by_lang.items():
        linked = linker.link([c.text for c in group], lang=lang, **options)
        for case, mentions in zip(group, linked):
            a, b = case.span()
            over = [m for m in mentions if m.start < b and a < m.end]
            exact = next((m for m in over if (m.start, m.end) == (a, b)), None)
            shown = exact or (over[0] if over else None)
            if case.kind == "unlinked":
                right = all(m.nil for m in over)
            else:
                right = exact is not None and not exact.nil and exact.key == gold_key(linker.db, case)
            out.append(
                NewsResult(
                    case, shown.surface if shown else None, None if shown is None or shown.nil else shown.key, right
                )
            )
    return out


def news_summary(results: list[NewsResult]) -> dict[str, dict[str, Any]]:
    """Per kind and per language: cases, right, and the share right (in %), plus an ``all`` row per kind."""
    table: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        rows = [r for r in results if r.case.kind == kind]
        per = {
            "all": rows,
            **{lang: [r for r in rows if r.case.lang == lang] for lang in sorted({r.case.lang for r in rows})},
        }
        table[kind] = {
            lang: {
                "cases": len(rs),
                "right": sum(r.right for r in rs),
                "share": round(100 * sum(r.right for r in rs) / len(rs), 1),
            }
            for lang, rs in per.items()
            if rs
        }
    return table
