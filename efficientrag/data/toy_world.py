"""A fictional multi-hop world written by code, so tests and the quickstart need no download.

Why it looks the way it does:

- Every entity (country, city, organization, person, work) gets exactly one paragraph of 2-4
  sentences stating several of its facts, so labeling the words that answer a sub-question means
  picking them out of a paragraph that also holds other years, places and names.
- A bridge question names the first entity only ("Where was the director of <Work> born?"); the
  bridge entity (the director) is absent from the question and named in the hop-1 paragraph, so
  one retrieval with the question is genuinely weaker than following the hop.
- Distractors are confusable on purpose: paragraphs that mention a gold entity (other works by the
  same director, the spouse, people born in the same city), works sharing a title word, people in
  the same occupation, cities of the same country.
- Records are written in MuSiQue's format (plus a ``type`` key) and read by the MuSiQue reader,
  so the toy world goes through the same code as real data.

Determinism: one ``random.Random(seed)`` drives everything and nothing iterates over a set, so the
same arguments give byte-identical output.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from efficientrag.jsonl import write_jsonl

QUESTION_TYPES = ("bridge", "compositional", "comparison", "bridge_comparison")
DEFAULT_TYPE_MIX = {"bridge": 0.4, "compositional": 0.25, "comparison": 0.25, "bridge_comparison": 0.1}

_ONSETS = ["b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "st", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "ai", "ou"]
_CODAS = ["", "", "", "", "n", "r", "l", "s", "m"]

_ADJECTIVES = ["Silent", "Crimson", "Hollow", "Distant", "Last", "Broken", "Golden", "Quiet", "Burning"]
_ADJECTIVES += ["Frozen", "Hidden", "Pale", "Endless", "Iron", "Velvet", "Wandering", "Bitter", "Northern"]
_NOUNS = ["Harbor", "Lantern", "Orchard", "River", "Mirror", "Garden", "Tower", "Winter", "Compass"]
_NOUNS += ["Meadow", "Signal", "Horizon", "Ember", "Archive", "Bridge", "Voyage", "Echo", "Island"]
_NOUNS += ["Crown", "Letter", "Season", "Shore", "Feather", "Road"]
_TITLE_PATTERNS = ["The {a} {n}", "{a} {ns}", "The {n} and the {m}", "{n} of the {a} {m}", "After the {n}"]

_LANDFORMS = ["Peninsula", "Plateau", "Coast", "Archipelago", "Basin"]
_STATE_FORMS = ["Republic", "Kingdom", "Federation", "Commonwealth"]
_TRADES = ["glassworks", "textile mills", "salt markets", "shipyards", "copper mines", "tea houses"]
_TRADES += ["printing presses", "horse fairs", "orchards"]
_ORDINALS = ["first", "second", "third", "fourth", "fifth"]


@dataclass(frozen=True)
class Field:
    """One creative field: its works, the people who make them and the organizations behind them."""

    work: str
    role: str
    occupation: str
    org_kind: str
    org_suffixes: tuple[str, ...]
    made: str
    released: str
    who_made: str
    genres: tuple[str, ...]


FIELDS = {
    "film": Field(
        work="film", role="director", occupation="film director", org_kind="film studio",
        org_suffixes=("Pictures", "Studios", "Films"), made="produced", released="released",
        who_made="Who directed {t}?", genres=("drama", "comedy", "thriller", "western", "war"),
    ),
    "novel": Field(
        work="novel", role="author", occupation="novelist", org_kind="publishing house",
        org_suffixes=("Press", "House", "Books"), made="published", released="published",
        who_made="Who wrote {t}?", genres=("mystery", "historical", "adventure", "crime"),
    ),
    "album": Field(
        work="album", role="singer", occupation="singer-songwriter", org_kind="record label",
        org_suffixes=("Records", "Sound", "Music"), made="released", released="released",
        who_made="Who recorded {t}?", genres=("folk", "jazz", "rock", "blues", "electronic"),
    ),
}  # fmt: skip


E = TypeVar("E", bound="Entity")


@dataclass
class Entity:
    """Anything with a paragraph. ``mentions`` are the names the paragraph states (its out-links)."""

    name: str
    kind: str
    paragraph: str = ""
    mentions: list[str] = field(default_factory=list)


@dataclass
class Country(Entity):
    official: str = ""
    region: str = ""
    capital: str = ""
    year: int = 0


@dataclass
class City(Entity):
    country: str = ""
    founded: int = 0
    river: str = ""
    trade: str = ""


@dataclass
class Org(Entity):
    stem: str = ""
    field_name: str = ""
    city: str = ""
    founded: int = 0


@dataclass
class Person(Entity):
    field_name: str = ""
    he: str = "he"
    born: int = 0
    birthplace: str = ""
    employer: str = ""
    spouse: str | None = None
    career: int = 0


@dataclass
class Work(Entity):
    field_name: str = ""
    year: int = 0
    creator: str = ""
    org: str = ""
    genre: str = ""
    setting: str = ""


@dataclass
class Step:
    question: str
    answer: str
    entity: str


@dataclass
class QuestionSpec:
    type: str
    question: str
    answer: str
    steps: list[Step]
    aliases: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # bridge entities the question must not name

    @property
    def gold(self) -> list[str]:
        return list(dict.fromkeys(s.entity for s in self.steps))


class World:
    """All entities, built from one seeded RNG; names are unique across every kind."""

    def __init__(self, rng: random.Random, scale: int) -> None:
        self.rng = rng
        self.entities: dict[str, Entity] = {}
        self._words: set[str] = set()
        self.countries: list[Country] = []
        self.cities: list[City] = []
        self.orgs: dict[str, list[Org]] = {f: [] for f in FIELDS}
        self.people: dict[str, list[Person]] = {f: [] for f in FIELDS}
        self.works: dict[str, list[Work]] = {f: [] for f in FIELDS}
        self._build(scale)
        self.mentioned_by: dict[str, list[str]] = {name: [] for name in self.entities}
        for e in self.entities.values():
            for m in e.mentions:
                self.mentioned_by[m].append(e.name)

    # --- names -------------------------------------------------------------------------------

    def _word(self, min_syl: int, max_syl: int, suffix: str = "") -> str:
        rng = self.rng
        while True:
            n = rng.randint(min_syl, max_syl)
            w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))
            w = (w + suffix).capitalize()
            if 4 <= len(w) <= 10 and w.lower() not in self._words:
                self._words.add(w.lower())
                return w

    def _add(self, entity: Entity) -> None:
        if entity.name in self.entities:
            raise RuntimeError(f"toy world name clash: {entity.name!r}")
        self.entities[entity.name] = entity

    def _title(self) -> str:
        rng = self.rng
        while True:
            noun, other = rng.sample(_NOUNS, 2)
            plural = noun + ("es" if noun.endswith(("s", "o")) else "s")
            pattern = rng.choice(_TITLE_PATTERNS)
            title = pattern.format(a=rng.choice(_ADJECTIVES), n=noun, ns=plural, m=other)
            if title not in self.entities:
                return title

    # --- entities ----------------------------------------------------------------------------

    def _build(self, s: int) -> None:
        rng = self.rng
        for _ in range(3 + s):
            name = self._word(2, 2, rng.choice(["ia", "ora", "esh", "avia", "enne"]))
            country = Country(name, "country", official=f"{rng.choice(_STATE_FORMS)} of {name}")
            country.region = f"{self._word(1, 2)} {rng.choice(_LANDFORMS)}"
            country.year = rng.randint(1700, 1950)
            self.countries.append(country)
            self._add(country)
        for i in range(6 + 5 * s):
            country = self.countries[i % len(self.countries)]
            name = self._word(1, 2, rng.choice(["", "", "mere", "ford", "holm", "vale", "port"]))
            city = City(name, "city", country=country.name, founded=rng.randint(900, 1800))
            city.river, city.trade = self._word(1, 2), rng.choice(_TRADES)
            if not country.capital:
                country.capital = name
            self.cities.append(city)
            self._add(city)
        for fname, fld in FIELDS.items():
            for _ in range(2 + s):
                stem = self._word(2, 3)
                org = Org(f"{stem} {rng.choice(fld.org_suffixes)}", "org", stem=stem, field_name=fname)
                org.city, org.founded = rng.choice(self.cities).name, rng.randint(1850, 1990)
                self.orgs[fname].append(org)
                self._add(org)
        for fname in FIELDS:
            for _ in range(4 + 4 * s):
                person = Person(f"{self._word(2, 2)} {self._word(2, 3)}", "person", field_name=fname)
                person.he = rng.choice(["he", "she"])
                person.born = rng.randint(1890, 1975)
                person.birthplace = rng.choice(self.cities).name
                person.employer = rng.choice(self.orgs[fname]).name
                person.career = person.born + rng.randint(18, 30)
                self.people[fname].append(person)
                self._add(person)
        everyone = [p for fname in FIELDS for p in self.people[fname]]
        rng.shuffle(everyone)
        for a, b in zip(everyone[0::2], everyone[1::2], strict=False):
            if rng.random() < 0.7:
                a.spouse, b.spouse = b.name, a.name
        for fname, fld in FIELDS.items():
            for _ in range(4 + 7 * s):
                creator = rng.choice(self.people[fname])
                work = Work(self._title(), "work", field_name=fname, creator=creator.name)
                work.year = min(2022, creator.born + rng.randint(22, 60))
                work.org = rng.choice(self.orgs[fname]).name
                work.genre = rng.choice(fld.genres)
                work.setting = rng.choice(self.cities).name
                self.works[fname].append(work)
                self._add(work)
        for entity in self.entities.values():
            _write_paragraph(entity, rng)

    # --- lookups -----------------------------------------------------------------------------

    def get(self, name: str, kind: type[E]) -> E:
        """The entity called ``name``, which must be a ``kind``."""
        e = self.entities[name]
        assert isinstance(e, kind)
        return e

    def same_kind(self, entity: Entity) -> list[Entity]:
        if isinstance(entity, Work):
            return list(self.works[entity.field_name])
        if isinstance(entity, Person):
            return list(self.people[entity.field_name])
        if isinstance(entity, Org):
            return list(self.orgs[entity.field_name])
        if isinstance(entity, City):
            return list(self.cities)
        return list(self.countries)

    def confusable(self, entity: Entity) -> list[str]:
        """Paragraphs a retriever (or a reader) could mistake for this one's."""
        out = list(self.mentioned_by[entity.name])
        if isinstance(entity, Work):
            words = set(entity.name.split()) - {"The", "and", "the", "of", "After"}
            out += [w.name for w in self.works[entity.field_name] if words & set(w.name.split())]
        elif isinstance(entity, Person):
            out += [
                p.name
                for p in self.people[entity.field_name]
                if p.birthplace == entity.birthplace or abs(p.born - entity.born) <= 3
            ]
        elif isinstance(entity, City):
            out += [c.name for c in self.cities if c.country == entity.country]
        elif isinstance(entity, Org):
            out += [o.name for o in self.orgs[entity.field_name] if o.city == entity.city]
        return [n for n in dict.fromkeys(out) if n != entity.name]


