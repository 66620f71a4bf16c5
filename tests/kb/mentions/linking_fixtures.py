"""A small hand-written entity database for the mention detection and candidate tests.

English has anchor statistics (so unscored names are dropped there by default);
German, Japanese, Korean, Thai and Turkish have names only (like the embedded kb).
"""

from __future__ import annotations

from pathlib import Path

import kb

# (surface, {entity: link count}, link_docs, text_docs) in English.
ANCHORS = [
    ("New York", {"Q60": 90, "Q1384": 10}, 50, 100),  # lp 0.5
    ("New York City", {"Q60": 40}, 30, 40),  # lp 0.75
    ("New York Times", {"Q9684": 20}, 2, 100),  # lp 0.02
    ("York", {"Q42462": 30, "Q60": 1}, 10, 100),  # lp 0.1
    ("Paris", {"Q90": 50, "Q830149": 5}, 40, 80),  # lp 0.5
    ("paris", {"Q90": 5}, 10, 20),  # a spelling variant: counts add up
    ("Times", {"Q11259": 3}, 1, 1000),  # lp 0.001: below the default 1%
    ("AT&T", {"Q35476": 7}, 5, 10),
    ("the", {"Q1": 1}, 1, 100_000),  # lp 0.00001
    ("Straße", {"Q1000": 4}, 2, 4),
    ("İstanbul", {"Q406": 12}, 6, 10),
    ("ﬁlm festival", {"Q2000": 3}, 3, 6),
]


def write_linking_db(path: Path) -> Path:
    with kb.EntityDB.create(path, provenance={"builder": "tests/linking_fixtures"}) as w:
        w.add_languages(["en", "de", "ja", "ko", "th", "tr"])
        keys = {
            "Q1",
            "Q60",
            "Q1384",
            "Q9684",
            "Q42462",
            "Q90",
            "Q830149",
            "Q11259",
            "Q35476",
            "Q1000",
            "Q406",
            "Q2000",
            "Q8678",
            "Q2807",
            "Q5826",
            "Q1490",
            "Q16",
            "Q1861",
            "Q884",
            "Q8684",
            "Q1867",
            "Q43",
        }
        for key in sorted(keys):
            w.add_entity(key)
        for surface, counts, link_docs, text_docs in ANCHORS:
            for entity, count in counts.items():
                w.add_anchor("en", surface, entity, count)
            w.add_surface("en", surface, link_docs=link_docs, text_docs=text_docs)
        w.add_title("en", "New York City", "Q60")
        w.add_title("en", "Paris", "Q90")
        w.add_title("en", "Rio de Janeiro", "Q8678")  # a name without statistics in a language with them
        # German: names only. Valencia is ambiguous; titles carry qualifiers.
        w.add_title("de", "Valencia", "Q8818")
        w.add_entity("Q8818")
        w.add_title("de", "Valencia (Venezuela)", "Q2807")
        w.add_title("de", "Valencia (Kalifornien)", "Q5826")
        w.add_label("Q8818", "de", "Valencia")
        w.add_label("Q2807", "de", "Valencia")
        w.add_aliases("Q5826", "de", ["Valencia"])
        w.add_title("de", "Köln", "Q365")
        w.add_entity("Q365")
        w.add_redirect("de", "Cologne", "Koeln")
        w.add_redirect("de", "Koeln", "Köln")  # two hops
        w.add_redirect("de", "Schleife A", "Schleife B")
        w.add_redirect("de", "Schleife B", "Schleife A")  # a loop resolves to nothing
        w.add_label("Q1490", "de", "Tokio")
        # Japanese: no spaces between words.
        w.add_title("ja", "東京", "Q1490")
        w.add_title("ja", "東京都", "Q1490")
        w.add_title("ja", "京都", "Q1861")
        w.add_title("ja", "カナダ", "Q16")
        w.add_label("Q16", "ja", "カナダ")
        w.add_title("ja", "Tokyo", "Q1490")  # a Latin-script name in Japanese
        # Korean: particles attach to nouns.
        w.add_title("ko", "서울", "Q8684")
        w.add_title("ko", "대한민국", "Q884")
        w.add_title("ko", "울산", "Q43")
        # Thai: no spaces; vowel and tone marks combine with consonants.
        w.add_title("th", "กรุงเทพมหานคร", "Q1867")
        w.add_label("Q1867", "th", "กรุงเทพ")
        # Turkish: dotted and dotless i.
        w.add_title("tr", "İstanbul", "Q406")
        w.add_title("tr", "Istanbul Boğazı", "Q1000")
    return path
