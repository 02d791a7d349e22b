"""A model's casing follows it: the converter records it beside vocab.txt,
every command that tokenizes follows the record when --do_lower_case is
not given, a contradicting flag is one error line naming both, and the
released checkpoints (which record nothing) keep the original's default."""

import json
import os

import pytest

from conftest import assert_one_line_error, run_cli_cases
from data_prep import casing
from hf_directories import VOCAB, write_hf_directory
from plumbing.errors import UserError

# The tiny directories' vocabulary with a cased and an uncased "Paris": the
# tokens show which casing a command tokenized with.
CASED_VOCAB = VOCAB + ["Paris", "paris"]
TEXT = "Hello World from Paris"


def _write(directory, name, value):
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
    json.dump(value, f)
  return str(directory)


def test_records_are_read_as_transformers_reads_them(tmp_path):
  assert casing.read(str(tmp_path)) is None
  cased = _write(tmp_path / "a", "tokenizer_config.json",
                 {"do_lower_case": False, "tokenizer_class": "BertTokenizer"})
  assert casing.read(cased).do_lower_case is False
  # A tokenizer_config.json without the key: BertTokenizer's default.
  assert casing.read(_write(tmp_path / "b", "tokenizer_config.json", {})).do_lower_case
  fast = _write(tmp_path / "c", "tokenizer.json",
                {"normalizer": {"type": "BertNormalizer", "lowercase": False}})
  assert casing.read(fast).do_lower_case is False
  assert casing.read(_write(tmp_path / "d", "tokenizer.json",
                            {"normalizer": {"type": "NFC"}})) is None
  for bad, fragment in [({"do_lower_case": "no"}, "true or false"),
                        ({"do_lower_case": False, "strip_accents": True}, "strip_accents"),
                        ({"tokenize_chinese_chars": False}, "CJK")]:
    with pytest.raises(UserError, match=fragment):
      casing.read(_write(tmp_path / "bad", "tokenizer_config.json", bad))


def test_resolve_follows_the_record_unless_told_and_refuses_a_contradiction(tmp_path):
  cased = _write(tmp_path / "cased", "tokenizer_config.json", {"do_lower_case": False})
  uncased = _write(tmp_path / "uncased", "tokenizer_config.json", {"do_lower_case": True})
  empty = str(tmp_path)
  assert casing.resolve(True, False, [empty, cased]) is False  # Default: the record.
  assert casing.resolve(True, False, [uncased, cased]) is True  # The first record found.
  assert casing.resolve(False, True, [cased]) is False  # A flag that agrees.
  assert casing.resolve(False, False, [empty, None]) is False  # No record: the flag.
  assert casing.resolve(True, True, [empty]) is True
  # A run's record stands in for the default only; the model's comes first.
  assert casing.resolve(True, False, [empty], cased) is False
  assert casing.resolve(True, True, [empty], cased) is True
  assert casing.resolve(True, False, [uncased], cased) is True
  with pytest.raises(UserError) as error:
    casing.resolve(True, True, [cased], uncased, "--do_lower_case")
  message = str(error.value)
  assert "--do_lower_case=True" in message and os.path.join(cased, "tokenizer_config.json") \
      in message and "cased" in message


def test_write_keeps_other_keys(tmp_path):
  path = _write(tmp_path, "tokenizer_config.json", {"model_max_length": 512,
                                                   "do_lower_case": True})
  casing.write(path, False)
  with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
    written = json.load(f)
  assert written["model_max_length"] == 512 and written["do_lower_case"] is False
  assert casing.read(path).do_lower_case is False


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
  """A cased Hugging Face directory (as bert-base-cased's) converted to the
  released layout."""
  root = tmp_path_factory.mktemp("cased")
  sizes = {"vocab_size": len(CASED_VOCAB), "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 20,
           "max_position_embeddings": 24, "type_vocab_size": 2}
  hf = write_hf_directory(str(root / "hf"), "BertModel", sizes=sizes,
                          tokenizer_config={"do_lower_case": False,
                                            "tokenizer_class": "BertTokenizer"})
  with open(os.path.join(hf, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in CASED_VOCAB))
  prefix = str(root / "converted" / "bert_model.ckpt")
  [result] = run_cli_cases("convert_checkpoint.py", [
      ["--input_checkpoint=" + hf, "--output_checkpoint=" + prefix,
       "--output_format=original"]])
  assert result.returncode == 0, result.stderr[-3000:]
  return os.path.dirname(prefix)


