"""FLARE's decisions on scripted token probabilities, through the fake OpenAI-compatible server.

The server plays the language model: each reply is chosen from the answer written so far (and
whether documents are in the prompt) and carries scripted per-token log-probabilities, so every
trigger, mask and query below is known in advance.
"""

from __future__ import annotations

import math

import pytest

from efficientrag.baselines.flare import Flare, FlareConfig, FlareInstruct, FlareInstructConfig
from efficientrag.baselines.prompts.continuation import DOC_INSTRUCTION, format_document
from efficientrag.data.corpus import Corpus
from efficientrag.data.schema import Chunk, Example
from efficientrag.llm.config import LLMConfig
from efficientrag.llm.generator import GeneratorCapabilityError
from efficientrag.llm.generator_config import OpenAIGeneratorConfig
from efficientrag.llm.openai_generator import OpenAIGenerator
from efficientrag.testing.fake_completions import ScriptedReply, request_text
from efficientrag.testing.fake_openai import FakeOpenAIServer
from efficientrag.testing.word_overlap import WordOverlapRetriever

QUESTION = "Where was the director of Alpha Film born?"
CORPUS = Corpus(
    [
        Chunk("alpha", "Alpha Film", "Alpha Film is a drama directed by Bob Stone."),
        Chunk("bob", "Bob Stone", "Bob Stone was born in Paris."),
        Chunk("bob2", "Bob Stone career", "Bob Stone was a director from France."),
        Chunk("eva", "Eva Lind", "Eva Lind married Bob Stone in 1950."),
        Chunk("rome", "Rome", "Rome is the capital of Italy."),
    ]
)
EXAMPLE = Example("q1", QUESTION, ["Paris"], ["alpha", "bob"])
S1 = " Alpha Film was directed by Bob Stone."
S2 = " Bob Stone was born in Paris."


def scripted(*pairs: tuple[str, float]) -> ScriptedReply:
    """A reply from (token, probability) pairs."""
    return ScriptedReply("".join(t for t, _ in pairs), token_logprobs=[(t, math.log(p)) for t, p in pairs])


def confident(text: str, p: float = 0.95) -> ScriptedReply:
    return scripted(*_split(text, p))


def _split(text: str, p: float = 0.95) -> list[tuple[str, float]]:
    """Whitespace-led tokens of ``text``, all with probability ``p``."""
    return [(" " + w, p) for w in text.split(" ")[1:]]


def parse(prompt: str) -> tuple[str, list[str]]:
    """(answer written so far, ids of the documents in front of the question)."""
    head, test = prompt.rsplit("Question: ", 1)
    answer = test[len(QUESTION) :].split(":", 1)[1]
    docs: list[str] = []
    if head.endswith(DOC_INSTRUCTION + "\n"):
        by_text = {format_document(c): c.id for c in CORPUS}
        block = head[: -len(DOC_INSTRUCTION) - 1].rsplit("Context:\n", 1)[1]
        docs = [by_text[line.split("] ", 1)[1]] for line in block.strip().split("\n")]
    return answer, docs


class World:
    """The scripted model: ``replies[(answer so far, docs present)]``; records what it was asked."""

    def __init__(self, replies, questions=None):
        self.replies = replies
        self.questions = questions or {}
        self.seen: list[tuple[str, list[str]]] = []

    def __call__(self, request):
        prompt = request_text(request)
        if "Write one question whose answer is" in prompt:
            term = prompt.split('whose answer is "', 1)[1].split('"', 1)[0]
            return self.questions[term]
        answer, docs = parse(prompt)
        self.seen.append((answer, docs))
        if callable(self.replies):
            return self.replies(answer, docs)
        return self.replies[(answer, bool(docs))]


def _generator(server: FakeOpenAIServer) -> OpenAIGenerator:
    llm = LLMConfig(base_url=server.base_url, model="fake", api_key="k", max_retries=0, timeout=10)
    return OpenAIGenerator(OpenAIGeneratorConfig(llm=llm))


def _flare_cfg(**kw) -> FlareConfig:
    return FlareConfig(**{"exemplars": "toy", "num_exemplars": 1, "top_k": 2, **kw})


def _masked_world() -> World:
    return World(
        {
            # Step 1 (documents of the question in the prompt): the first sentence is confident; the
            # low token " Rome" lies in the second sentence, which FLARE discards.
            ("", True): scripted(*_split(S1), *_split(" Bob Stone was born in"), (" Rome", 0.1), (".", 0.9)),
            # Step 2 (no documents): " born" is below theta but not beta; " Rome" is below both.
            (S1, False): scripted(
                (" Bob", 0.95), (" Stone", 0.9), (" was", 0.97), (" born", 0.6), (" in", 0.9), (" Rome", 0.3),
                (".", 0.95), (" So", 0.9), (" the", 0.99), (" answer", 0.99), (" is", 0.99), (" Rome", 0.3), (".", 0.9),
            ),
            # Regeneration with the new documents.
            (S1, True): confident(S2 + " So the answer is Paris."),
            (S1 + S2, False): confident(" So the answer is Paris.", 0.99),
        }
    )  # fmt: skip


