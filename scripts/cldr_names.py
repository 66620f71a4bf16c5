"""Write kb/data/cldr_names.json: the CLDR names babel does not ship, for the embedded kb.

babel's locale data keeps one name per territory and no subdivisions. This reads the CLDR JSON packages
(``npm pack cldr-localenames-full@48.2.0 cldr-subdivisions-full@48.2.0``, unpacked side by side) and keeps,
for the mLUKE languages:

- ``territory_alts``: each territory's short and variant names (``US-alt-short`` "US", "USA", "アメリカ",
  "США"; ``GB-alt-short`` "UK", "英国"; ``CI-alt-variant`` "Ivory Coast" ...);
- ``subdivisions``: the names of England, Scotland, Wales and Northern Ireland in every language that has
  them, and of the states and provinces of the United States, Canada and Australia (English only in CLDR).

Usage: python scripts/cldr_names.py LOCALENAMES_DIR SUBDIVISIONS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kb.languages import MLUKE_LANGUAGES

#: Subdivisions kept: the countries whose first-level divisions news text writes after a city name.
SUBDIVISION_COUNTRIES = ("us", "ca", "au")
UK_NATIONS = ("gbeng", "gbsct", "gbwls", "gbnir")


def main(localenames: Path, subdivisions: Path, out: Path) -> None:
    version = json.loads((localenames / "package.json").read_text(encoding="utf-8"))["version"]
    alts: dict[str, dict[str, list[str]]] = {}
    subs: dict[str, dict[str, str]] = {}
    for lang in MLUKE_LANGUAGES:
        path = localenames / "main" / lang / "territories.json"
        names = json.loads(path.read_text(encoding="utf-8"))["main"][lang]["localeDisplayNames"]["territories"]
        found: dict[str, list[str]] = {}
        for code, name in sorted(names.items()):
            region, _, alt = code.partition("-alt-")
            if alt in ("short", "variant") and len(region) == 2 and region.isalpha():
                found.setdefault(region, []).append(name)
        alts[lang] = found
        path = subdivisions / "subdivisions" / lang / f"{lang}.json"
        if path.exists():
            table = json.loads(path.read_text(encoding="utf-8"))["subdivisions"]["localeDisplayNames"]["subdivisions"]
            subs[lang] = {
                code: name
                for code, name in sorted(table.items())
                if code in UK_NATIONS or (code[:2] in SUBDIVISION_COUNTRIES and len(code) in (4, 5))
            }
    data = {
        "source": f"Unicode CLDR {version} (npm cldr-localenames-full, cldr-subdivisions-full), Unicode License v3",
        "territory_alts": alts,
        "subdivisions": subs,
    }
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(__file__).resolve().parents[1] / "kb" / "data" / "cldr_names.json")