def _a(word: object) -> str:
    """The indefinite article for a word or a year ("an 1800 film", "an adventure novel")."""
    w = str(word)
    return "an" if w[:1].lower() in "aeiou" or w.startswith(("8", "11", "18")) else "a"


def _write_paragraph(e: Entity, rng: random.Random) -> None:
    """One paragraph per entity; the template is picked by the RNG so paragraphs vary in shape."""
    v = rng.random() < 0.5
    if isinstance(e, Country):
        e.mentions = [e.capital]
        if v:
            e.paragraph = (
                f"{e.name}, officially the {e.official}, is a country in the {e.region}. "
                f"Its capital is {e.capital}. {e.name} adopted its present constitution in {e.year}."
            )
        else:
            e.paragraph = (
                f"The {e.official} is a sovereign state in the {e.region}. It adopted its constitution "
                f"in {e.year}, and its capital and largest city is {e.capital}."
            )
    elif isinstance(e, City):
        e.mentions = [e.country]
        if v:
            e.paragraph = (
                f"{e.name} is a city in {e.country}, on the banks of the {e.river} River. "
                f"It was founded in {e.founded} and is known for its {e.trade}."
            )
        else:
            e.paragraph = (
                f"Founded in {e.founded}, {e.name} is a {rng.choice(['small', 'mid-sized', 'large'])} city "
                f"in {e.country}. It lies where the {e.river} River meets the sea, and its economy rests "
                f"on {e.trade}."
            )
    elif isinstance(e, Org):
        kind = FIELDS[e.field_name].org_kind
        e.mentions = [e.city]
        if v:
            e.paragraph = (
                f"{e.name} is a {kind} headquartered in {e.city}. It was founded in {e.founded} "
                f"and employs about {rng.randint(3, 90) * 10} people."
            )
        else:
            e.paragraph = (
                f"Founded in {e.founded}, {e.name} is an independent {kind} based in {e.city}. "
                f"Its catalogue includes more than {rng.randint(2, 60) * 10} titles."
            )
    elif isinstance(e, Person):
        _write_person(e, v)
    elif isinstance(e, Work):
        _write_work(e, v, rng)


