import pytest

from efficientrag.eval.qa_metrics import contained, exact_match, f1_score, score_answer


@pytest.mark.parametrize(
    ("prediction", "gold", "em"),
    [
        ("The Eiffel Tower", "eiffel tower", True),  # case and articles
        ("Paris.", "paris", True),  # punctuation
        ("  an   apple ", "Apple", True),  # whitespace and "an"
        ("\uff30aris", "Paris", True),  # NFKC: fullwidth P
        ("Paris, France", "Paris", False),
        ("", "", True),
    ],
)
def test_exact_match_uses_squad_normalization(prediction, gold, em):
    assert exact_match(prediction, gold) is em


def test_f1_counts_token_overlap_with_repeats():
    assert f1_score("Barack Obama", "Obama") == pytest.approx(2 / 3)  # P 1/2, R 1
    assert f1_score("x y y", "x y") == pytest.approx(0.8)  # common {x, y}: P 2/3, R 1
    assert f1_score("the cat", "a cat") == 1.0  # articles dropped on both sides
    assert f1_score("dog", "cat") == 0.0


@pytest.mark.parametrize(
    ("prediction", "gold", "f1"),
    [
        ("yes", "yes", 1.0),
        ("Yes.", "yes", 1.0),
        ("no way", "no", 0.0),  # gold is yes/no: only an exact match counts
        ("yes", "yes sir", 0.0),  # prediction is yes/no and differs
        ("noanswer", "no answer", 0.0),
        ("no", "Norway", 0.0),
    ],
)
def test_f1_yes_no_needs_exact_match(prediction, gold, f1):
    assert f1_score(prediction, gold) == f1


def test_contained_is_the_papers_em():
    assert contained("Paris", "Paris, France")
    assert contained("the Paris", "Paris")
    assert not contained("Paris France Europe", "Paris, France")
    # Unlike the official script, an empty (or all-article) prediction is not contained.
    assert not contained("", "Paris")
    assert not contained("The", "Paris")


def test_score_answer_takes_the_best_alias():
    s = score_answer("Federation of Vastaisia", ["Vastaisia", "Federation of Vastaisia"])
    assert (s.em, s.f1, s.contained) == (1.0, 1.0, 1.0)
    s = score_answer("Vastaisia", ["Federation of Vastaisia"])
    assert s.em == 0.0 and s.contained == 1.0 and s.f1 == pytest.approx(0.5)  # P 1, R 1/3
    s = score_answer("Obama", ["Barack Obama", "Obama"])
    assert s.to_dict() == {"em": 1.0, "f1": 1.0, "contained": 1.0}


def test_score_answer_edge_cases():
    assert score_answer(None, ["Paris"]).to_dict() == {"em": 0.0, "f1": 0.0, "contained": 0.0}
    with pytest.raises(ValueError, match="without gold answers"):
        score_answer("Paris", [])
