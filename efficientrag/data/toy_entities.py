"""The toy world's entities and their paragraphs (see :mod:`efficientrag.data.toy_world`).

Every entity (country, city, organization, person, work) gets exactly one paragraph of 2-4
sentences stating several of its facts, so labeling the words that answer a sub-question means
picking them out of a paragraph that also holds other years, places and names. One
``random.Random`` drives the names and the paragraphs' templates; nothing iterates over a set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TypeVar

from efficientrag.errors import OperationError

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
            raise OperationError(f"toy world name clash: {entity.name!r}")
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
