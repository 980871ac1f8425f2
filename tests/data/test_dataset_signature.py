"""A benchmark's file read under another benchmark's name is refused in one line naming both, before
any record is parsed: HotpotQA, 2Wiki and MuSiQue share enough field names to read each other
without a fault otherwise."""

from __future__ import annotations

import json
from itertools import permutations

import pytest

from efficientrag.data import DataFormatError, read_dataset, read_musique
from efficientrag.data.readers.signature import record_signature

# One record of each benchmark, with the fields its original files carry.
HOTPOT = {"_id": "h1", "question": "Who?", "answer": "A", "type": "bridge", "level": "hard",
          "supporting_facts": [["T1", 0], ["T2", 0]],
          "context": [["T1", ["T1 is A."]], ["T2", ["T2 is B."]]]}  # fmt: skip
TWOWIKI = {"_id": "w1", "question": "Who?", "answer": "A", "type": "compositional",
           "supporting_facts": [["T1", 0], ["T2", 0]], "evidences": [["T1", "r", "T2"]],
           "context": [["T1", ["T1 is A."]], ["T2", ["T2 is B."]]]}  # fmt: skip
MUSIQUE = {"id": "2hop__1_2", "question": "Who?", "answer": "A", "answer_aliases": [], "answerable": True,
           "paragraphs": [{"idx": 0, "title": "T1", "paragraph_text": "T1 is A.", "is_supporting": True},
                          {"idx": 1, "title": "T2", "paragraph_text": "T2 is B.", "is_supporting": True}],
           "question_decomposition": [{"id": 1, "question": "q1", "answer": "T2", "paragraph_support_idx": 0},
                                      {"id": 2, "question": "q2", "answer": "A", "paragraph_support_idx": 1}]}  # fmt: skip
RECORDS = {"hotpotqa": HOTPOT, "2wikimultihopqa": TWOWIKI, "musique": MUSIQUE}
LABELS = {"hotpotqa": "HotpotQA", "2wikimultihopqa": "2WikiMultihopQA", "musique": "MuSiQue"}


def write(path, dataset):
    record = RECORDS[dataset]
    if dataset == "musique":
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps([record]), encoding="utf-8")
    return path


@pytest.mark.parametrize("dataset", sorted(RECORDS))
def test_each_benchmark_reads_its_own_file(tmp_path, dataset):
    assert record_signature(RECORDS[dataset]).dataset == dataset
    result = read_dataset(dataset, write(tmp_path / "f.json", dataset))
    assert [ex.question for ex in result.examples] == ["Who?"]


@pytest.mark.parametrize(("written", "read_as"), list(permutations(sorted(RECORDS), 2)))
def test_another_benchmarks_file_is_refused_naming_both(tmp_path, written, read_as):
    path = write(tmp_path / "f.json", written)
    for strict in (True, False):  # a lenient read does not skip its way through a whole wrong file
        with pytest.raises(DataFormatError) as refused:
            read_dataset(read_as, path, strict=strict)
        message = str(refused.value)
        assert "\n" not in message and str(path) in message
        assert f"a {LABELS[written]} file" in message and f"not {LABELS[read_as]}" in message
        assert f"--dataset {written}" in message


def test_the_toy_world_is_read_in_musiques_format_and_refuses_hotpotqa(tmp_path):
    with pytest.raises(DataFormatError, match="a HotpotQA file.*not MuSiQue"):
        read_musique(write(tmp_path / "h.json", "hotpotqa"), dataset="toy")


def test_a_record_with_no_benchmarks_tell_is_read_as_before():
    plain = {k: v for k, v in HOTPOT.items() if k != "level"}
    assert record_signature(plain) is None and record_signature([1, 2]) is None


def test_the_shared_2wiki_dev_file_read_as_hotpotqa_is_refused(shared_data):
    path = shared_data / "2wikimultihopqa/dev.350.json"
    with pytest.raises(
        DataFormatError, match=r"2WikiMultihopQA file .*not HotpotQA.*--dataset 2wikimultihopqa"
    ):
        read_dataset("hotpotqa", path)
    with pytest.raises(DataFormatError, match="a HotpotQA file"):
        read_dataset("2wiki", shared_data / "hotpotqa/hotpot_dev_distractor_v1.first100.json")
    with pytest.raises(DataFormatError, match="a MuSiQue file"):
        read_dataset("hotpotqa", shared_data / "musique/musique_ans_v1.0_dev.70.jsonl")
