"""SWAG files and features (tasks/swag.py), on files in the published
format written here (the data cannot be downloaded) and hand-made tokens."""

import pytest

from conftest import data_file
from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import tf_example
from tasks import swag
from tasks import pair_packing

# The published files start with an unnamed index column.
HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"
ROWS = [
    '0,anetv_1,5,"The man sits down. He","The man sits down.",He,gold,smiles.,'
    '"flies away, fast.",eats the chair.,sings,0',
    '1,lsmdc_2,17,Someone opens the door. She,Someone opens the door.,She,gen,'
    'walks in.,is a door.,closes the sky.,runs the water.,3',
]


def _write(path, lines):
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(data_file("vocab/bert_uncased_vocab.txt"), True)


def test_reads_the_published_columns(tmp_path):
  examples = swag.read_swag_examples(_write(tmp_path / "val.csv", [HEADER] + ROWS), True)
  assert [e.swag_id for e in examples] == ["5", "17"]
  first = examples[0]
  assert first.context == "The man sits down."
  assert first.start_ending == "He"
  assert first.endings == ["smiles.", "flies away, fast.", "eats the chair.", "sings"]
  assert [e.label for e in examples] == [0, 3]
  assert examples[1].source.endswith("val.csv:3")


def test_test_file_has_no_label(tmp_path):
  header = HEADER[:-len(",label")]
  rows = [r[:r.rindex(",")] for r in ROWS]
  examples = swag.read_swag_examples(_write(tmp_path / "test.csv", [header] + rows), False)
  assert [e.label for e in examples] == [None, None]
  with pytest.raises(UserError, match=r"test.csv:1: the header has no column label"):
    swag.read_swag_examples(str(tmp_path / "test.csv"), True)


@pytest.mark.parametrize("row,message", [
    ('0,v,1,s,a,b,g,e0,e1,e2,e3,4', r"bad.csv:2: label '4' is not an ending index"),
    ('0,v,1,s,a,b,g,e0,,e2,e3,1', r"bad.csv:2: ending1 is empty"),
    ('0,v,1,s,a,b,g,e0,e1', r"bad.csv:2: 9 fields, the header names 12"),
])
def test_bad_rows_name_file_and_line(tmp_path, row, message):
  with pytest.raises(UserError, match=message):
    swag.read_swag_examples(_write(tmp_path / "bad.csv", [HEADER, row]), True)


def test_missing_file_names_the_data_dir(tmp_path):
  with pytest.raises(UserError, match="train.csv: no such file. Check --data_dir"):
    swag.examples_of(str(tmp_path), "train")


def test_four_sequences_by_hand(tmp_path, tokenizer):
  example = swag.read_swag_examples(
      _write(tmp_path / "val.csv", [HEADER] + ROWS), True)[0]
  vocab = tokenization.load_vocab(data_file("vocab/bert_uncased_vocab.txt"))
  ids, masks, segments = (v[0].tolist() for v in swag.choice_features([example], tokenizer, 16))
  context = ["[CLS]", "the", "man", "sits", "down", ".", "[SEP]"]
  expected = [context + ["he", "smiles", ".", "[SEP]"],
              context + ["he", "flies", "away", ",", "fast", ".", "[SEP]"],
              context + ["he", "eats", "the", "chair", ".", "[SEP]"],
              context + ["he", "sings", "[SEP]"]]
  for i, tokens in enumerate(expected):
    assert ids[i] == [vocab[t] for t in tokens] + [0] * (16 - len(tokens))
    assert masks[i] == [1] * len(tokens) + [0] * (16 - len(tokens))
    assert segments[i] == [0] * 7 + [1] * (len(tokens) - 7) + [0] * (16 - len(tokens))
  # Sequence 10 leaves 7 pieces for the pair (5 + 6): one at a time from the
  # end of the longer, B on ties: B, B, A, B.
  ids, _, segments = (v[0].tolist() for v in swag.choice_features([example], tokenizer, 10))
  assert ids[1] == [vocab[t] for t in ["[CLS]", "the", "man", "sits", "down", "[SEP]",
                                       "he", "flies", "away", "[SEP]"]]
  assert segments[1] == [0] * 6 + [1] * 4


def test_records_round_trip(tmp_path, tokenizer):
  examples = swag.read_swag_examples(
      _write(tmp_path / "train.csv", [HEADER] + ROWS), True)
  path = str(tmp_path / "train.tf_record")
  swag.write_records(examples, tokenizer, 12, path)
  records = list(tf_example.read_records(path, swag.example_spec(12)).as_numpy_iterator())
  assert len(records) == 2
  for record, example in zip(records, examples):
    assert record["input_ids"].shape == (4, 12)
    for choice, ending in enumerate(example.endings):  # The one-example packing.
      tokens, segments = pair_packing.pack_tokens(
          tokenizer, example.context, example.start_ending + " " + ending, 12)
      padding = [0] * (12 - len(tokens))
      assert record["input_ids"][choice].tolist() == tokenizer.convert_tokens_to_ids(
          tokens) + padding
      assert record["input_mask"][choice].tolist() == [1] * len(tokens) + padding
      assert record["segment_ids"][choice].tolist() == segments + padding
    assert record["label_ids"] == example.label
    assert record["is_real_example"] == 1
