"""X-FACTR's template marks filled by its rules: template lines as TREx_prompts.csv writes them, the filled
sentences worked out by hand from X-FACTR's tables (lang_resource/*/articles.txt) and its probe's rules."""

import pytest

from kb.errors import InputFormatError
from probes.xfactr_marks import Entity, Marks, embedded_rules, read_articles

HUMAN, CITY, COUNTRY = "Q5,human", "Q515,city", "Q3624078,sovereign state,Q6256,country"


def test_embedded_tables_say_where_they_come_from():
    rules = embedded_rules()
    assert "jzbjyb/X-FACTR" in rules["origin"] and "articles.txt" in rules["origin"]
    assert rules["languages"]["fr"]["articles"]["PREPDEF;FEM;SG"] == "de la"
    assert rules["languages"]["el"]["articles"]["ART;PREPDEF;FEM;SG;ACC"] == "στην"


def test_french_articles_prepositions_and_choices():
    fr = Marks("fr")
    p19 = "[X] est [né;X-Gender=MASC|née;X-Gender=FEM] [PREPLOC;Y] [Y] ."
    # a city takes "à", anything else "en"; the participle agrees with the subject's gender
    assert fr.fill(p19, Entity("Marie Curie", "FEM", HUMAN), Entity("Varsovie", None, CITY)).template == (
        "[X] est née à [Y] ."
    )
    assert fr.fill(p19, Entity("Albert Einstein", "MASC", HUMAN), Entity("Wurtemberg")).template == (
        "[X] est né en [Y] ."
    )
    # PREPDEF before a country: gender guessed from the ending (France: -ance FEM, Japon: -on MASC)
    p36 = "La capitale [PREPDEF;X] [X] est [Y] ."
    assert fr.fill(p36, Entity("France", None, COUNTRY), Entity("Paris")).template == "La capitale de la [X] est [Y] ."
    assert fr.fill(p36, Entity("Japon", None, COUNTRY), Entity("Tokyo")).template == "La capitale du [X] est [Y] ."
    # before any other name (a proper noun): "de"
    assert fr.fill(p36, Entity("Bavière", None, "Q1221156,state of Germany"), Entity("Munich")).template == (
        "La capitale du [X] est [Y] ."  # "state" is a word of its classes: a country for X-FACTR
    )
    assert fr.fill(p36, Entity("Ulm", None, CITY), Entity("x")).template == "La capitale de [X] est [Y] ."
    # ARTDEF only before a country; l' before a small vowel; the object's is always before the masks
    p47 = "[ARTDEF;X] [X] partage la frontière avec [ARTDEF;Y] [Y] ."
    filled = fr.fill(p47, Entity("France", None, COUNTRY), Entity("Italie", None, COUNTRY))
    assert filled.template == "la [X] partage la frontière avec la [Y] ." and filled.unresolved == ()
    assert fr.fill(p47, Entity("îles Salomon", None, COUNTRY), Entity("Vanuatu", None, COUNTRY)).template == (
        "l' [X] partage la frontière avec le [Y] ."
    )
    assert fr.fill(p47, Entity("Paris", None, CITY), Entity("Ulm", None, CITY)).template == (
        "[X] partage la frontière avec [Y] ."
    )
    p127 = "[X] appartient [PREPDEF-à;Y] [Y] ."
    assert fr.fill(p127, Entity("x"), Entity("Italie", None, COUNTRY)).template == "[X] appartient à la [Y] ."
    assert fr.fill(p127, Entity("x"), Entity("Renault", None, "Q4830453,business")).template == (
        "[X] appartient à [Y] ."
    )
    # ARTIND by the object's gender: "chimiste" ends in -te, feminine by X-FACTR's endings
    p106 = "[X] est [ARTIND;Y] [Y] de profession ."
    assert fr.fill(p106, Entity("x"), Entity("chimiste")).template == "[X] est une [Y] de profession ."
    assert fr.fill(p106, Entity("x"), Entity("physicien", "MASC")).template == "[X] est un [Y] de profession ."


