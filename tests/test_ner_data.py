"""Named-entity data (tasks/ner/): the CoNLL and JSON Lines readers and the
tag schemes, first-piece labels and windows, and the entity scores against the CoNLL
shared task's own scorer (tests/data/ner_reference/conlleval.json, made by
running it: tests/reference_makers/make_conlleval_reference.py)."""

import hashlib
import json

import numpy as np
import pytest

from conftest import data_file, shared_path
import ner_cases
from data_prep import tokenization
from plumbing.errors import UserError
from tasks.ner import conll
from tasks.ner import features
from tasks.ner import json_lines
from tasks.ner import metrics
from tasks.ner import task as ner_task

REFERENCE = data_file("ner_reference/conlleval.json")
UNCASED = data_file("vocab/bert_uncased_vocab.txt")


def _reference():
  with open(REFERENCE, encoding="utf-8") as f:
    return json.load(f)


def _write(path, text, newline="\n"):
  with open(path, "w", encoding="utf-8", newline="") as f:
    f.write(text.replace("\n", newline))
  return str(path)


# ----------------------------------------------------------------- reading


def test_reader_takes_the_shared_tasks_layout(tmp_path):
  text = ("-DOCSTART- -X- -X- O\n\n"
          "EU NNP B-NP I-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP I-MISC\n\n"
          "Peter\tNNP\tB-NP\tI-PER\n\n\n"  # Tabs, runs of blank lines.
          "-DOCSTART- -X- -X- O\n"
          "Blackburn NNP B-NP I-PER\n")
  for newline in ("\n", "\r\n"):
    path = _write(tmp_path / "eng.train", text, newline)
    sentences = conll.read_sentences(path)
    assert [s.words for s in sentences] == [["EU", "rejects", "German"], ["Peter"],
                                            ["Blackburn"]]
    assert [s.tags for s in sentences] == [["I-ORG", "O", "I-MISC"], ["I-PER"], ["I-PER"]]
    assert sentences[0].source == path + ":3" and sentences[2].source == path + ":11"


def test_reader_names_the_line_of_a_bad_one(tmp_path):
  path = _write(tmp_path / "train.txt", "EU B-ORG\nrejects\n")
  with pytest.raises(UserError, match=r"train.txt:2: expected a word and its tag"):
    conll.read_sentences(path)
  path = _write(tmp_path / "dev.txt", "EU B-ORG\n\nGerman X-MISC\n")
  with pytest.raises(UserError, match=r"dev.txt:3: tag 'X-MISC'"):
    conll.read_sentences(path)
  path = _write(tmp_path / "test.txt", "EU B-\n")
  with pytest.raises(UserError, match=r"test.txt:1: tag 'B-'"):
    conll.read_sentences(path)
  with pytest.raises(UserError, match="has no dev file"):
    conll.split_file(str(tmp_path / "nothing"), "dev")
  assert conll.split_file(str(tmp_path), "train").endswith("train.txt")