def test_flare_triggers_at_the_low_token_and_masks_exactly_the_tokens_below_beta():
    world = _masked_world()
    retriever = WordOverlapRetriever(CORPUS)
    with FakeOpenAIServer(world) as server, _generator(server) as gen:
        pred = Flare(retriever, gen, _flare_cfg(theta=0.8, beta=0.4)).run_batch([EXAMPLE])[0]
        bodies = server.request_bodies("completions")
    first_docs = [h.id for h in WordOverlapRetriever(CORPUS).search([QUESTION], 2)[0]]
    masked = "Bob Stone was born in."
    masked_docs = [h.id for h in WordOverlapRetriever(CORPUS).search([masked], 2)[0]]
    assert retriever.queries == [QUESTION, masked]
    # The model saw: the question's documents, then none (look-ahead), the new ones (regeneration), none.
    assert world.seen == [("", first_docs), (S1, []), (S1, masked_docs), (S1 + S2, [])]
    steps = pred.trace["steps"]
    assert [s["kind"] for s in steps] == ["initial_retrieval", "lookahead", "lookahead", "lookahead"]
    assert steps[1]["retrieved"] is False and steps[1]["lookahead"] == S1
    assert steps[2]["retrieved"] is True
    assert steps[2]["masked"] == [5]  # only " Rome"; " born" (0.6) is kept
    assert steps[2]["queries"] == [masked] and steps[2]["doc_ids"] == masked_docs
    assert steps[2]["text"] == S2 and steps[3]["retrieved"] is False
    assert pred.answer == "Paris"
    assert pred.raw_output == S1 + S2 + " So the answer is Paris."
    c = pred.counters
    assert (c["lookahead_calls"], c["regenerate_calls"], c["llm_calls"]) == (3, 1, 4)
    assert (c["retrieval_steps"], c["retrieval_calls"]) == (2, 2)
    assert "answer_retry_calls" not in c
    assert all("logprobs" in b for b in bodies)
    assert {c.id for c in pred.chunks} == set(first_docs) | set(masked_docs)


def test_inclusive_thresholds_and_documents_kept_while_looking_ahead():
    first_docs = [h.id for h in WordOverlapRetriever(CORPUS).search([QUESTION], 2)[0]]
    new_docs = [h.id for h in WordOverlapRetriever(CORPUS).search(["was in."], 2)[0]]
    assert first_docs != new_docs
    replies = _masked_world().replies

    def model(answer, docs):
        # The model writes the regenerated sentence only once it holds the new documents.
        if answer == S1:
            return replies[(S1, docs == new_docs)]
        return replies[(answer, answer == "")]

    world = World(model)
    # theta 0.6 with "<": only the 0.3 token triggers in step 2; with "<=" the 0.6 token also counts,
    # and beta 0.6 with "<=" masks " born" too.
    retriever = WordOverlapRetriever(CORPUS)
    cfg = _flare_cfg(
        theta=0.6, beta=0.6, inclusive_thresholds=True, keep_docs_in_lookahead=True, max_query_tokens=2
    )
    with FakeOpenAIServer(world) as server, _generator(server) as gen:
        pred = Flare(retriever, gen, cfg).run_batch([EXAMPLE])[0]
    assert pred.trace["steps"][2]["masked"] == [3, 5]
    # "Bob Stone was in." cut to its last two words (no tokenizer: whitespace words).
    assert retriever.queries == [QUESTION, "was in."]
    # The latest documents stay in the look-ahead prompts (the official code's reinit_ctx=false).
    assert world.seen == [("", first_docs), (S1, first_docs), (S1, new_docs), (S1 + S2, new_docs)]


def test_explicit_queries_ask_one_question_per_span_and_interleave_the_results():
    replies = {
        # A model that stops after a sentence ends the answer there, so every reply goes on.
        ("", True): confident(S1 + S2),
        (S1, False): scripted(*_split(" Bob Stone was born in"), (" Rome", 0.3), (" in", 0.9), (" 1950", 0.2), (".", 0.9), (" So", 0.9)),
        (S1, True): confident(S2 + " So"),
        (S1 + S2, False): confident(" So the answer is Paris.", 0.99),
    }  # fmt: skip
    questions = {"Rome": "Where was Bob Stone born?", "1950": "When did Eva Lind marry?"}
    world = World(replies, questions)
    retriever = WordOverlapRetriever(CORPUS)
    with FakeOpenAIServer(world) as server, _generator(server) as gen:
        pred = Flare(retriever, gen, _flare_cfg(query="explicit")).run_batch([EXAMPLE])[0]
        asked = [
            b["prompt"] for b in server.request_bodies("completions") if "Write one question" in b["prompt"]
        ]
    step = pred.trace["steps"][2]
    assert step["spans"] == ["Rome", "1950"]
    assert step["queries"] == ["Where was Bob Stone born?", "When did Eva Lind marry?"]
    # Separate lists: [bob, bob2] and [eva, ...]; merged by rank: bob, then eva (not bob2).
    lists = WordOverlapRetriever(CORPUS).search(step["queries"], 2)
    assert [h.id for h in lists[0]][:2] == ["bob", "bob2"] and lists[1][0].id == "eva"
    assert step["doc_ids"] == ["bob", "eva"]
    assert world.seen[2] == (S1, ["bob", "eva"])
    assert len(asked) == 2 and all(S1.strip() + " Bob Stone was born in Rome in 1950." in p for p in asked)
    c = pred.counters
    assert (c["question_calls"], c["retrieval_steps"], c["retrieval_calls"]) == (2, 2, 3)
    assert pred.answer == "Paris"


