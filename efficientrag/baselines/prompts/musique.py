"""Exemplars in MuSiQue's style: chains of two and three single-hop questions."""

from efficientrag.baselines.prompts.exemplar import Exemplar

EXEMPLARS = (
    Exemplar(
        question="Which river flows through the city where the author of Ulysses was born?",
        answer="River Liffey",
        thought=(
            "Ulysses was written by James Joyce. James Joyce was born in Dublin. The River Liffey flows "
            "through Dublin. So the answer is River Liffey."
        ),
        steps=(
            ("Who is the author of Ulysses?", "James Joyce"),
            ("In which city was James Joyce born?", "Dublin"),
            ("Which river flows through Dublin?", "River Liffey"),
        ),
        documents=(
            (
                "Ulysses (novel)",
                "Ulysses is a modernist novel by the Irish writer James Joyce, first published in 1922.",
            ),
            (
                "James Joyce",
                "James Augustine Aloysius Joyce (2 February 1882 - 13 January 1941) was an Irish novelist, "
                "born in Rathgar, a suburb of Dublin.",
            ),
            (
                "River Liffey",
                "The River Liffey is a river in Ireland that flows through the centre of Dublin to Dublin Bay.",
            ),
        ),
    ),
    Exemplar(
        question="In what year did the country that hosted the 2014 FIFA World Cup become a republic?",
        answer="1889",
        thought=(
            "The 2014 FIFA World Cup was held in Brazil. Brazil became a republic with the proclamation of "
            "15 November 1889. So the answer is 1889."
        ),
        steps=(
            ("Which country hosted the 2014 FIFA World Cup?", "Brazil"),
            ("In what year did Brazil become a republic?", "1889"),
        ),
        documents=(
            (
                "2014 FIFA World Cup",
                "The 2014 FIFA World Cup was the 20th FIFA World Cup, held in Brazil from 12 June to 13 July 2014.",
            ),
            (
                "Proclamation of the Republic (Brazil)",
                "The proclamation of the republic on 15 November 1889 ended the Empire of Brazil and made "
                "the country a republic.",
            ),
        ),
    ),
    Exemplar(
        question="What is the currency of the country where the Eiffel Tower is located?",
        answer="euro",
        thought=(
            "The Eiffel Tower is in Paris, France. The currency of France is the euro. So the answer is euro."
        ),
        steps=(
            ("In which country is the Eiffel Tower located?", "France"),
            ("What is the currency of France?", "euro"),
        ),
        documents=(
            (
                "Eiffel Tower",
                "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
            ),
            (
                "France",
                "France is a country in Western Europe. Its capital is Paris and its currency is the euro.",
            ),
        ),
    ),
)