def test_json_lines_are_read_as_the_same_rows_in_conll(tmp_path):
  """Hugging Face datasets' conll2003 layout (tags as strings under
  `ner_tags`, other keys ignored), or `tags`; blank lines and sentences of
  no token skipped; a BOM and CRLF line ends read as plain lines."""
  rows = [(["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"]),
          (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
          (["Zoë", "in", "Montréal", "\"", "(", "Québec", ")"], ["B-PER", "O", "B-LOC", "O", "O",
                                                            "B-LOC", "O"])]
  lines = [json.dumps({"id": "0", "tokens": rows[0][0], "pos_tags": [22, 42, 16, 21],
                       "chunk_tags": [11, 21, 11, 12], "ner_tags": rows[0][1]}),
           "", json.dumps({"tokens": [], "ner_tags": []}),
           json.dumps({"tokens": rows[1][0], "tags": rows[1][1]}),
           json.dumps({"tags": rows[2][1], "tokens": rows[2][0]}, ensure_ascii=False)]
  path = _write(tmp_path / "train.jsonl", "\ufeff" + "\n".join(lines) + "\n", "\r\n")
  conll_path = _write(tmp_path / "train.txt", "\n\n".join(
      "\n".join("%s %s" % pair for pair in zip(*row)) for row in rows) + "\n")
  sentences = json_lines.read_sentences(path)
  assert [(s.words, s.tags) for s in sentences] == [
      (s.words, s.tags) for s in conll.read_sentences(conll_path)] == [
          (list(w), list(t)) for w, t in rows]
  assert [s.source for s in sentences] == [path + ":1", path + ":4", path + ":5"]
  # The file's name says how it is read.
  assert ner_task.read_labelled_file(path) == sentences
  assert ner_task.read_labelled_file(conll_path) == conll.read_sentences(conll_path)
  upper = _write(tmp_path / "TRAIN.JSONL", lines[3] + "\n")
  assert [s.words for s in ner_task.read_labelled_file(upper)] == [rows[1][0]]


@pytest.mark.parametrize("line,message", [
    ('{"tokens": ["EU"], "tags": ["B-ORG"]', r"train.jsonl:2: not JSON \(Expecting"),
    ('["EU", "B-ORG"]', r"train.jsonl:2: not a JSON object"),
    ('{"words": ["EU"], "tags": ["B-ORG"]}', r'train.jsonl:2: no "tokens" key'),
    ('{"tokens": ["EU"], "labels": ["B-ORG"]}', r'train.jsonl:2: no "tags" key.*"ner_tags"'),
    ('{"tokens": ["EU", "rejects"], "tags": ["B-ORG"]}',
     r"train.jsonl:2: 2 tokens but 1 tags; give one tag per token"),
    ('{"tokens": "EU rejects", "tags": ["B-ORG", "O"]}', r'train.jsonl:2: "tokens" and "tags" '
     r"must be lists"),
    ('{"tokens": ["EU", "rejects"], "ner_tags": [3, 0]}',
     r'train.jsonl:2: "ner_tags" holds numbers \(3\); give the tags as strings'),
    ('{"tokens": ["EU"], "tags": ["X-ORG"]}', r'train.jsonl:2: tag "X-ORG" is neither O nor'),
    ('{"tokens": ["EU"], "tags": [null]}', r"train.jsonl:2: tag null is neither O nor"),
    ('{"tokens": ["New York"], "tags": ["B-LOC"]}',
     r'train.jsonl:2: token "New York" is not a word'),
    ('{"tokens": [""], "tags": ["O"]}', r'train.jsonl:2: token "" is not a word'),
])
def test_json_lines_name_the_line_of_a_bad_one(tmp_path, line, message):
  path = _write(tmp_path / "train.jsonl", '{"tokens": ["Fine"], "tags": ["O"]}\n' + line + "\n")
  with pytest.raises(UserError, match=message):
    json_lines.read_sentences(path)


def test_json_lines_of_invalid_utf8_name_the_line(tmp_path):
  path = tmp_path / "dev.jsonl"
  path.write_bytes(b'{"tokens": ["ok"], "tags": ["O"]}\n{"tokens": ["caf\xe9"], "tags": ["O"]}\n')
  with pytest.raises(UserError, match=r"dev.jsonl:2: not UTF-8"):
    json_lines.read_sentences(str(path))


@pytest.mark.parametrize("case,scheme", [("iob1", "IOB1"), ("hand", "IOB2"),
                                         ("bioes", "BIOES"), ("random", "IOB2")])
def test_schemes_are_found_and_written_back(case, scheme):
  sentences = [conll.Sentence([w for w, _, _ in s], [g for _, g, _ in s], "")
               for s in ner_cases.CASES[case]]
  if case == "hand":  # Its gold tags are IOB2 but for the I- that starts a sentence.
    sentences = sentences[:-1]
  assert conll.scheme_of(sentences) == scheme
  for sentence in sentences:
    iob2 = conll.to_iob2(sentence.tags)
    assert all(not t.startswith(("E-", "S-")) for t in iob2)
    assert conll.from_iob2(iob2, scheme) == sentence.tags
  # By hand: IOB1's B- only after an entity of its type; BIOES's S- and E-.
  assert conll.to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"]) == [
      "B-PER", "I-PER", "B-PER", "O", "B-LOC"]
  assert conll.from_iob2(["B-PER", "I-PER", "B-PER", "O", "B-LOC"], "BIOES") == [
      "B-PER", "E-PER", "S-PER", "O", "S-LOC"]
  assert conll.from_iob2(["B-PER", "B-LOC", "O", "B-LOC"], "IOB1") == [
      "I-PER", "I-LOC", "O", "I-LOC"]


def test_the_real_conll_2003_splits_have_the_shared_tasks_counts():
  counts = {}
  for split, name in (("train", "train.txt"), ("dev", "dev.txt"), ("test", "test.txt")):
    sentences = conll.read_sentences(shared_path("conll2003/" + name))
    entities = sum(t.startswith("B-") for s in sentences for t in s.tags)
    counts[split] = (len(sentences), sum(len(s.words) for s in sentences), entities)
    assert conll.scheme_of(sentences) == "IOB2"
  assert counts == {"train": (14041, 203621, 23499), "dev": (3250, 51362, 5942),
                    "test": (3453, 46435, 5648)}


# ----------------------------------------------------------------- scoring


@pytest.mark.parametrize("case", sorted(ner_cases.CASES))
def test_scores_are_the_conll_scorers(case):
  sentences = ner_cases.CASES[case]
  scheme = "BIOES" if case == "bioes" else "IOB2"
  counts = metrics.counts_of([[g for _, g, _ in s] for s in sentences],
                             [[p for _, _, p in s] for s in sentences], scheme)
  assert metrics.report(counts) == _reference()[case]


