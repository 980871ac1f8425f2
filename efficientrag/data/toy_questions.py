"""The toy world's questions: bridge, compositional, comparison and bridge-comparison makers.

A bridge question names the first entity only ("Where was the director of <Work> born?"); the
bridge entity is absent from the question and named in the hop-1 paragraph, so one retrieval with
the question is genuinely weaker than following the hop. A maker returns None when the world
offers no valid question of its kind for the entities it drew.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from efficientrag.data.toy_entities import FIELDS, City, Country, Field, Org, Person, Work, World


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


QuestionMaker = Callable[[World, random.Random], "QuestionSpec | None"]


def _any_work(world: World, rng: random.Random) -> tuple[Work, Field]:
    fname = rng.choice(list(FIELDS))
    return rng.choice(world.works[fname]), FIELDS[fname]


def _work_and_creator(world: World, rng: random.Random) -> tuple[Work, Field, Person, Step]:
    """A random work, its field, its creator and the question's first hop ("Who directed T?")."""
    work, fld = _any_work(world, rng)
    person = world.get(work.creator, Person)
    return work, fld, person, _creator(fld, work)


def _org_aliases(org: Org) -> list[str]:
    return [org.stem]


def _chain(qtype: str, question: str, steps: list[Step], aliases: list[str] | None = None) -> QuestionSpec:
    """A question answered by following ``steps`` in order, each step's answer the next step's
    entity: the answer is the last step's, and every earlier answer is a bridge entity the question
    must not name."""
    hidden = [s.answer for s in steps[:-1]]
    return QuestionSpec(qtype, question, steps[-1].answer, steps, aliases or [], hidden)


# One hop of a chain, each worded once. ``ref`` is how the step's question names its entity: by
# name, or "#k" for the answer of step k.


def _creator(fld: Field, work: Work) -> Step:
    return Step(fld.who_made.format(t=work.name), work.creator, work.name)


def _birthplace(ref: str, person: Person) -> Step:
    return Step(f"Where was {ref} born?", person.birthplace, person.name)


def _birth_year(ref: str, person: Person) -> Step:
    return Step(f"When was {ref} born?", str(person.born), person.name)


def _employer(ref: str, fld: Field, person: Person) -> Step:
    return Step(f"Which {fld.org_kind} has {ref} worked for?", person.employer, person.name)


def _maker(fld: Field, work: Work) -> Step:
    return Step(f"Which {fld.org_kind} {fld.made} {work.name}?", work.org, work.name)


def _headquarters(ref: str, org: Org) -> Step:
    return Step(f"Where is {ref} headquartered?", org.city, org.name)


def _country(ref: str, city: City) -> Step:
    return Step(f"Which country is {ref} in?", city.country, city.name)


def _founded(ref: str, entity: City | Org) -> Step:
    return Step(f"When was {ref} founded?", str(entity.founded), entity.name)


def _bridge(world: World, rng: random.Random) -> QuestionSpec | None:
    work, fld, person, first = _work_and_creator(world, rng)
    t, role = work.name, fld.role
    kind = rng.randrange(7)
    if kind == 0:
        q = f"Where was the {role} of {t} born?"
        return _chain("bridge", q, [first, _birthplace("#1", person)])
    if kind == 1:
        q = f"In what year was the {role} of {t} born?"
        return _chain("bridge", q, [first, _birth_year("#1", person)])
    if kind == 2:
        if person.spouse is None:
            return None
        q = f"Who is the spouse of the {role} of {t}?"
        return _chain("bridge", q, [first, Step("Who is #1 married to?", person.spouse, person.name)])
    if kind == 3:
        q = f"Which {fld.org_kind} has the {role} of {t} worked for?"
        org = world.get(person.employer, Org)
        return _chain("bridge", q, [first, _employer("#1", fld, person)], _org_aliases(org))
    if kind == 4:
        q = f"In which city is the {fld.org_kind} that {fld.made} {t} headquartered?"
        return _chain("bridge", q, [_maker(fld, work), _headquarters("#1", world.get(work.org, Org))])
    if kind == 5:
        city = world.get(person.birthplace, City)
        q = f"In which country was {person.name} born?"
        official = world.get(city.country, Country).official
        return _chain("bridge", q, [_birthplace(person.name, person), _country("#1", city)], [official])
    org = rng.choice(world.orgs[rng.choice(list(FIELDS))])
    q = f"In what year was the city that is home to {org.name} founded?"
    return _chain("bridge", q, [_headquarters(org.name, org), _founded("#1", world.get(org.city, City))])


def _compositional(world: World, rng: random.Random) -> QuestionSpec | None:
    work, fld, person, first = _work_and_creator(world, rng)
    t, role = work.name, fld.role
    kind = rng.randrange(4)
    if kind == 0:
        city = world.get(person.birthplace, City)
        country = world.get(city.country, Country)
        q = f"In which country was the {role} of {t} born?"
        steps = [first, _birthplace("#1", person), _country("#2", city)]
        return _chain("compositional", q, steps, [country.official])
    if kind == 1:
        city = world.get(person.birthplace, City)
        q = f"When was the birthplace of the {role} of {t} founded?"
        return _chain("compositional", q, [first, _birthplace("#1", person), _founded("#2", city)])
    if kind == 2:
        org = world.get(work.org, Org)
        city = world.get(org.city, City)
        country = world.get(city.country, Country)
        q = f"In which country is the {fld.org_kind} that {fld.made} {t} headquartered?"
        steps = [_maker(fld, work), _headquarters("#1", org), _country("#2", city)]
        return _chain("compositional", q, steps, [country.official])
    org = world.get(person.employer, Org)
    q = f"In what year was the {fld.org_kind} that employs the {role} of {t} founded?"
    return _chain("compositional", q, [first, _employer("#1", fld, person), _founded("#2", org)])


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
            _creator(fld, work),
            _birth_year(f"#{k}", creator),
        ]
    return QuestionSpec("bridge_comparison", q, winner.name, steps, hidden=[pa.name, pb.name])


MAKERS: dict[str, QuestionMaker] = {
    "bridge": _bridge,
    "compositional": _compositional,
    "comparison": _comparison,
    "bridge_comparison": _bridge_comparison,
}
QUESTION_TYPES = tuple(MAKERS)
