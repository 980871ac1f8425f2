"""Few-shot chain-of-thought exemplars of the active RAG methods, one set per dataset.

Written for this project (not copied from the papers' prompts), in the format both papers use:
a question, then a few sentences of reasoning, then "So the answer is <answer>." Each set has
eight exemplars in its dataset's style (FLARE uses 8 on 2Wiki; DRAGIN 6 on 2Wiki and 8
elsewhere; a preset says how many), ordered so that the first few already mix the question
types. The toy set is about a fictional world, like the toy dataset itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from efficientrag.errors import InvalidArgumentError


@dataclass(frozen=True)
class CoTExemplar:
    question: str
    # Reasoning sentences ending in "So the answer is <answer>."
    answer: str

    def __post_init__(self) -> None:
        if "So the answer is" not in self.answer:
            raise InvalidArgumentError(f"exemplar {self.question!r} must end with 'So the answer is ...'")


E = CoTExemplar

TWOWIKI = (
    E(
        "When did the director of film Vertigo die?",
        "Vertigo was directed by Alfred Hitchcock. Alfred Hitchcock died on 29 April 1980. "
        "So the answer is 29 April 1980.",
    ),
    E(
        "Are Lake Titicaca and Lake Victoria located in the same country?",
        "Lake Titicaca lies on the border of Peru and Bolivia. Lake Victoria is shared by Uganda, Kenya "
        "and Tanzania. Thus, they are not in the same country. So the answer is no.",
    ),
    E(
        "Which film came out first, Psycho or The Birds?",
        "Psycho was released in 1960. The Birds was released in 1963. Thus, Psycho came out first. "
        "So the answer is Psycho.",
    ),
    E(
        "Who is the father-in-law of Mumtaz Mahal?",
        "Mumtaz Mahal was married to Shah Jahan. The father of Shah Jahan was Jahangir. Thus, the "
        "father-in-law of Mumtaz Mahal is Jahangir. So the answer is Jahangir.",
    ),
    E(
        "Do the directors of films The Seventh Seal and Rashomon have the same nationality?",
        "The Seventh Seal was directed by Ingmar Bergman. Rashomon was directed by Akira Kurosawa. "
        "Ingmar Bergman was Swedish. Akira Kurosawa was Japanese. Thus, they do not have the same "
        "nationality. So the answer is no.",
    ),
    E(
        "Who was born first, Marie Curie or Albert Einstein?",
        "Marie Curie was born on 7 November 1867. Albert Einstein was born on 14 March 1879. Thus, Marie "
        "Curie was born first. So the answer is Marie Curie.",
    ),
    E(
        "Where was the director of film Metropolis (1927 Film) born?",
        "Metropolis was directed by Fritz Lang. Fritz Lang was born in Vienna. So the answer is Vienna.",
    ),
    E(
        "Who is the mother of the composer of The Magic Flute?",
        "The Magic Flute was composed by Wolfgang Amadeus Mozart. The mother of Wolfgang Amadeus Mozart "
        "was Anna Maria Pertl. So the answer is Anna Maria Pertl.",
    ),
)

HOTPOTQA = (
    E(
        "What is the capital of the country where the Atacama Desert is located?",
        "The Atacama Desert is located in Chile. The capital of Chile is Santiago. So the answer is "
        "Santiago.",
    ),
    E(
        "Were Leo Tolstoy and Fyodor Dostoevsky of the same nationality?",
        "Leo Tolstoy was a Russian writer. Fyodor Dostoevsky was a Russian writer. Thus, they were of the "
        "same nationality. So the answer is yes.",
    ),
    E(
        "Which magazine was started first, Time or The New Yorker?",
        "Time was first published in 1923. The New Yorker was first published in 1925. Thus, Time was "
        "started first. So the answer is Time.",
    ),
    E(
        "The Eiffel Tower was built by the company of an engineer born in which city?",
        "The Eiffel Tower was built by the company of Gustave Eiffel. Gustave Eiffel was born in Dijon. "
        "So the answer is Dijon.",
    ),
    E(
        "What instrument did the composer of the Moonlight Sonata play?",
        "The Moonlight Sonata was composed by Ludwig van Beethoven. Ludwig van Beethoven was a pianist. "
        "So the answer is piano.",
    ),
    E(
        "Which is taller, Mount Kilimanjaro or Mount Kenya?",
        "Mount Kilimanjaro is 5,895 metres high. Mount Kenya is 5,199 metres high. Thus, Mount "
        "Kilimanjaro is taller. So the answer is Mount Kilimanjaro.",
    ),
    E(
        "Who wrote the novel that the film Blade Runner is based on?",
        "Blade Runner was adapted from the novel Do Androids Dream of Electric Sheep. That novel was "
        "written by Philip K. Dick. So the answer is Philip K. Dick.",
    ),
    E(
        "What is the nationality of the director of the film Amelie?",
        "Amelie was directed by Jean-Pierre Jeunet. Jean-Pierre Jeunet is French. So the answer is French.",
    ),
)

MUSIQUE = (
    E(
        "What is the currency of the country where the Angkor Wat temple is located?",
        "Angkor Wat is located in Cambodia. The currency of Cambodia is the riel. So the answer is the riel.",
    ),
    E(
        "What river flows through the capital of the country where fado music originated?",
        "Fado music originated in Portugal. The capital of Portugal is Lisbon. The Tagus flows through "
        "Lisbon. So the answer is the Tagus.",
    ),
    E(
        "On which continent is the country whose capital is Ulaanbaatar?",
        "Ulaanbaatar is the capital of Mongolia. Mongolia is in Asia. So the answer is Asia.",
    ),
    E(
        "What is the capital of the country where the author of Don Quixote was born?",
        "Don Quixote was written by Miguel de Cervantes. Miguel de Cervantes was born in Spain. The "
        "capital of Spain is Madrid. So the answer is Madrid.",
    ),
    E(
        "Who founded the company that makes the PlayStation?",
        "The PlayStation is made by Sony. Sony was founded by Masaru Ibuka and Akio Morita. So the answer "
        "is Masaru Ibuka and Akio Morita.",
    ),
    E(
        "What is the official language of the country that borders both Spain and France?",
        "The country that borders both Spain and France is Andorra. The official language of Andorra is "
        "Catalan. So the answer is Catalan.",
    ),
    E(
        "In what year did the country where the Taj Mahal stands gain independence?",
        "The Taj Mahal stands in India. India gained independence in 1947. So the answer is 1947.",
    ),
    E(
        "What is the largest city in the state where Mount Rushmore is located?",
        "Mount Rushmore is located in South Dakota. The largest city in South Dakota is Sioux Falls. So "
        "the answer is Sioux Falls.",
    ),
)

IIRC = (
    E(
        "How many years after Harvard University was Yale University founded?",
        "Harvard University was founded in 1636. Yale University was founded in 1701. Thus, Yale was "
        "founded 1701 - 1636 = 65 years later. So the answer is 65.",
    ),
    E(
        "How old was Abraham Lincoln when he became president?",
        "Abraham Lincoln was born on 12 February 1809. He became president on 4 March 1861. Thus, he was "
        "52 years old. So the answer is 52.",
    ),
    E(
        "In what country is the city where the Treaty of Versailles was signed?",
        "The Treaty of Versailles was signed in Versailles. Versailles is in France. So the answer is "
        "France.",
    ),
    E(
        "How many years did the Hundred Years' War last?",
        "The Hundred Years' War began in 1337 and ended in 1453. Thus, it lasted 1453 - 1337 = 116 years. "
        "So the answer is 116.",
    ),
    E(
        "In which year did the stadium that hosted the 1966 World Cup final open?",
        "The 1966 World Cup final was held at Wembley Stadium. The original Wembley Stadium opened in "
        "1923. So the answer is 1923.",
    ),
    E(
        "Who was the monarch of the United Kingdom when the Titanic sank?",
        "The Titanic sank in 1912. In 1912 the monarch of the United Kingdom was George V. So the answer "
        "is George V.",
    ),
    E(
        "How many years after the first flight of the Wright brothers did Charles Lindbergh fly across the "
        "Atlantic?",
        "The Wright brothers made their first flight in 1903. Charles Lindbergh flew across the Atlantic "
        "in 1927. Thus, 1927 - 1903 = 24 years passed. So the answer is 24.",
    ),
    E(
        "In which city is the university where Isaac Newton studied?",
        "Isaac Newton studied at the University of Cambridge. The University of Cambridge is in the city "
        "of Cambridge. So the answer is Cambridge.",
    ),
)

STRATEGYQA = (
    E(
        "Could a penguin survive in the Sahara without help?",
        "Penguins are adapted to cold climates. The Sahara is one of the hottest places on Earth. Thus, a "
        "penguin could not survive there without help. So the answer is no.",
    ),
    E(
        "Was the Eiffel Tower standing when the Titanic sank?",
        "The Eiffel Tower was completed in 1889. The Titanic sank in 1912. Thus, the tower was already "
        "standing. So the answer is yes.",
    ),
    E(
        "Can a person eat a whole watermelon in one bite?",
        "A watermelon is far larger than a human mouth. Thus, a whole watermelon cannot be eaten in one "
        "bite. So the answer is no.",
    ),
    E(
        "Is the Pacific Ocean larger than the Atlantic Ocean?",
        "The Pacific Ocean covers about 165 million square kilometres. The Atlantic Ocean covers about 106 "
        "million square kilometres. Thus, the Pacific is larger. So the answer is yes.",
    ),
    E(
        "Could Julius Caesar have read a printed book?",
        "Julius Caesar died in 44 BC. The printing press was invented around 1440. Thus, no printed books "
        "existed in his lifetime. So the answer is no.",
    ),
    E(
        "Do bats lay eggs?",
        "Bats are mammals. Bats give birth to live young. Thus, bats do not lay eggs. So the answer is no.",
    ),
    E(
        "Would a snowman melt in Singapore?",
        "Singapore is near the equator and warm all year. Snow melts above 0 degrees Celsius. Thus, a "
        "snowman would melt in Singapore. So the answer is yes.",
    ),
    E(
        "Could a honeybee fly to the Moon?",
        "The Moon is about 384,000 kilometres away, and there is no air in space. A honeybee needs air to "
        "fly and to breathe. Thus, a honeybee could not fly to the Moon. So the answer is no.",
    ),
)

TOY = (
    E(
        "In what year was the author of The Amber Gate born?",
        "The Amber Gate was written by Lorin Vasko. Lorin Vasko was born in 1948. So the answer is 1948.",
    ),
    E(
        "Who was born first, Tamsin Orl or Baret Quill?",
        "Tamsin Orl was born in 1931. Baret Quill was born in 1927. Thus, Baret Quill was born first. So "
        "the answer is Baret Quill.",
    ),
    E(
        "In which country is the record label that released Night of Pearls headquartered?",
        "Night of Pearls was released by Corvid Records. Corvid Records is headquartered in Ostmere. "
        "Ostmere is in Valdoria. So the answer is Valdoria.",
    ),
    E(
        "Where was the singer of Songs of the Copper Sea born?",
        "Songs of the Copper Sea was recorded by Ilsa Maren. Ilsa Maren was born in Pellworth. So the "
        "answer is Pellworth.",
    ),
    E(
        "Which film studio was founded earlier, Harrow Pictures or Kestrel Studios?",
        "Harrow Pictures was founded in 1902. Kestrel Studios was founded in 1915. Thus, Harrow Pictures "
        "was founded earlier. So the answer is Harrow Pictures.",
    ),
    E(
        "When was the birthplace of the director of The Glass Orchard founded?",
        "The Glass Orchard was directed by Oren Talby. Oren Talby was born in Brinmouth. Brinmouth was "
        "founded in 1210. So the answer is 1210.",
    ),
    E(
        "Which publishing house has the author of Winter Lanterns worked for?",
        "Winter Lanterns was written by Mira Solk. Mira Solk has worked for Quayle House. So the answer is "
        "Quayle House.",
    ),
    E(
        "Which film has the director who was born earlier, The Salt Road or Echoes of Ash?",
        "The Salt Road was directed by Dov Arkin. Dov Arkin was born in 1911. Echoes of Ash was directed "
        "by Petra Lune. Petra Lune was born in 1923. Thus, Dov Arkin was born earlier. So the answer is "
        "The Salt Road.",
    ),
)

EXEMPLAR_SETS: dict[str, tuple[CoTExemplar, ...]] = {
    "2wikimultihopqa": TWOWIKI,
    "hotpotqa": HOTPOTQA,
    "musique": MUSIQUE,
    "iirc": IIRC,
    "strategyqa": STRATEGYQA,
    "toy": TOY,
}

# FLARE-instruct's "Skill 1": answers that look things up with [Search(term)] before stating facts.
SEARCH_EXEMPLARS = (
    E(
        "What kind of rock is the Giant's Causeway made of?",
        "[Search(Giant's Causeway rock)] The Giant's Causeway is made of basalt columns left by an old lava "
        "flow. So the answer is basalt.",
    ),
    E(
        "Which river flows through the city where the composer of The Blue Danube was born?",
        "[Search(composer of The Blue Danube)] The Blue Danube was composed by Johann Strauss II. "
        "[Search(Johann Strauss II birthplace)] Johann Strauss II was born in Vienna. [Search(river through "
        "Vienna)] The Danube flows through Vienna. So the answer is the Danube.",
    ),
)


def exemplar_set(name: str, dataset: str = "") -> tuple[CoTExemplar, ...]:
    """The set called ``name``; "auto" picks the set of ``dataset`` (HotpotQA's for other data)."""
    if name == "auto":
        name = dataset if dataset in EXEMPLAR_SETS else "hotpotqa"
    try:
        return EXEMPLAR_SETS[name]
    except KeyError:
        raise InvalidArgumentError(f"no exemplar set {name!r}; known: {sorted(EXEMPLAR_SETS)}") from None


def take(exemplars: tuple[CoTExemplar, ...], n: int) -> tuple[CoTExemplar, ...]:
    if n > len(exemplars):
        raise InvalidArgumentError(f"{n} exemplars asked for, but the set has only {len(exemplars)}")
    return exemplars[:n]