def test_scores_on_the_real_dev_set_are_the_conll_scorers():
  path = shared_path("conll2003/dev.txt")
  reference = _reference()["conll2003_dev"]
  with open(path, "rb") as f:
    assert hashlib.sha256(f.read()).hexdigest() == reference["sha256"]
  sentences = ner_cases.conll_dev_case(path)
  counts = metrics.counts_of([[g for _, g, _ in s] for s in sentences],
                             [[p for _, _, p in s] for s in sentences])
  assert metrics.report(counts) == reference["report"]
  results = metrics.scores(counts)
  printed = reference["report"].splitlines()[1]
  assert "FB1: %6.2f" % (100 * results["eval_f1"]) in printed
  assert "precision: %6.2f%%" % (100 * results["eval_precision"]) in printed


def test_predictions_file_is_what_the_scorer_reads(tmp_path):
  sentences = [conll.Sentence(["EU", "rejects"], ["B-ORG", "O"], ""),
               conll.Sentence(["Peter"], ["B-PER"], "")]
  path = str(tmp_path / "predictions.txt")
  conll.write_predictions(path, sentences, [["B-ORG", "O"], ["O"]])
  with open(path, encoding="utf-8") as f:
    assert f.read() == "EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER O\n\n"


# ----------------------------------------------------------------- features


def test_first_pieces_carry_the_labels():
  tokenizer = tokenization.FullTokenizer(UNCASED, do_lower_case=True)
  sentence = conll.Sentence(["Johanson", "visited", "\u200b", "Montréal"],
                            ["B-PER", "O", "O", "B-LOC"], "")
  pieces = features.word_pieces(tokenizer, [sentence])[0]
  assert [tokenizer.convert_ids_to_tokens(p) for p in pieces] == [
      ["johan", "##son"], ["visited"], ["[UNK]"], ["montreal"]]
  (window,) = features.windows_of(0, pieces, 16, 8, 101, 102)
  assert window.input_ids == [101] + [p for w in pieces for p in w] + [102]
  assert window.positions == [1, 3, 4, 5] and window.words == [0, 1, 2, 3]
  labels = features.label_list_of([sentence])
  assert labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_windows_cover_every_word_exactly_once():
  rng = np.random.RandomState(0)
  for _ in range(50):
    lengths = rng.randint(1, 4, size=rng.randint(1, 60))
    pieces = [[5] * n for n in lengths]
    max_seq_length = int(rng.randint(6, 40))
    stride = int(rng.randint(1, max_seq_length - 2))
    windows = features.windows_of(0, pieces, max_seq_length, stride, 101, 102)
    words = [w for window in windows for w in window.words]
    assert sorted(words) == list(range(len(pieces)))
    for window in windows:
      assert len(window.input_ids) <= max_seq_length
      assert all(window.input_ids[p] == 5 for p in window.positions)
    if sum(lengths) <= max_seq_length - 2:
      assert len(windows) == 1


def test_an_entity_across_a_window_boundary_is_scored_whole():
  tokenizer = tokenization.FullTokenizer(UNCASED, do_lower_case=True)
  words = ("the european commission said on thursday it disagreed with german advice to "
           "consumers to shun british lamb until scientists determine whether mad cow "
           "disease can be transmitted to sheep").split()
  tags = ["O"] * len(words)
  tags[1:3] = ["B-ORG", "I-ORG"]
  tags[9], tags[15] = "B-MISC", "B-MISC"
  tags[21:24] = ["B-MISC", "I-MISC", "I-MISC"]  # "mad cow disease"
  sentence = conll.Sentence(words, tags, "")
  labels = features.label_list_of([sentence])

  def owners(windows):
    owner = {w: i for i, window in enumerate(windows) for w in window.words}
    return {owner[21], owner[22], owner[23]}
  # Windows where the words of "mad cow disease" are predicted from different ones.
  windows = next(w for w in (features.windows_of_sentences([sentence], tokenizer, length, stride)
                             for length in range(6, 14) for stride in range(1, length - 2))
                 if len(owners(w)) > 1)
  logits = np.zeros((len(windows), 14, len(labels)), np.float32)
  for i, window in enumerate(windows):
    for position, word in zip(window.positions, window.words):
      logits[i, position, labels.index(tags[word])] = 5.0
  predicted = features.word_predictions([sentence], windows, logits)[0]
  assert [labels[label] for label, _ in predicted] == tags
  counts = metrics.counts_of([tags], [[labels[label] for label, _ in predicted]])
  assert metrics.scores(counts)["eval_f1"] == 1.0 and sum(counts.gold.values()) == 4
