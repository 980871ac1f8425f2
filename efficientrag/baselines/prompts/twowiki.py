"""Exemplars in 2WikiMultihopQA's style: compositional, comparison and bridge-comparison questions."""

from efficientrag.baselines.prompts.exemplar import Exemplar

EXEMPLARS = (
    Exemplar(
        question="Where was the director of film Jaws born?",
        answer="Cincinnati",
        thought=(
            "Jaws was directed by Steven Spielberg. Steven Spielberg was born in Cincinnati, Ohio. So the "
            "answer is Cincinnati."
        ),
        steps=(
            ("Who directed the film Jaws?", "Steven Spielberg"),
            ("Where was Steven Spielberg born?", "Cincinnati"),
        ),
        documents=(
            (
                "Jaws (film)",
                "Jaws is a 1975 American thriller film directed by Steven Spielberg, based on the novel by "
                "Peter Benchley.",
            ),
            (
                "Steven Spielberg",
                "Steven Allan Spielberg (born December 18, 1946) is an American film director and producer. "
                "He was born in Cincinnati, Ohio.",
            ),
        ),
    ),
    Exemplar(
        question="Which film came out first, Casablanca or Citizen Kane?",
        answer="Citizen Kane",
        thought=(
            "Citizen Kane was released in 1941 and Casablanca in 1942. 1941 is earlier than 1942. So the "
            "answer is Citizen Kane."
        ),
        steps=(
            ("When did the film Casablanca come out?", "1942"),
            ("When did the film Citizen Kane come out?", "1941"),
        ),
        documents=(
            (
                "Casablanca (film)",
                "Casablanca is a 1942 American romantic drama film directed by Michael Curtiz, starring "
                "Humphrey Bogart and Ingrid Bergman.",
            ),
            (
                "Citizen Kane",
                "Citizen Kane is a 1941 American drama film directed by, produced by and starring Orson Welles.",
            ),
        ),
    ),
    Exemplar(
        question="Which film has the director who was born earlier, Psycho or Star Wars?",
        answer="Psycho",
        thought=(
            "Psycho was directed by Alfred Hitchcock, born on 13 August 1899. Star Wars was directed by "
            "George Lucas, born on 14 May 1944. Hitchcock was born earlier. So the answer is Psycho."
        ),
        steps=(
            ("Who directed the film Psycho?", "Alfred Hitchcock"),
            ("Who directed the film Star Wars?", "George Lucas"),
            ("When was Alfred Hitchcock born?", "13 August 1899"),
            ("When was George Lucas born?", "14 May 1944"),
        ),
        documents=(
            (
                "Psycho (1960 film)",
                "Psycho is a 1960 American horror film produced and directed by Alfred Hitchcock.",
            ),
            (
                "Star Wars (film)",
                "Star Wars is a 1977 American space opera film written and directed by George Lucas.",
            ),
            (
                "Alfred Hitchcock",
                "Sir Alfred Joseph Hitchcock (13 August 1899 - 29 April 1980) was an English filmmaker.",
            ),
            (
                "George Lucas",
                "George Walton Lucas Jr. (born May 14, 1944) is an American filmmaker, the creator of the "
                "Star Wars franchise.",
            ),
        ),
    ),
)
