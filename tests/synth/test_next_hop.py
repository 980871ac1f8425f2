import pytest

from efficientrag.synth.next_hop import answer_in_info, filter_target, resolved_positions, teacher_next_hop
from efficientrag.synth.records import Reject, SubQuestion
from efficientrag.synth.teacher.base import DependencyInfo
from efficientrag.text.words import split_words

Q = "What did the actress in My Fair Lady win a Tony for?"


def dep(idx, sub_question, answer, info, query=Q):
    return DependencyInfo(
        SubQuestion(idx, sub_question, answer, [], f"c{idx}"), split_words(query), split_words(info)
    )


def test_two_hop_query_drops_the_resolved_span_and_appends_the_answer():
    d = dep(1, "who was the actress in my fair lady", "Audrey Hepburn", "stars Audrey Hepburn as Eliza")
    words = teacher_next_hop(split_words(Q), [d])
    assert words == ["What", "did", "the", "win", "a", "Tony", "for", "?", "Audrey", "Hepburn"]
    target = filter_target(split_words(Q), [d.info_words], words)
    assert target.alignment.rate == 1.0
    assert target.query_words == words
    # Labels: question words kept, the resolved span and the markers dropped, the answer kept.
    kept = [w for w, lab in zip(target.words, target.labels, strict=True) if lab]
    assert kept == words
    assert target.words[:2] == ["Query", ":"] and target.labels[:2] == [0, 0]
    info_start = target.words.index("Info")
    assert target.labels[info_start : info_start + 3] == [0, 0, 0]  # Info : stars
    assert target.labels[-1] == 0  # "Eliza"


def test_three_hop_chain_builds_on_the_previous_hop_query():
    q = "When is the all-star game of the league whose member played in the most championship series?"
    d1 = dep(
        1,
        "who played in the most championship series",
        "the New York Yankees",
        "the New York Yankees have played the most",
        q,
    )
    hop2 = teacher_next_hop(split_words(q), [d1])
    # The answer is appended as the labeled words write it (with its article).
    assert hop2 == split_words("When is the all-star game of the league whose member ?") + [
        "the",
        "New",
        "York",
        "Yankees",
    ]
    d2 = dep(
        2,
        "Which is the league of New York Yankees?",
        "Major League Baseball",
        "the Yankees compete in Major League Baseball",
        " ".join(hop2),
    )
    hop3 = teacher_next_hop(hop2, [d2])
    # "league" and the appended "New York Yankees" are what hop 2 resolved.
    assert hop3 == split_words("When is the all-star game of the") + ["Major", "League", "Baseball"]


def test_several_dependencies_are_all_resolved_and_appended_in_order():
    q = "In what region of the country that contains Phu Luong is the city that has the Zone 5 Museum?"
    d1 = dep(1, "Which country is Phu Luong in?", "Vietnam", "Phu Luong is in Vietnam", q)
    d2 = dep(2, "Where is the Zone 5 Museum?", "Da Nang", "Zone 5 Museum is in Da Nang", q)
    words = teacher_next_hop(split_words(q), [d1, d2])
    assert words[-3:] == ["Vietnam", "Da", "Nang"]
    assert "Luong" not in words and "Zone" not in words and "region" in words
    target = filter_target(split_words(q), [d1.info_words, d2.info_words], words)
    assert target.alignment.rate == 1.0 and target.query_words == words
    assert target.words.count(";") == 1


def test_relation_word_next_to_the_span_is_dropped_too():
    q = "What is the famous bridge in the birthplace of Antonio Vivaldi?"
    d = dep(1, "Where was Antonio Vivaldi born?", "Venice", "born in Venice", q)
    assert teacher_next_hop(split_words(q), [d]) == split_words("What is the famous bridge in the ?") + [
        "Venice"
    ]


def test_a_span_longer_than_the_cap_drops_only_the_shared_words():
    words = split_words("Who founded the company that made the long running sitcom about Paris and cats?")
    positions = resolved_positions(words, "Which sitcom about cats?", set(), max_span_words=3)
    assert [words[i] for i in sorted(positions)] == ["sitcom", "cats"]
    wide = resolved_positions(words, "Which sitcom about cats?", set(), max_span_words=12)
    assert [words[i] for i in sorted(wide)] == ["sitcom", "about", "Paris", "and", "cats"]


def test_no_shared_words_keeps_the_query_and_appends():
    d = dep(1, "Unrelated thing?", "Oslo", "based in Oslo")
    assert teacher_next_hop(split_words("Where is it?"), [d]) == ["Where", "is", "it", "?", "Oslo"]


def test_dependency_answer_missing_from_its_labels_is_rejected():
    d = dep(1, "who was the actress in my fair lady", "Audrey Hepburn", "Rex Harrison as Henry Higgins")
    with pytest.raises(Reject) as err:
        teacher_next_hop(split_words(Q), [d])
    assert err.value.reason == "dependency answer not labeled"


def test_answer_is_taken_as_written_in_the_labeled_words():
    info = split_words("the New York Yankees , founded 1901")
    assert answer_in_info(info, "The new york yankees") == ["the", "New", "York", "Yankees"]
    assert answer_in_info(info, "New York Yankees") == ["New", "York", "Yankees"]
    assert answer_in_info(info, "Yankees New York") == ["New", "York", "Yankees"]
    assert answer_in_info(info, "Boston") is None


def test_filter_target_reports_words_an_llm_invented():
    prev = split_words("Where was the director of Alien born?")
    info = split_words("directed by Ridley Scott")
    target = filter_target(prev, [info], split_words("Where was Ridley Scott born originally?"))
    # "originally" is not in the input: unmatched. The Filter keeps input order, so the reordered
    # "born" comes before the Info words.
    assert target.query_words == ["Where", "was", "born", "Ridley", "Scott"]
    assert target.alignment.rate == pytest.approx(5 / 6)