def _write_person(e: Person, v: bool) -> None:
    occupation = FIELDS[e.field_name].occupation
    his = "his" if e.he == "he" else "her"
    he = e.he.capitalize()
    e.mentions = [e.birthplace, e.employer] + ([e.spouse] if e.spouse else [])
    if v:
        text = (
            f"{e.name} (born {e.born} in {e.birthplace}) is a {occupation}. "
            f"{he} began {his} career in {e.career} and has worked for {e.employer}."
        )
        if e.spouse:
            text += f" {he} is married to {e.spouse}."
    else:
        text = (
            f"{e.name} is a {occupation} who was born in {e.birthplace} in {e.born}. "
            f"Since {e.career}, {e.he} has been employed by {e.employer}."
        )
        if e.spouse:
            text += f" {his.capitalize()} spouse is {e.spouse}."
    e.paragraph = text


def _write_work(e: Work, v: bool, rng: random.Random) -> None:
    e.mentions = [e.creator, e.org, e.setting]
    t, y, g, c, o, s = e.name, e.year, e.genre, e.creator, e.org, e.setting
    if e.field_name == "film":
        e.paragraph = (
            f"{t} is {_a(y)} {y} {g} film directed by {c}. It was produced by {o} and is set in {s}."
            if v
            else f"{t} is {_a(g)} {g} film by director {c}, released in {y}. The film was made by {o}, "
            f"and its story takes place in {s}."
        )
    elif e.field_name == "novel":
        e.paragraph = (
            f"{t} is {_a(g)} {g} novel written by {c}. It was first published in {y} by {o}. "
            f"The story takes place in {s}."
            if v
            else f"{t} is {_a(y)} {y} {g} novel by {c}, published by {o}. Its plot follows a family in {s}."
        )
    else:
        e.paragraph = (
            f"{t} is {_a(g)} {g} album by the singer {c}, released in {y} on {o}. It was recorded in {s}."
            if v
            else f"{t} is the {rng.choice(_ORDINALS)} studio album by {c}. It was released on {o} in {y} "
            f"and recorded over {rng.randint(2, 14)} weeks in {s}."
        )