def test_greek_articles_by_gender_number_and_case():
    el = Marks("el")
    p19 = "[DEF;X] [X.Nom] γεννήθηκε [PREPDEF;Y] [Y.Acc] ."
    filled = el.fill(p19, Entity("Μαρία Κιουρί", "FEM", HUMAN), Entity("Βαρσοβία", None, CITY))
    assert filled.template == "η [X] γεννήθηκε στην [Y] ." and filled.unresolved == ("case",)
    # a city ending in -ι stays neuter; the subject's article takes the case of its mark
    p36 = "[DEF;Y] [Y.Nom] είναι η πρωτεύουσα [DEF;X] [X.Gen] ."
    assert el.fill(p36, Entity("Γαλλία", None, COUNTRY), Entity("Παρίσι", None, CITY)).template == (
        "το [Y] είναι η πρωτεύουσα της [X] ."
    )
    # -ες: feminine plural; the verb follows the number
    p30 = "[DEF;X] [X.Nom] [βρίσκεται;X-Number=SG|βρίσκονται;X-Number=PL] [PREPDEF;Y] [Y.Acc] ."
    assert el.fill(p30, Entity("Σεϋχέλλες"), Entity("Αφρική")).template == "οι [X] βρίσκονται στην [Y] ."
    # a musical group: masculine plural
    assert el.fill(p30, Entity("Beatles", None, "Q215380,musical group"), Entity("Λίβερπουλ")).template == (
        "οι [X] βρίσκονται στο [Y] ."
    )
    p178 = "[DEF;X] [X.Nom] αναπτύσσεται από [DEF;Y.Fem] [Y.Acc] ."  # the object's article feminine whatever it is
    assert el.fill(p178, Entity("Windows"), Entity("Microsoft")).template == "το [X] αναπτύσσεται από την [Y] ."
    p138 = "[DEF;X] [X.Nom] πήρε το όνομά [DEF.Gen;X] από [DEF;Y] [Y.Acc] ."
    filled = el.fill(p138, Entity("Αθήνα"), Entity("Αθηνά", "FEM"))
    assert filled.template == "η [X] πήρε το όνομά της από την [Y] ."
    # -ά is not among the feminine endings (-α, -η, -ή): without a gender, neuter
    assert el.fill(p138, Entity("Αθήνα"), Entity("Αθηνά")).template == "η [X] πήρε το όνομά της από το [Y] ."
    assert el.fill("[DEF;X] [X.Nom] είναι [INDEF;Y] [Y.Acc] .", Entity("Αθήνα"), Entity("πόλη")).template == (
        "η [X] είναι μία [Y] ."
    )
    # the table has no nominative of PREPDEF: the mark is dropped and said
    filled = el.fill("[DEF;Y] [Y.Nom] συμμετείχε [PREPDEF;X] [X.Nom] .", Entity("Αθήνα"), Entity("Κώστας", "MASC"))
    assert filled.template == "ο [Y] συμμετείχε [X] ." and filled.unresolved == ("article",)