def test_server_without_logprobs_is_a_clear_error():
    class DropsLogprobs(FakeOpenAIServer):
        def completion_body(self, endpoint, request, index, *, truncate=False):
            body = super().completion_body(endpoint, request, index, truncate=truncate)
            body["choices"][0]["logprobs"] = None
            return body

    with DropsLogprobs(_masked_world()) as server, _generator(server) as gen:
        flare = Flare(WordOverlapRetriever(CORPUS), gen, _flare_cfg())
        with pytest.raises(GeneratorCapabilityError, match="returned no logprobs.*FLARE needs"):
            flare.run_batch([EXAMPLE])


def test_flare_instruct_cuts_the_query_out_and_biases_the_bracket():
    replies = {
        # ")]" is a token of its own (the fake server stops at token boundaries, as vLLM does).
        "": scripted(
            *_split(S1 + " [Search(Bob Stone birthplace"), (")]", 0.9), *_split(" Bob Stone was born")
        ),
        S1 + " ": " Bob Stone was born in",
        S1 + "  Bob Stone was born in": " Paris. So the answer is Paris.",
    }
    seen = []

    def model(request):
        prompt = request_text(request)
        answer = prompt.rsplit("Answer (step by step, with search):", 1)[1]
        seen.append((answer, DOC_INSTRUCTION in prompt.rsplit("Now use both skills", 1)[1]))
        return replies[answer]

    retriever = WordOverlapRetriever(CORPUS)
    cfg = FlareInstructConfig(exemplars="toy", num_exemplars=1, top_k=2, bracket_token_ids=[518, 29961])
    with FakeOpenAIServer(model) as server, _generator(server) as gen:
        pred = FlareInstruct(retriever, gen, cfg).run_batch([EXAMPLE])[0]
        bodies = server.request_bodies("completions")
    assert retriever.queries == ["Bob Stone birthplace"]
    assert [b["logit_bias"] for b in bodies] == [
        {"518": 2.0, "29961": 2.0},
        {"518": -100.0, "29961": -100.0},
        {"518": 2.0, "29961": 2.0},
    ]
    assert bodies[1]["max_tokens"] == cfg.ban_tokens and ")]" in bodies[0]["stop"]
    # The documents of the search are in front of the question from then on.
    assert seen == [("", False), (S1 + " ", True), (S1 + "  Bob Stone was born in", True)]
    assert "[Search" not in pred.raw_output and pred.answer == "Paris"
    assert pred.counters["retrieval_steps"] == 1
    search = [s for s in pred.trace["steps"] if s["kind"] == "search"][0]
    assert search["doc_ids"] == [
        h.id for h in WordOverlapRetriever(CORPUS).search(["Bob Stone birthplace"], 2)[0]
    ]


def test_flare_instruct_needs_bracket_ids_from_an_api():
    with FakeOpenAIServer(lambda r: "x") as server, _generator(server) as gen:
        with pytest.raises(GeneratorCapabilityError, match="bracket_token_ids"):
            FlareInstruct(WordOverlapRetriever(CORPUS), gen, FlareInstructConfig(exemplars="toy"))
        # Without the bias it runs with no ids at all.
        FlareInstruct(
            WordOverlapRetriever(CORPUS),
            gen,
            FlareInstructConfig(exemplars="toy", search_bias=0, ban_tokens=0),
        )


def test_exemplar_documents_are_retrieved_once_and_not_charged_to_questions():
    from efficientrag.baselines.prompts.cot_exemplars import TOY

    world = _masked_world()
    retriever = WordOverlapRetriever(CORPUS)
    with FakeOpenAIServer(world) as server, _generator(server) as gen:
        flare = Flare(retriever, gen, _flare_cfg(exemplar_docs=True))
        pred = flare.run_batch([EXAMPLE])[0]
        flare.run_batch([EXAMPLE])
        first_prompt = server.request_bodies("completions")[0]["prompt"]
    exemplar_docs = WordOverlapRetriever(CORPUS).search([TOY[0].question], 2)[0]
    block = "Context:\n" + "".join(
        f"[{i}] {format_document(h.chunk)}\n" for i, h in enumerate(exemplar_docs, 1)
    )
    assert first_prompt.startswith(block + "Question: " + TOY[0].question)
    # The exemplars' retrieval ran once, before the first batch; questions pay only their own.
    assert retriever.queries.count(TOY[0].question) == 1
    assert pred.counters["retrieval_steps"] == 2 and pred.answer == "Paris"