# --- questions ---------------------------------------------------------------------------------

QuestionMaker = Callable[[World, random.Random], "QuestionSpec | None"]


def _any_work(world: World, rng: random.Random) -> tuple[Work, Field]:
    fname = rng.choice(list(FIELDS))
    return rng.choice(world.works[fname]), FIELDS[fname]


def _work_and_creator(world: World, rng: random.Random) -> tuple[Work, Field, Person, Step]:
    """A random work, its field, its creator and the question's first hop ("Who directed T?")."""
    work, fld = _any_work(world, rng)
    person = world.get(work.creator, Person)
    return work, fld, person, Step(fld.who_made.format(t=work.name), person.name, work.name)


def _org_aliases(org: Org) -> list[str]:
    return [org.stem]


def _bridge(world: World, rng: random.Random) -> QuestionSpec | None:
    work, fld, person, first = _work_and_creator(world, rng)
    t, role = work.name, fld.role
    kind = rng.randrange(7)
    if kind == 0:
        q, a = f"Where was the {role} of {t} born?", person.birthplace
        return QuestionSpec(
            "bridge", q, a, [first, Step("Where was #1 born?", a, person.name)], hidden=[person.name]
        )
    if kind == 1:
        q, a = f"In what year was the {role} of {t} born?", str(person.born)
        return QuestionSpec(
            "bridge", q, a, [first, Step("When was #1 born?", a, person.name)], hidden=[person.name]
        )
    if kind == 2:
        if person.spouse is None:
            return None
        q, a = f"Who is the spouse of the {role} of {t}?", person.spouse
        steps = [first, Step("Who is #1 married to?", a, person.name)]
        return QuestionSpec("bridge", q, a, steps, hidden=[person.name])
    if kind == 3:
        org = world.get(person.employer, Org)
        q = f"Which {fld.org_kind} has the {role} of {t} worked for?"
        steps = [first, Step(f"Which {fld.org_kind} has #1 worked for?", org.name, person.name)]
        return QuestionSpec("bridge", q, org.name, steps, aliases=_org_aliases(org), hidden=[person.name])
    if kind == 4:
        org = world.get(work.org, Org)
        q = f"In which city is the {fld.org_kind} that {fld.made} {t} headquartered?"
        steps = [
            Step(f"Which {fld.org_kind} {fld.made} {t}?", org.name, work.name),
            Step("Where is #1 headquartered?", org.city, org.name),
        ]
        return QuestionSpec("bridge", q, org.city, steps, hidden=[org.name])
    if kind == 5:
        city = world.get(person.birthplace, City)
        q = f"In which country was {person.name} born?"
        steps = [
            Step(f"Where was {person.name} born?", city.name, person.name),
            Step("Which country is #1 in?", city.country, city.name),
        ]
        official = world.get(city.country, Country).official
        return QuestionSpec("bridge", q, city.country, steps, aliases=[official], hidden=[city.name])
    org = rng.choice(world.orgs[rng.choice(list(FIELDS))])
    city = world.get(org.city, City)
    q = f"In what year was the city that is home to {org.name} founded?"
    steps = [
        Step(f"Where is {org.name} headquartered?", city.name, org.name),
        Step("When was #1 founded?", str(city.founded), city.name),
    ]
    return QuestionSpec("bridge", q, str(city.founded), steps, hidden=[city.name])