def test_spanish_russian_hebrew_and_bengali():
    es = Marks("es")
    p463 = "[X] es [ART;X-Gender] [miembro;X-Gender=MASC|miembra;X-Gender=FEM] de [Y] ."
    assert es.fill(p463, Entity("Ana", "FEM", HUMAN), Entity("x")).template == "[X] es una miembra de [Y] ."
    assert es.fill("[X] recibió [DEF;Y] [Y] .", Entity("x"), Entity("Premio Nobel de Física")).template == (
        "[X] recibió el [Y] ."
    )
    p264 = (
        "[X] [està;X-Number=SG|estan;X-Number=PL] [representado;X-Gender=MASC|representada;X-Gender=FEM|"
        "representados;X-Number=PL] por el sello musical [Y] ."
    )
    assert es.fill(p264, Entity("The Beatles", None, "Q215380,musical group"), Entity("EMI")).template == (
        "[X] estan representados por el sello musical [Y] ."
    )
    assert es.fill(p264, Entity("Shakira", "FEM", HUMAN), Entity("EMI")).template == (
        "[X] està representada por el sello musical [Y] ."
    )
    ru = Marks("ru")
    p19 = "[X.Nom] [родился;X-Gender=MASC|родилась;X-Gender=FEM|родилось;X-Gender=NEUT] в [Y.Ess] ."
    filled = ru.fill(p19, Entity("Мария"), Entity("Варшава"))
    assert filled.template == "[X] родилась в [Y] ." and filled.unresolved == ("case",)
    assert ru.fill(p19, Entity("Озеро"), Entity("x")).template == "[X] родилось в [Y] ."  # -о: neuter
    assert ru.fill(p19, Entity("Озеро", None, HUMAN), Entity("x")).template == "[X] родился в [Y] ."  # a human
    # X-FACTR's feminine endings are Latin "a" and "я": Cyrillic -а counts as masculine
    assert ru.fill(p19, Entity("Москва"), Entity("x")).template == "[X] родился в [Y] ."
    he = Marks("he")
    p69 = "[X] [למד;X-Gender=MASC|למדה;X-Gender=FEM] ב[Y] ."
    assert he.fill(p69, Entity("x", "FEM"), Entity("y")).template == "[X] למדה ב[Y] ."
    assert he.fill(p69, Entity("x"), Entity("y")).template == "[X] למד ב[Y] ."
    bn = Marks("bn")
    p31 = "[X] [human: একজন ; non-human: একটি] [Y] ।"
    assert bn.fill(p31, Entity("x", None, HUMAN), Entity("y")).template == "[X] একজন [Y] ।"
    assert bn.fill(p31, Entity("x", None, CITY), Entity("y")).template == "[X] একটি [Y] ।"
    assert bn.fill("[X.GEN] জন্ম হয়েছিল [Y.LOC] ।", Entity("x"), Entity("y")).unresolved == ("case",)


def test_answer_forms_turkish_copula_and_marathi_locative():
    tr = Marks("tr")
    filled = tr.fill("[X.Gen] başkenti [Y;be] .", Entity("Japonya"), Entity("Tokyo"))
    assert filled.template == "[X] başkenti [Y] ." and filled.answer_form == "be" and filled.unresolved == ("case",)
    assert [tr.answer("be", n) for n in ("Ankara", "Tokyo", "Paris", "İstanbul", "Köln", "Berlin")] == [
        "Ankara'dır",
        "Tokyo'dur",
        "Paris'tir",
        "İstanbul'dur",
        "Köln'dür",
        "Berlin'dir",
    ]
    filled = tr.fill("[X;be] bir [Y] .", Entity("Ankara"), Entity("x"))
    assert (filled.template, filled.subject, filled.answer_form) == ("[X] bir [Y] .", "Ankara'dır", "")
    mr = Marks("mr")
    filled = mr.fill("[X] [Y.LOC] स्थानावर खेळतो .", Entity("x"), Entity("गोलरक्षक"))
    assert filled.template == "[X] [Y] स्थानावर खेळतो ." and filled.answer_form == "LOC" and not filled.unresolved
    assert mr.answer("LOC", "गोलरक्षक") == "गोलरक्षकत" and mr.answer("LOC", "Goalkeeper") == "Goalkeeper"


def test_folder_tables_replace_the_embedded_ones(tmp_path):
    table = tmp_path / "lang_resource" / "fr" / "articles.txt"
    table.parent.mkdir(parents=True)
    table.write_text("en\tPREPLOC;COUNTRY\ndans la ville de\tPREPLOC;CITY\n", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    fr = Marks.for_folder(data, "fr")  # X-FACTR's repository: lang_resource/ beside data/... here above it
    assert fr.articles_source == str(table)
    assert fr.fill("[X] est né [PREPLOC;Y] [Y] .", Entity("x", "MASC"), Entity("Lyon", None, CITY)).template == (
        "[X] est né dans la ville de [Y] ."
    )
    assert fr.articles["PREPDEF;PROPN"] == "de"  # entries the folder lacks: the embedded table's
    assert Marks.for_folder(tmp_path / "a" / "b", "fr").articles_source == "probes/data/xfactr_marks.json"
    table.write_text("en PREPLOC;COUNTRY\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"articles.txt, line 1: expected 'word<TAB>KEY'"):
        read_articles(table)
