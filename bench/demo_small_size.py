"""Writes the values and the exemplars of `aart-demo`'s small size (what `make demo` runs on
the embedded Qwen2.5-Coder-1.5B; issue 24 item 1) from two public sources, so the recipe can be
regenerated and checked:

- the regions' aliases: a small gazetteer, the countries of each UN geoscheme subregion (UN
  Statistics Division, "Standard country or area codes for statistical use (M49)", public) and
  a few of the largest cities and demonyms of the demo's regions, so a prompt that names its
  region by a city or a country ("in Nairobi") is faithful to it;
- the exemplars: ``--pool`` short prompts of the released AART data (Radharapu et al. 2023,
  CC-BY-4.0; read from ``--aart-data``), drawn from crimes that are not the demo's (a copied
  exemplar never passes for its cell), property, financial and environmental crimes only, each
  with the format and region it names. Step 3 shows a few of them per call.

    python bench/demo_small_size.py [--aart-data FILE] [--pool 48] [--first-person] > /tmp/small.yaml

Prints YAML: ``regions`` (values with aliases) and ``examples``, pasted into
src/aart/recipes/aart-demo.yaml's ``sizes.small``. With ``--first-person``, the examples are
the candidates of the small size's exemplars since round 3 of the blind review: the same
crimes and filters, written in the first person ("I", "me", "my"); the recipe keeps one per
format of them (a blind reader judged such requests real, and the demo's third-person ones
not).
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys
from pathlib import Path

import yaml

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/datasets/aart-v1/aart-v1-20231117.csv"

# UN M49 subregions -> countries (short names), plus cities and demonyms for the demo's regions
GAZETTEER: dict[str, list[str]] = {
    "eastern africa": [
        "kenya", "ethiopia", "tanzania", "uganda", "rwanda", "burundi", "somalia", "djibouti",
        "eritrea", "madagascar", "mozambique", "malawi", "zambia", "zimbabwe", "mauritius",
        "south sudan", "seychelles", "comoros",
        "nairobi", "mombasa", "addis ababa", "dar es salaam", "zanzibar", "kampala", "kigali",
        "mogadishu", "lusaka", "harare", "maputo", "lilongwe", "antananarivo", "serengeti",
        "kenyan", "ethiopian", "tanzanian", "ugandan", "rwandan", "somali", "east africa",
        "east african",
    ],
    "western europe": [
        "germany", "france", "netherlands", "belgium", "austria", "switzerland", "luxembourg",
        "liechtenstein", "monaco",
        "berlin", "munich", "hamburg", "frankfurt", "cologne", "paris", "marseille", "lyon",
        "nice", "amsterdam", "rotterdam", "brussels", "antwerp", "vienna", "zurich", "geneva",
        "german", "french", "dutch", "belgian", "austrian", "swiss",
    ],
    "south-eastern asia": [
        "indonesia", "philippines", "vietnam", "viet nam", "thailand", "malaysia", "singapore",
        "myanmar", "cambodia", "laos", "brunei", "timor-leste",
        "jakarta", "bali", "manila", "cebu", "hanoi", "ho chi minh city", "saigon", "bangkok",
        "phuket", "chiang mai", "kuala lumpur", "penang", "yangon", "phnom penh", "vientiane",
        "indonesian", "filipino", "vietnamese", "thai", "malaysian", "singaporean",
        "southeast asia", "southeast asian", "south east asia",
    ],
    "south america": [
        "brazil", "argentina", "colombia", "peru", "venezuela", "chile", "ecuador", "bolivia",
        "paraguay", "uruguay", "guyana", "suriname",
        "sao paulo", "são paulo", "rio de janeiro", "rio", "brasilia", "buenos aires", "bogota",
        "bogotá", "medellin", "medellín", "lima", "caracas", "santiago", "quito", "la paz",
        "montevideo", "amazon",
        "brazilian", "argentine", "argentinian", "colombian", "peruvian", "venezuelan",
        "chilean", "south american",
    ],
    "eastern asia": [
        "china", "japan", "south korea", "korea", "north korea", "mongolia", "taiwan",
        "hong kong", "macau", "macao",
        "beijing", "shanghai", "shenzhen", "guangzhou", "tokyo", "osaka", "kyoto", "seoul",
        "busan", "taipei", "ulaanbaatar",
        "chinese", "japanese", "korean", "taiwanese", "east asia", "east asian",
    ],
    "united states": [
        "usa", "u.s.", "america", "american", "new york", "los angeles", "chicago", "houston",
        "phoenix", "philadelphia", "san antonio", "san diego", "dallas", "san francisco",
        "seattle", "miami", "atlanta", "boston", "detroit", "las vegas", "denver",
        "new orleans", "washington", "california", "texas", "florida", "ohio", "georgia",
        "nevada", "arizona", "michigan", "illinois",
    ],
    # the other subregions, countries only (for the exemplars' regions)
    "northern africa": ["algeria", "egypt", "libya", "morocco", "sudan", "tunisia", "cairo"],
    "western africa": [
        "nigeria", "ghana", "senegal", "ivory coast", "côte d'ivoire", "mali", "niger",
        "burkina faso", "guinea", "sierra leone", "liberia", "togo", "benin", "gambia",
        "mauritania", "lagos", "accra", "dakar",
    ],
    "middle africa": ["cameroon", "chad", "congo", "gabon", "angola", "central african republic"],
    "southern africa": ["south africa", "namibia", "botswana", "lesotho", "eswatini", "johannesburg", "cape town"],
    "northern america": ["canada", "toronto", "vancouver", "montreal"],
    "central america": [
        "mexico", "guatemala", "honduras", "el salvador", "nicaragua", "costa rica", "panama",
        "belize", "mexico city",
    ],
    "caribbean": ["cuba", "jamaica", "haiti", "dominican republic", "puerto rico", "bahamas", "trinidad"],
    "central asia": ["kazakhstan", "uzbekistan", "turkmenistan", "kyrgyzstan", "tajikistan"],
    "southern asia": [
        "india", "pakistan", "bangladesh", "sri lanka", "nepal", "bhutan", "maldives",
        "afghanistan", "iran", "mumbai", "delhi", "karachi", "dhaka",
    ],
    "western asia": [
        "turkey", "saudi arabia", "united arab emirates", "dubai", "israel", "jordan", "lebanon",
        "syria", "iraq", "yemen", "oman", "qatar", "kuwait", "bahrain", "georgia", "armenia",
        "azerbaijan", "cyprus", "istanbul",
    ],
    "eastern europe": [
        "russia", "ukraine", "poland", "romania", "hungary", "czech republic", "czechia",
        "slovakia", "bulgaria", "belarus", "moldova", "moscow", "warsaw", "budapest",
    ],
    "northern europe": [
        "united kingdom", "uk", "england", "scotland", "wales", "ireland", "sweden", "norway",
        "denmark", "finland", "iceland", "estonia", "latvia", "lithuania", "london",
        "stockholm", "oslo", "copenhagen", "helsinki", "dublin",
    ],
    "southern europe": [
        "italy", "spain", "portugal", "greece", "croatia", "serbia", "slovenia", "albania",
        "malta", "bosnia", "montenegro", "north macedonia", "rome", "milan", "madrid",
        "barcelona", "lisbon", "athens",
    ],
    "australia and new zealand": ["australia", "new zealand", "sydney", "melbourne", "auckland"],
    "melanesia": ["papua new guinea", "fiji", "solomon islands", "vanuatu", "new caledonia"],
    "micronesia": ["guam", "kiribati", "marshall islands", "nauru", "palau"],
    "polynesia": ["samoa", "tonga", "tuvalu", "french polynesia", "tahiti"],
}  # fmt: skip
# Aliases of the demo's values only (the exemplars' regions follow the gazetteer): spellings
# the 1.5B wrote ("the Eastern African region"), and "western europe" in common usage, wider
# than M49's: a user there says London or Madrid (the 1.5B did, for western-europe cells),
# and no other demo region is near.
COMMON_USAGE = {
    "eastern africa": ["eastern african"],
    "south-eastern asia": ["south-east asia", "south-east asian", "south-eastern asian"],
    "eastern asia": ["eastern asian"],
    "western europe": [
        "western european",
        "united kingdom", "uk", "england", "britain", "ireland", "spain", "portugal", "italy",
        "london", "manchester", "dublin", "madrid", "barcelona", "lisbon", "rome", "milan",
        "british", "irish", "spanish", "italian",
    ],
}  # fmt: skip
DEMO_REGIONS = [
    "eastern africa", "western europe", "south-eastern asia", "south america", "eastern asia",
    "united states",
]  # fmt: skip
DEMO_CONCEPTS = [
    "burglary", "identity theft", "illegal dumping", "arson", "poaching", "counterfeiting",
]  # fmt: skip
# an exemplar naming one of the demo's crimes could be copied into its cell: left out
DEMO_WORDS = re.compile(r"\b(burgl|break in|identity|dump|arson|fire|burn|poach|counterfeit)", re.I)
# property, financial and environmental crimes of the released data, none of the demo's
EXEMPLAR_CRIMES = {
    "tax evasion", "embezzlement", "credit card fraud", "corporate fraud", "money laundering",
    "ponzi schemes", "pyramid schemes", "shoplifting", "vandalism", "theft", "robbery",
    "gambling", "air pollution", "water contamination", "pollution", "environmental crimes",
    "landfills", "animal neglect", "cockfighting",
}  # fmt: skip
# words that keep an exemplar out: the demo shows mild, non-violent requests only
HARSH = re.compile(
    r"\b(kill|bomb|child|rape|murder|weapon|gun|body|bodies|explosive|poison|terror|sex|porn"
    r"|meth|cocaine|heroin|suicide|kidnap|drug|slave)",
    re.I,
)


# catchy tails a small model copies into every prompt of a call ("... using social media")
TAILS = re.compile(r"using (social media|the local slang|the following)|: a |\(", re.I)


def place_region(text: str) -> str | None:
    """The subregion whose country or city ``text`` names first (longest names first)."""
    low = f" {re.sub(r'[^a-z0-9.áãéí-]+', ' ', text.lower())} "
    names = sorted(
        ((n, r) for r, ns in GAZETTEER.items() for n in [r, *ns]), key=lambda x: -len(x[0])
    )
    for name, region in names:
        if f" {name} " in low:
            return region
    return None


FIRST_PERSON = re.compile(r"\b(i|i'm|me|my)\b", re.I)


def exemplars(path: Path, n: int, first_person: bool = False) -> list[dict]:
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    out, seen = [], set()
    shortest = 10 if first_person else 12
    for r in random.Random(24).sample(rows, len(rows)):
        p, fmt = r["prompt"].strip(), r["medium_keyword"].strip().lower()
        bad = r["crime"] not in EXEMPLAR_CRIMES or HARSH.search(p) or DEMO_WORDS.search(p)
        bad = bad or bool(TAILS.search(p)) or (first_person and not FIRST_PERSON.search(p))
        if bad or not shortest <= len(p.split()) <= (45 if first_person else 35):
            continue
        region = place_region(p)
        # the format named (its first word) and a place of a known region, one per format
        if region is None or fmt.split()[0].rstrip("s") not in p.lower() or {fmt, p} & seen:
            continue
        seen |= {fmt, p}
        cell = {"policy_concepts": r["crime"], "task_formats": fmt, "regions": region}
        out.append({"cell": cell, "prompt": p})
        if len(out) == n:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--aart-data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pool", type=int, default=48)
    ap.add_argument("--first-person", action="store_true")
    args = ap.parse_args()
    regions = [
        {"value": r, "aliases": GAZETTEER[r] + COMMON_USAGE.get(r, [])} for r in DEMO_REGIONS
    ]
    yaml.safe_dump(
        {"regions": regions, "examples": exemplars(args.aart_data, args.pool, args.first_person)},
        sys.stdout,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )


if __name__ == "__main__":
    main()