def test_the_converter_records_the_casing_beside_the_vocabulary(converted):
  assert sorted(n for n in os.listdir(converted) if not n.startswith("bert_model")
                and n != "checkpoint") == [
      "bert_config.json", "tokenizer_config.json", "vocab.txt"]
  with open(os.path.join(converted, "tokenizer_config.json"), encoding="utf-8") as f:
    assert json.load(f)["do_lower_case"] is False


def _extract_features_args(converted, tmp_path, name, *extra):
  with open(tmp_path / "input.txt", "w", encoding="utf-8") as f:
    f.write(TEXT + "\n")
  return ["--input_file=%s" % (tmp_path / "input.txt"),
          "--output_file=%s" % (tmp_path / (name + ".jsonl")),
          "--vocab_file=" + os.path.join(converted, "vocab.txt"),
          "--bert_config_file=" + os.path.join(converted, "bert_config.json"),
          "--init_checkpoint=" + os.path.join(converted, "bert_model.ckpt"),
          "--max_seq_length=16", "--layers=-1"] + list(extra)


def _tokens(path):
  with open(path, encoding="utf-8") as f:
    return [t["token"] for t in json.loads(f.readline())["features"]]


def test_commands_follow_the_recorded_casing(converted, tmp_path):
  follows, agrees, contradicts = run_cli_cases("extract_features.py", [
      _extract_features_args(converted, tmp_path, "follows"),
      _extract_features_args(converted, tmp_path, "agrees", "--do_lower_case=false"),
      _extract_features_args(converted, tmp_path, "contradicts", "--do_lower_case=true")])
  assert follows.returncode == 0 and agrees.returncode == 0, follows.stderr[-3000:]
  # Cased: "Paris" keeps its capital; lower-cased it would be "paris".
  assert _tokens(tmp_path / "follows.jsonl") == ["[CLS]", "[UNK]", "[UNK]", "[UNK]", "Paris",
                                                 "[SEP]"]
  assert _tokens(tmp_path / "agrees.jsonl") == _tokens(tmp_path / "follows.jsonl")
  assert_one_line_error(contradicts, "extract_features.py", "--do_lower_case=True",
                        os.path.join(converted, "tokenizer_config.json"))
  assert not os.path.exists(tmp_path / "contradicts.jsonl")


def test_pretraining_data_follows_the_recorded_casing(converted, tmp_path):
  from data_prep import tokenization  # The record's casing, then the one the flag forces.
  with open(tmp_path / "corpus.txt", "w", encoding="utf-8") as f:
    f.write("Paris the cat sat on the mat .\nthe dog ran .\n\nthe big red house .\n"
            "a cat sat .\n")
  base = ["--input_file=%s" % (tmp_path / "corpus.txt"),
          "--vocab_file=" + os.path.join(converted, "vocab.txt"), "--max_seq_length=16",
          "--max_predictions_per_seq=2", "--dupe_factor=1"]
  follows, contradicts = run_cli_cases("create_pretraining_data.py", [
      base + ["--output_file=%s" % (tmp_path / "follows.tfrecord")],
      base + ["--output_file=%s" % (tmp_path / "contradicts.tfrecord"),
              "--do_lower_case=true"]])
  assert follows.returncode == 0, follows.stderr[-3000:]
  assert_one_line_error(contradicts, "create_pretraining_data.py", "--do_lower_case=True",
                        "tokenizer_config.json")
  assert not os.path.exists(tmp_path / "contradicts.tfrecord")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  vocab = tokenization.load_vocab(os.path.join(converted, "vocab.txt"))
  ids = set()
  for record in tf.data.TFRecordDataset(str(tmp_path / "follows.tfrecord")):
    example = tf.train.Example.FromString(record.numpy())
    ids.update(example.features.feature["input_ids"].int64_list.value)
    ids.update(example.features.feature["masked_lm_ids"].int64_list.value)
  assert vocab["Paris"] in ids and vocab["paris"] not in ids
