"""The corpus link miner on a hand-built corpus whose links are known."""

from __future__ import annotations

import pytest

from efficientrag.adapt.chunk_text import chunk_texts
from efficientrag.adapt.links import Chain, LinkConfig, build_chains, mine_links
from efficientrag.data.schema import Chunk
from efficientrag.text.words import split_words

CORPUS = [
    Chunk("rita", "Lovely Rita", "Lovely Rita is a song by The Beatles, written by Paul McCartney."),
    Chunk("paul", "Paul McCartney", "Paul McCartney is an English singer. He studied Art in Springfield."),
    Chunk("art", "Art", "Art is a diverse range of human activities."),
    # "Art" inside "Artist" and "Artisan" is no mention of the Art paragraph.
    Chunk("artist", "The Artist", "The Artist is a 2011 film. Artisans and Artists loved it."),
    # Two paragraphs share a title: a mention links to both.
    Chunk("spring1", "Springfield", "Springfield is a city in Illinois."),
    Chunk("spring2", "Springfield", "Springfield was founded in 1821 by settlers."),
    Chunk("lonely", "Nothing", "Nobody here is named by any other title."),
    # Mentioned by its title without the parenthetical.
    Chunk("kiss", "Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 comedy starring Shirley Temple."),
    Chunk("shirley", "Shirley Temple", "Shirley Temple was an actress; she starred in Kiss and Tell."),
    # "Army" inside the name "Red Army" is no mention of the song.
    Chunk("army", "Army (song)", "Army is a song."),
    Chunk("war", "Russian Civil War", "The Red Army fought in the Russian Civil War."),
]


def _links(chunks=CORPUS, cfg=None):
    texts = list(chunk_texts(chunks))
    return texts, mine_links(texts, cfg)


def test_known_links_are_found_and_nothing_else():
    _, links = _links()
    pairs = {(link.source, link.target) for link in links}
    assert pairs == {
        ("rita", "paul"),
        ("paul", "art"),
        ("paul", "spring1"),
        ("paul", "spring2"),
        ("kiss", "shirley"),
        ("shirley", "kiss"),
    }


def test_a_title_inside_another_word_or_name_is_no_link():
    _, links = _links()
    targets_from = {link.source: link.target for link in links}
    assert "artist" not in targets_from  # "Artisans", "Artists", "The Artist" (its own title)
    assert not any(link.target == "army" for link in links)  # "Red Army"
    assert not any("lonely" in (link.source, link.target) for link in links)


def test_mention_positions_point_at_the_title_words():
    texts, links = _links()
    by_id = {t.id: t for t in texts}
    for link in links:
        words = by_id[link.source].words
        mentioned = list(words[link.start : link.end])
        assert mentioned == split_words(link.title.split(" (")[0])
        assert link.start >= by_id[link.source].text_start  # never the source's own title


def test_a_title_mentioned_by_too_many_paragraphs_is_not_a_bridge():
    chunks = [Chunk("europe", "Europe", "Europe is a continent.")]
    chunks += [Chunk(f"c{i}", f"Town {i}", f"Town {i} is a town in Europe.") for i in range(7)]
    chunks += [Chunk("c7", "Town 7", "Town 7 is a town in Europe near Bram.")]
    chunks += [Chunk("bram", "Bram", "Bram is a village.")]
    _, links = _links(chunks, LinkConfig(max_mention_share=0.5, min_generic_mentions=5))
    assert {link.target for link in links} == {"bram"}
    _, links = _links(chunks, LinkConfig(max_mention_share=1.0))
    assert {link.target for link in links} == {"bram", "europe"}


def test_chains_of_two_and_three_never_return_to_the_first_title():
    texts, links = _links()
    chains = build_chains(links, {t.id: t.title for t in texts}, max_hops=3)
    ids = {c.chunk_ids for c in chains}
    assert ("rita", "paul") in ids and ("rita", "paul", "art") in ids
    assert ("rita", "paul", "spring1") in ids
    assert not any(len(c) == 3 and c[0] == c[2] for c in ids)  # kiss -> shirley -> kiss
    assert all(isinstance(c, Chain) and c.id == ">".join(c.chunk_ids) for c in chains)
    assert {c.chunk_ids for c in build_chains(links, {}, max_hops=2)} == {(x.source, x.target) for x in links}
    with pytest.raises(ValueError, match="max_hops"):
        build_chains(links, {}, max_hops=4)


def test_the_text_part_starts_after_a_title_that_ends_in_a_parenthesis():
    (text,) = chunk_texts([Chunk("x", "Mark Lewis (filmmaker)", "Mark Lewis is a director. He won.")])
    assert list(text.words) == split_words("Mark Lewis (filmmaker): Mark Lewis is a director. He won.")
    assert text.words[text.text_start] == "Mark" and text.text_start == 5
    assert [text.words[s:e][-1] for s, e in text.sentences] == [".", "."]