def _compositional(world: World, rng: random.Random) -> QuestionSpec | None:
    work, fld, person, first = _work_and_creator(world, rng)
    t, role = work.name, fld.role
    kind = rng.randrange(4)
    if kind == 0:
        city = world.get(person.birthplace, City)
        country = world.get(city.country, Country)
        q = f"In which country was the {role} of {t} born?"
        steps = [
            first,
            Step("Where was #1 born?", city.name, person.name),
            Step("Which country is #2 in?", country.name, city.name),
        ]
        return QuestionSpec(
            "compositional", q, country.name, steps, [country.official], [person.name, city.name]
        )
    if kind == 1:
        city = world.get(person.birthplace, City)
        q = f"When was the birthplace of the {role} of {t} founded?"
        a = str(city.founded)
        steps = [
            first,
            Step("Where was #1 born?", city.name, person.name),
            Step("When was #2 founded?", a, city.name),
        ]
        return QuestionSpec("compositional", q, a, steps, hidden=[person.name, city.name])
    if kind == 2:
        org = world.get(work.org, Org)
        city = world.get(org.city, City)
        country = world.get(city.country, Country)
        q = f"In which country is the {fld.org_kind} that {fld.made} {t} headquartered?"
        steps = [
            Step(f"Which {fld.org_kind} {fld.made} {t}?", org.name, work.name),
            Step("Where is #1 headquartered?", city.name, org.name),
            Step("Which country is #2 in?", country.name, city.name),
        ]
        return QuestionSpec(
            "compositional", q, country.name, steps, [country.official], [org.name, city.name]
        )
    org = world.get(person.employer, Org)
    q = f"In what year was the {fld.org_kind} that employs the {role} of {t} founded?"
    a = str(org.founded)
    steps = [
        first,
        Step(f"Which {fld.org_kind} has #1 worked for?", org.name, person.name),
        Step("When was #2 founded?", a, org.name),
    ]
    return QuestionSpec("compositional", q, a, steps, hidden=[person.name, org.name])


