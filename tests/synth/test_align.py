from efficientrag.synth.align import align_words
from efficientrag.text.words import split_words


def labeled(source, alignment):
    return [w for w, lab in zip(source, alignment.labels, strict=True) if lab]


def positions(alignment):
    return [i for i, lab in enumerate(alignment.labels) if lab]


def test_repeated_word_goes_to_the_occurrence_next_to_its_neighbours():
    source = split_words("The man in the film saw the film in the house.")
    al = align_words(["in", "the", "house"], source)
    # "in the house" is at 8..10; the greedy first-match would take "in" at 2 and "the" at 3.
    assert positions(al) == [8, 9, 10]
    assert al.rate == 1.0


def test_second_the_is_used_when_the_first_is_already_taken():
    source = split_words("the cat and the dog")
    al = align_words(["the", "cat", "the", "dog"], source)
    assert positions(al) == [0, 1, 3, 4]


def test_multiword_answer_appearing_twice_lands_where_the_phrase_continues():
    source = split_words("Audrey Hepburn starred in it. Later Audrey Hepburn won a Tony Award.")
    al = align_words(["Audrey Hepburn won", "Tony"], source)
    assert labeled(source, al) == ["Audrey", "Hepburn", "won", "Tony"]
    assert positions(al)[0] == source.index("Later") + 1


def test_multiword_answer_twice_without_context_takes_the_first():
    source = split_words("Paris is big. Paris is old.")
    al = align_words(["Paris"], source)
    assert positions(al) == [0]


def test_casing_is_ignored():
    source = split_words("The HOUSE by the Cemetery")
    al = align_words(["the", "house", "BY", "THE", "cemetery"], source)
    assert positions(al) == [0, 1, 2, 3, 4]
    assert al.rate == 1.0


def test_attached_punctuation_is_split_off_and_does_not_count():
    source = split_words("Keala Settle (born November 5, 1975) is an actress.")
    al = align_words(["Settle,", "(born", "1975)"], source)
    assert {"Settle", "born", "1975"} <= set(labeled(source, al))
    # Only the three words count toward the rate; the marks are extra.
    assert al.rate == 1.0
    assert al.targets == ["Settle", ",", "(", "born", "1975", ")"]


def test_detached_punctuation_between_aligned_words_is_labeled():
    source = split_words("November 5 , 1975")
    al = align_words(["November", "5", ",", "1975"], source)
    assert positions(al) == [0, 1, 2, 3]


def test_punctuation_absent_from_source_is_ignored():
    source = split_words("Alice met Bob")
    al = align_words(["Alice", ";", "Bob"], source)
    assert labeled(source, al) == ["Alice", "Bob"]
    assert al.rate == 1.0


def test_invented_words_stay_unmatched_and_lower_the_rate():
    source = split_words("The film was directed by Lucio Fulci in 1981.")
    al = align_words(["directed", "by", "Dario", "Argento"], source)
    assert labeled(source, al) == ["directed", "by"]
    assert al.rate == 0.5
    assert al.matched[2] is None and al.matched[3] is None
    assert al.n_unmatched == 2


def test_non_word_characters_inside_words_are_ignored():
    source = split_words("He moved to the U.S. in 1990.")
    al = align_words(["US"], source)
    assert labeled(source, al) == ["U.S."]


def test_reordered_words_are_found_by_the_windowed_pass():
    source = split_words("Audrey Hepburn won a Tony")
    al = align_words(["Hepburn", "Audrey"], source)
    assert sorted(positions(al)) == [0, 1]
    assert al.rate == 1.0


def test_reordered_pass_respects_the_window():
    source = ["x"] * 50 + ["target"] + ["y"] * 20 + ["anchor"]
    # In order only one of the two fits; the earlier occurrence wins, the other is then looked
    # for within `window` of it.
    near = align_words(["anchor", "target"], source, window=10)
    assert near.matched == [None, 50]
    wide = align_words(["anchor", "target"], source, window=100)
    assert wide.matched == [71, 50]


def test_each_source_word_is_used_once():
    source = split_words("Tony")
    al = align_words(["Tony", "Tony"], source)
    assert al.labels == [1]
    assert al.rate == 0.5


def test_empty_inputs():
    assert align_words([], split_words("some words")).labels == [0, 0]
    assert align_words([], []).rate == 0.0
    al = align_words(["word"], [])
    assert al.labels == [] and al.matched == [None] and al.rate == 0.0
    only_punct = align_words([",", "."], split_words("a , b ."))
    assert only_punct.rate == 0.0


def test_eligible_mask_keeps_markers_unlabeled():
    source = ["Query", ":", "Where", "is", "Query", "Info", ":", "Paris"]
    mask = [False, False, True, True, True, False, False, True]
    al = align_words(["Query", "Paris"], source, eligible=mask)
    assert positions(al) == [4, 7]


def test_lemma_matching_is_off_without_a_lemmatizer_or_when_disabled():
    source = split_words("She won a Tony")
    al = align_words(["win"], source, use_lemmas=False)
    assert al.rate == 0.0


def test_words_from_one_sentence_land_in_that_sentence_not_on_the_title():
    source = split_words("Lucio Fulci: Lucio Fulci (17 June 1927 – 13 March 1996) was a director.")
    al = align_words(["Lucio", "Fulci", "17", "June", "1927"], source)
    # The title's "Lucio Fulci" is earlier, but the alignment through the sentence is more compact.
    assert positions(al) == [3, 4, 6, 7, 8]


def test_lemmas_match_content_words_but_never_stop_words(monkeypatch):
    import efficientrag.synth.align as align_module

    lemmas = {"won": "win", "was": "be", "is": "be", "films": "film"}
    monkeypatch.setattr(align_module, "lemmatizer", lambda: object())
    monkeypatch.setattr(
        align_module, "word_lemmas", lambda words: [lemmas.get(w.lower(), w.lower()) for w in words]
    )
    source = split_words("She won two films and was famous")
    al = align_words(["win", "film", "is"], source)
    assert labeled(source, al) == ["won", "films"]
    assert al.rate == 2 / 3
    assert align_words(["win"], source, use_lemmas=False).rate == 0.0
