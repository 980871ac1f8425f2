"""2WikiMultihopQA: every question comes with evidence triples, one fact per gold paragraph
(a paragraph may hold two: then its sub-question asks both and answers "X and Y").

Types: compositional and inference (a chain of two facts), comparison (the same fact of each
entity, independent), bridge_comparison (two independent chains of two facts).
"""

from __future__ import annotations

from efficientrag.synth.prompts.shots import (
    DecomposeShot,
    LabelShot,
    NextHopShot,
    PromptSet,
    SubQuestionShot,
)

COMPOSITIONAL = DecomposeShot(
    question="Where was the director of film Ashes Over Pelling born?",
    answer="Dornmouth",
    qtype="compositional",
    paragraphs=(
        (
            "Ashes Over Pelling",
            "Ashes Over Pelling is a 1963 war film directed by Tomas Reiner and starring Ula Brandt.",
        ),
        (
            "Tomas Reiner",
            "Tomas Reiner (4 May 1920 - 2 January 1989) was a film director born in Dornmouth. He made "
            "eleven features between 1950 and 1975.",
        ),
    ),
    triples=(
        ("Ashes Over Pelling", "director", "Tomas Reiner"),
        ("Tomas Reiner", "place of birth", "Dornmouth"),
    ),
    sub_questions=(
        SubQuestionShot("Who directed Ashes Over Pelling?", "Tomas Reiner", (), 1),
        SubQuestionShot("Where was Tomas Reiner born?", "Dornmouth", (1,), 2),
    ),
)

INFERENCE = DecomposeShot(
    question="Who is the paternal grandfather of Lisette Hauk?",
    answer="Bernhard Hauk",
    qtype="inference",
    paragraphs=(
        (
            "Lisette Hauk",
            "Lisette Hauk (1902 - 1977) was a harpist. She was the daughter of the conductor Anton Hauk "
            "and the singer Vera Moll.",
        ),
        (
            "Anton Hauk",
            "Anton Hauk (1871 - 1930) was a conductor. His father, Bernhard Hauk, ran a music school in Selm.",
        ),
    ),
    triples=(("Lisette Hauk", "father", "Anton Hauk"), ("Anton Hauk", "father", "Bernhard Hauk")),
    sub_questions=(
        SubQuestionShot("Who is the father of Lisette Hauk?", "Anton Hauk", (), 1),
        SubQuestionShot("Who is the father of Anton Hauk?", "Bernhard Hauk", (1,), 2),
    ),
)

COMPARISON = DecomposeShot(
    question="Which film came out first, The Copper Valley or Night Train To Ostra?",
    answer="Night Train To Ostra",
    qtype="comparison",
    paragraphs=(
        ("The Copper Valley", "The Copper Valley is a 1958 western film directed by Hal Brisk."),
        (
            "Night Train to Ostra",
            "Night Train to Ostra is a 1947 thriller film produced by Meridian Pictures.",
        ),
    ),
    triples=(
        ("The Copper Valley", "publication date", "1958"),
        ("Night Train to Ostra", "publication date", "1947"),
    ),
    sub_questions=(
        SubQuestionShot("When did The Copper Valley come out?", "1958", (), 1),
        SubQuestionShot("When did Night Train to Ostra come out?", "1947", (), 2),
    ),
)

BRIDGE_COMPARISON = DecomposeShot(
    question="Which film has the director who died later, Paper Lanterns or The Eastern Gate?",
    answer="The Eastern Gate",
    qtype="bridge_comparison",
    paragraphs=(
        ("Paper Lanterns", "Paper Lanterns is a 1939 drama film directed by Jonas Feld."),
        (
            "The Eastern Gate",
            "The Eastern Gate is a 1944 adventure film directed by Clara Ostrow and set in the port of Vantis.",
        ),
        ("Jonas Feld", "Jonas Feld (12 March 1895 - 8 July 1951) was a screenwriter and film director."),
        ("Clara Ostrow", "Clara Ostrow (1901 - 19 October 1979) was a film director and editor."),
    ),
    triples=(
        ("Paper Lanterns", "director", "Jonas Feld"),
        ("The Eastern Gate", "director", "Clara Ostrow"),
        ("Jonas Feld", "date of death", "8 July 1951"),
        ("Clara Ostrow", "date of death", "19 October 1979"),
    ),
    sub_questions=(
        SubQuestionShot("Who directed Paper Lanterns?", "Jonas Feld", (), 1),
        SubQuestionShot("Who directed The Eastern Gate?", "Clara Ostrow", (), 2),
        SubQuestionShot("When did Jonas Feld die?", "8 July 1951", (1,), 3),
        SubQuestionShot("When did Clara Ostrow die?", "19 October 1979", (2,), 4),
    ),
)

PROMPTS = PromptSet(
    dataset="2wikimultihopqa",
    shapes={
        "compositional": (COMPOSITIONAL,),
        "inference": (INFERENCE,),
        "comparison": (COMPARISON,),
        "bridge_comparison": (BRIDGE_COMPARISON,),
    },
    type_shapes={
        "compositional": ("compositional", "inference"),
        "inference": ("inference", "compositional"),
        "comparison": ("comparison",),
        "bridge_comparison": ("bridge_comparison", "comparison"),
    },
    default_shapes=("compositional", "comparison", "bridge_comparison"),
    type_notes={
        "compositional": (
            "a chain of two facts: the first paragraph gives an entity that the second sub-question asks about"
        ),
        "inference": (
            "the question names a relation (grandfather, uncle, sibling-in-law ...) made of two facts, "
            "one per paragraph; ask each fact, the second about the entity the first one finds"
        ),
        "comparison": (
            "the same fact about each compared entity, one sub-question per paragraph; none depends on another"
        ),
        "bridge_comparison": (
            "for each of two entities, first find a related entity (e.g. its director), then the "
            "compared fact about that entity: two independent chains of two sub-questions"
        ),
    },
    label=(
        LabelShot(
            "Where was Tomas Reiner born?",
            "Dornmouth",
            COMPOSITIONAL.paragraphs[1],
            "Tomas Reiner was a film director born in Dornmouth",
        ),
        LabelShot(
            "When did Clara Ostrow die?",
            "19 October 1979",
            BRIDGE_COMPARISON.paragraphs[3],
            "Clara Ostrow 19 October 1979",
        ),
    ),
    next_hop=(
        NextHopShot(
            question="Where was the director of film Ashes Over Pelling born?",
            answered=(
                (
                    "Who directed Ashes Over Pelling?",
                    "Tomas Reiner",
                    "Ashes Over Pelling war film directed by Tomas Reiner",
                ),
            ),
            filtered_query="Where was born? Tomas Reiner",
        ),
        NextHopShot(
            question="Which film has the director who died later, Paper Lanterns or The Eastern Gate?",
            answered=(
                ("Who directed Paper Lanterns?", "Jonas Feld", "Paper Lanterns directed by Jonas Feld"),
            ),
            filtered_query="director who died later? Jonas Feld",
        ),
    ),
)