def _comparison(world: World, rng: random.Random) -> QuestionSpec | None:
    fld = FIELDS[rng.choice(list(FIELDS))]
    kind = rng.randrange(4)
    if kind == 0:
        items: list[Any] = world.works[fld.work]
        attr, what, ask = (
            "year",
            f"Which {fld.work} was {fld.released} first",
            f"When was {{n}} {fld.released}?",
        )
    elif kind == 1:
        items, attr, what, ask = world.people[fld.work], "born", "Who was born first", "When was {n} born?"
    elif kind == 2:
        items, attr = world.orgs[fld.work], "founded"
        what, ask = f"Which {fld.org_kind} was founded earlier", "When was {n} founded?"
    else:
        items, attr, what, ask = (
            world.cities,
            "founded",
            "Which city was founded earlier",
            "When was {n} founded?",
        )
    a, b = rng.sample(items, 2)
    if getattr(a, attr) == getattr(b, attr):
        return None
    winner, other = (a, b) if getattr(a, attr) < getattr(b, attr) else (b, a)
    shown = [winner.name, other.name]
    rng.shuffle(shown)
    q = f"{what}, {shown[0]} or {shown[1]}?"
    # The answer entity's hop comes last, so the answer is in the last gold paragraph.
    steps = [Step(ask.format(n=e.name), str(getattr(e, attr)), e.name) for e in (other, winner)]
    return QuestionSpec("comparison", q, winner.name, steps)


def _bridge_comparison(world: World, rng: random.Random) -> QuestionSpec | None:
    fld = FIELDS[rng.choice(list(FIELDS))]
    a, b = rng.sample(world.works[fld.work], 2)
    pa, pb = world.get(a.creator, Person), world.get(b.creator, Person)
    if pa.born == pb.born:
        return None
    winner, other = (a, b) if pa.born < pb.born else (b, a)
    shown = [a.name, b.name]
    rng.shuffle(shown)
    q = f"Which {fld.work} has the {fld.role} who was born earlier, {shown[0]} or {shown[1]}?"
    steps: list[Step] = []
    for work in (other, winner):
        creator = world.get(work.creator, Person)
        k = len(steps) + 1
        steps += [
            Step(fld.who_made.format(t=work.name), creator.name, work.name),
            Step(f"When was #{k} born?", str(creator.born), creator.name),
        ]
    return QuestionSpec("bridge_comparison", q, winner.name, steps, hidden=[pa.name, pb.name])


MAKERS: dict[str, QuestionMaker] = {
    "bridge": _bridge,
    "compositional": _compositional,
    "comparison": _comparison,
    "bridge_comparison": _bridge_comparison,
}


# --- assembly ------------------------------------------------------------------------------------


def _type_counts(num_questions: int, mix: dict[str, float]) -> dict[str, int]:
    """Largest-remainder split of ``num_questions`` by ``mix`` (exact, deterministic)."""
    unknown = [t for t in mix if t not in QUESTION_TYPES]
    if unknown:
        raise ValueError(f"unknown toy question type(s) {unknown}; known: {list(QUESTION_TYPES)}")
    if any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError(f"type_mix weights must be >= 0 with a positive sum, got {mix}")
    total = sum(mix.values())
    exact = {t: num_questions * mix.get(t, 0.0) / total for t in QUESTION_TYPES}
    counts = {t: int(x) for t, x in exact.items()}
    by_remainder = sorted(QUESTION_TYPES, key=lambda t: (-(exact[t] - counts[t]), QUESTION_TYPES.index(t)))
    for t in by_remainder[: num_questions - sum(counts.values())]:
        counts[t] += 1
    return counts


