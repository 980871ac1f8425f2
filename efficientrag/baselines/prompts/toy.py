"""Exemplars for the built-in toy world: fictional people, works and places in its phrasing."""

from efficientrag.baselines.prompts.exemplar import Exemplar

EXEMPLARS = (
    Exemplar(
        question="Who is the spouse of the director of The Glass Meadow?",
        answer="Tobin Rask",
        thought=(
            "The Glass Meadow was directed by Orla Venn. Orla Venn is married to Tobin Rask. So the answer "
            "is Tobin Rask."
        ),
        steps=(
            ("Who directed The Glass Meadow?", "Orla Venn"),
            ("Who is the spouse of Orla Venn?", "Tobin Rask"),
        ),
        documents=(
            (
                "The Glass Meadow",
                "The Glass Meadow is a 1962 film directed by Orla Venn. It was filmed in Dastmoor.",
            ),
            (
                "Orla Venn",
                "Orla Venn (born 1921 in Dastmoor) is a film director. She is married to Tobin Rask.",
            ),
        ),
    ),
    Exemplar(
        question="Which city was founded earlier, Kelvarra or Pombrook?",
        answer="Kelvarra",
        thought=(
            "Kelvarra was founded in 1204 and Pombrook in 1388. 1204 is earlier than 1388. So the answer is "
            "Kelvarra."
        ),
        steps=(
            ("When was Kelvarra founded?", "1204"),
            ("When was Pombrook founded?", "1388"),
        ),
        documents=(
            ("Kelvarra", "Kelvarra is a city in Ostrel. It was founded in 1204 and lies on the river Dane."),
            ("Pombrook", "Pombrook is a port city in Ostrel. It was founded in 1388."),
        ),
    ),
    Exemplar(
        question="In which country was the author of The Salt Lantern born?",
        answer="Norrastan",
        thought=(
            "The Salt Lantern was written by Iven Marsh. Iven Marsh was born in Toleda. Toleda is a city in "
            "Norrastan. So the answer is Norrastan."
        ),
        steps=(
            ("Who wrote The Salt Lantern?", "Iven Marsh"),
            ("Where was Iven Marsh born?", "Toleda"),
            ("In which country is Toleda?", "Norrastan"),
        ),
        documents=(
            ("The Salt Lantern", "The Salt Lantern is a 1977 novel by Iven Marsh."),
            (
                "Iven Marsh",
                "Iven Marsh (born 1940 in Toleda) is a novelist. He has worked for Brannick House.",
            ),
            ("Toleda", "Toleda is a city in Norrastan, founded in 1102."),
        ),
    ),
)