def _distractors(world: World, rng: random.Random, gold: list[str], n: int) -> list[str]:
    strong: list[str] = []
    for name in gold:
        strong += world.confusable(world.entities[name])
    strong = [x for x in dict.fromkeys(strong) if x not in gold]
    rng.shuffle(strong)
    chosen = strong[:n]
    if len(chosen) < n:
        same = [e.name for g in gold for e in world.same_kind(world.entities[g])]
        same = [x for x in dict.fromkeys(same) if x not in gold and x not in chosen]
        rng.shuffle(same)
        chosen += same[: n - len(chosen)]
    if len(chosen) < n:
        rest = [x for x in world.entities if x not in gold and x not in chosen]
        chosen += rng.sample(rest, min(n - len(chosen), len(rest)))
    return chosen


def _valid(spec: QuestionSpec) -> bool:
    """The guarantees the toy world makes; a spec that breaks one is redrawn."""
    if any(h in spec.question for h in spec.hidden):
        return False
    return not (spec.type in ("bridge", "compositional") and spec.answer in spec.question)


def _record(
    spec: QuestionSpec, world: World, rng: random.Random, qid: str, n_paragraphs: int, step_id: int
) -> dict[str, Any]:
    gold = spec.gold
    names = gold + _distractors(world, rng, gold, max(0, n_paragraphs - len(gold)))
    rng.shuffle(names)
    position = {name: i for i, name in enumerate(names)}
    gold_set = set(gold)
    paragraphs = [
        {
            "idx": i,
            "title": name,
            "paragraph_text": world.entities[name].paragraph,
            "is_supporting": name in gold_set,
        }
        for i, name in enumerate(names)
    ]
    decomposition = [
        {
            "id": step_id + k,
            "question": s.question,
            "answer": s.answer,
            "paragraph_support_idx": position[s.entity],
        }
        for k, s in enumerate(spec.steps)
    ]
    return {
        "id": qid,
        "type": spec.type,
        "paragraphs": paragraphs,
        "question": spec.question,
        "question_decomposition": decomposition,
        "answer": spec.answer,
        "answer_aliases": [a for a in spec.aliases if a != spec.answer],
        "answerable": True,
    }


def generate_toy_world(
    seed: int = 0,
    num_questions: int = 300,
    paragraphs_per_question: int = 10,
    type_mix: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """MuSiQue-format records (plus ``type``) for a freshly generated fictional world."""
    if num_questions < 1:
        raise ValueError(f"num_questions must be >= 1, got {num_questions}")
    if paragraphs_per_question < 4:
        raise ValueError(
            f"paragraphs_per_question must be >= 4 (bridge-comparison has 4 gold), got {paragraphs_per_question}"
        )
    counts = _type_counts(num_questions, dict(type_mix) if type_mix is not None else DEFAULT_TYPE_MIX)
    rng = random.Random(seed)
    world = World(rng, scale=max(1, -(-num_questions // 50)))
    order = [t for t in QUESTION_TYPES for _ in range(counts[t])]
    rng.shuffle(order)
    seen: set[str] = set()
    records = []
    step_id = 1
    for i, qtype in enumerate(order):
        for _ in range(500):
            spec = MAKERS[qtype](world, rng)
            if spec is not None and spec.question not in seen and _valid(spec):
                break
        else:
            raise RuntimeError(f"could not draw a new {qtype} question after 500 tries (world too small?)")
        seen.add(spec.question)
        qid = f"{qtype}__toy{seed}_{i:05d}"
        records.append(_record(spec, world, rng, qid, paragraphs_per_question, step_id))
        step_id += len(spec.steps)
    return records


def write_toy_world(path: str | Path, **kwargs: Any) -> int:
    """Write :func:`generate_toy_world` records as JSONL; returns the number of questions."""
    return write_jsonl(path, generate_toy_world(**kwargs))
