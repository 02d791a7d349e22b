"""GLUE/XNLI processors, features and records of run_classifier."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from conftest import data_file, shared_path
from data_prep import tokenization
from modeling import heads
from plumbing.errors import UserError
from plumbing import tf_example
from serving import packing
from tasks import pair_packing
from tasks.classification import features as classifier_features
from tasks.classification import glue

UNCASED = "vocab/bert_uncased_vocab.txt"


@pytest.fixture(scope="module")
def tokenizer():
  return tokenization.FullTokenizer(data_file(UNCASED), do_lower_case=True)


def _glue(task):
  return shared_path("glue/" + task)


# Rows per file, from ../shared/data/MANIFEST.md (rows after any header).
@pytest.mark.parametrize("task,split,count", [
    ("SST-2", "dev", 872), ("SST-2", "test", 1821), ("STS-B", "train", 5749),
    ("STS-B", "dev", 1500), ("STS-B", "test", 1379), ("QNLI", "dev", 5463),
    ("QNLI", "test", 5463), ("RTE", "train", 2490), ("RTE", "dev", 277),
    ("RTE", "test", 3000), ("WNLI", "train", 635), ("WNLI", "test", 146),
    ("CoLA", "dev", 1043), ("CoLA", "test", 1063), ("MRPC", "dev", 408),
    ("MRPC", "test", 1725),
])
def test_processors_read_every_row_of_real_glue_files(task, split, count):
  processor = glue.get_processor(task)
  examples = getattr(processor, "get_%s_examples" % split)(_glue(task))
  assert len(examples) == count
  labels = processor.get_labels()
  for example in examples:
    assert example.text_a
    if processor.is_regression:
      assert 0.0 <= example.label <= 5.0
    else:
      assert example.label in labels
    assert (example.text_b is None) == processor.single_sentence
    if split == "test":
      assert example.index is not None


def test_processors_take_the_right_columns():
  first = lambda task, split: getattr(
      glue.get_processor(task), "get_%s_examples" % split)(_glue(task))[0]
  e = first("SST-2", "dev")
  assert (e.guid, e.text_a, e.label) == ("dev-1", "it 's a charming and often affecting journey . ", "1")
  e = first("SST-2", "test")
  assert (e.text_a, e.label, e.index) == ("uneasy mishmash of styles and genres .", "0", "0")
  e = first("STS-B", "dev")
  assert (e.text_a, e.text_b, e.label) == (
      "A man with a hard hat is dancing.", "A man wearing a hard hat is dancing.", 5.0)
  e = first("STS-B", "test")
  assert (e.text_b, e.label) == ("A girl is brushing her hair.", 0.0)
  e = first("QNLI", "dev")
  assert e.text_a.startswith("What came into force") and e.label == "entailment"
  e = first("RTE", "train")
  assert e.text_b == "Weapons of Mass Destruction Found in Iraq." and e.label == "not_entailment"
  e = first("WNLI", "dev")
  assert (e.text_b, e.label) == ("The hair has to be cleaned.", "0")
  # The original's readers: CoLA dev has no header, its test file has one;
  # MRPC's header (with a UTF-8 byte-order mark) is skipped.
  e = first("CoLA", "dev")
  assert (e.guid, e.text_a, e.label) == (
      "dev-0", "The sailors rode the breeze clear of the rocks.", "1")
  e = first("CoLA", "test")
  assert (e.guid, e.text_a, e.label, e.index) == ("test-1", "Bill whistled past the house.", "0", "0")
  e = first("MRPC", "dev")
  assert e.guid == "dev-1" and e.label == "1"
  assert e.text_b == '" The foodservice pie business does not fit our long-term growth strategy .'


def test_mnli_mismatched_and_qqp_read_the_rows_as_the_original_does():
  """Rows in MNLI's mismatched and QQP's layouts (glue_layouts/), read as the
  original reads them (examples.json there; see its maker for how: the
  original has no processor of either). MNLI-mm's guids name its own sets."""
  layouts = data_file("classifier_reference/glue_layouts")
  with open(os.path.join(layouts, "examples.json"), encoding="utf-8") as f:
    reference = json.load(f)
  assert sorted(reference) == ["MNLI-mm/dev", "MNLI-mm/test", "QQP/dev", "QQP/test"]
  for key, expected in reference.items():
    task, split = key.split("/")
    processor = glue.get_processor(task)
    examples = getattr(processor, "get_%s_examples" % split)(
        os.path.join(layouts, task.split("-")[0]))
    assert len(examples) == len(expected) > 0, key
    got = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
    if task == "MNLI-mm":
      expected = [[g.replace("dev_matched-", "dev_mismatched-")] + rest
                  for g, *rest in expected]
    assert got == expected, key
    if split == "test":
      assert [e.index for e in examples] == [str(i) for i in range(len(examples))], key


def test_task_names_and_errors(tmp_path):
  assert isinstance(glue.get_processor("MRPC"), glue.MrpcProcessor)
  assert isinstance(glue.get_processor("sst2"), glue.Sst2Processor)
  with pytest.raises(UserError, match="Known tasks.*cola.*mrpc"):
    glue.get_processor("mrpcc")
  bad = tmp_path / "dev.tsv"
  bad.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t2\t3\tonly four columns\n")
  with pytest.raises(UserError, match=r"dev.tsv:2: expected at least 5 tab-separated columns, found 4"):
    glue.MrpcProcessor().get_dev_examples(str(tmp_path))
  with pytest.raises(UserError, match="no such file"):
    glue.MrpcProcessor().get_train_examples(str(tmp_path))
  bad.write_text("h\th\th\th\th\n7\t2\t3\ta\tb\n")
  examples = glue.MrpcProcessor().get_dev_examples(str(tmp_path))
  with pytest.raises(UserError, match=r"dev.tsv:2: unknown label '7'; the task's labels are '0', '1'"):
    classifier_features.convert_single_example(0, examples[0], ["0", "1"], 16, _FakeTokenizer())
  (tmp_path / "dev2").mkdir()
  (tmp_path / "dev2" / "dev.tsv").write_text("")
  with pytest.raises(UserError, match="has no examples"):
    glue.check_examples(
        glue.MrpcProcessor().get_dev_examples(str(tmp_path / "dev2")), "dev.tsv")


class _FakeTokenizer(object):
  def tokenize(self, text):
    return text.split()

  def convert_tokens_to_ids(self, tokens):
    return [len(t) for t in tokens]


def test_xnli_language_filter_and_translated_training_labels(tmp_path):
  (tmp_path / "multinli").mkdir()
  (tmp_path / "multinli" / "multinli.train.zh.tsv").write_text(
      "premise\thypo\tlabel\n你好\t再见\tcontradictory\n甲\t乙\tneutral\n", encoding="utf-8")
  header = "\t".join(["language", "gold_label"] + ["c%d" % i for i in range(4)] +
                     ["sentence1", "sentence2"]) + "\n"
  rows = ["en\tneutral\tx\tx\tx\tx\tA\tB\n", "zh\tentailment\tx\tx\tx\tx\t一\t二\n",
          "de\tneutral\tx\tx\tx\tx\tC\tD\n", "zh\tcontradiction\tx\tx\tx\tx\t三\t四\n"]
  (tmp_path / "xnli.dev.tsv").write_text(header + "".join(rows), encoding="utf-8")
  processor = glue.XnliProcessor()
  train = processor.get_train_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.label) for e in train] == [
      ("train-1", "你好", "contradiction"), ("train-2", "甲", "neutral")]
  dev = processor.get_dev_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in dev] == [
      ("dev-2", "一", "二", "entailment"), ("dev-4", "三", "四", "contradiction")]
  german = glue.XnliProcessor(language="de").get_dev_examples(str(tmp_path))
  assert [e.guid for e in german] == ["dev-3"]


def _loop_truncate(len_a, len_b, max_length):
  a, b = list(range(len_a)), list(range(len_b))
  while len(a) + len(b) > max_length:
    (a if len(a) > len(b) else b).pop()
  return len(a), len(b)


def test_features_are_the_original_packing(tokenizer):
  example = classifier_features.InputExample("g", "Is this jacksonville?", "No it is not.", "1")
  f = classifier_features.convert_single_example(0, example, ["0", "1"], 16, tokenizer)
  tokens = tokenizer.convert_ids_to_tokens(f.input_ids[:sum(f.input_mask)])
  assert tokens == ["[CLS]", "is", "this", "jacksonville", "?", "[SEP]", "no", "it", "is",
                    "not", ".", "[SEP]"]
  assert f.segment_ids == [0] * 6 + [1] * 6 + [0] * 4
  assert f.input_ids[12:] == [0] * 4 and f.label_id == 1 and f.is_real_example
  # Longest-first truncation to max_seq_length - 3, B losing ties.
  def packed(text_a, text_b, max_seq_length):
    f = classifier_features.convert_single_example(
        0, classifier_features.InputExample("g", text_a, text_b, "0"), ["0", "1"],
        max_seq_length, tokenizer)
    return tokenizer.convert_ids_to_tokens(f.input_ids[:sum(f.input_mask)])
  assert packed("a b c d e f g h", "x y z", 9) == [
      "[CLS]", "a", "b", "c", "[SEP]", "x", "y", "z", "[SEP]"]
  assert packed("a b c d", "w x y z", 8) == ["[CLS]", "a", "b", "c", "[SEP]", "w", "x", "[SEP]"]
  # An empty B is a single sentence: no second [SEP].
  assert packed("a b", "", 8) == ["[CLS]", "a", "b", "[SEP]"]
  # Single sentence: [CLS] A [SEP], cut to max_seq_length - 2.
  single = classifier_features.InputExample("g", "a b c d e f g h", None, "0")
  f = classifier_features.convert_single_example(0, single, ["0", "1"], 6, tokenizer)
  assert tokenizer.convert_ids_to_tokens(f.input_ids) == ["[CLS]", "a", "b", "c", "d", "[SEP]"]
  padding = classifier_features.convert_single_example(
      0, classifier_features.PaddingInputExample(), ["0", "1"], 4, tokenizer)
  assert (padding.input_ids, padding.label_id, padding.is_real_example) == ([0] * 4, 0, False)


def test_pair_truncation_lengths_are_the_one_token_at_a_time_loop():
  budgets, lengths = range(0, 14), range(0, 17)
  for budget in budgets:
    for len_a in lengths:
      for len_b in range(1, 17):
        tokens_a, tokens_b = list(range(len_a)), list(range(len_b))
        pair_packing.truncate_seq_pair(tokens_a, tokens_b, budget)
        got = pair_packing.truncated_pair_lengths(
            np.array([len_a]), np.array([len_b]), budget)
        assert (got[0][0], got[1][0]) == (len(tokens_a), len(tokens_b)), (len_a, len_b, budget)


def test_batch_packing_is_the_original_packing(tokenizer):
  """pack_batch (the record writers' path) against convert_single_example,
  whose records match the original's (test_run_classifier.py): the cases
  above, then whole real GLUE files at two lengths."""
  def batch_tokens(text_a, text_b, max_seq_length):
    ids, mask, segments = pair_packing.pack_batch(tokenizer, [text_a], [text_b],
                                                  max_seq_length)
    return tokenizer.convert_ids_to_tokens(ids[0][:mask[0].sum()].tolist()), segments[0]
  assert batch_tokens("a b c d e f g h", "x y z", 9)[0] == [
      "[CLS]", "a", "b", "c", "[SEP]", "x", "y", "z", "[SEP]"]
  assert batch_tokens("a b c d", "w x y z", 8)[0] == [
      "[CLS]", "a", "b", "c", "[SEP]", "w", "x", "[SEP]"]
  assert batch_tokens("a b", "", 8)[0] == ["[CLS]", "a", "b", "[SEP]"]
  assert batch_tokens("a b", " \t", 8)[0] == ["[CLS]", "a", "b", "[SEP]"]  # No tokens in B.
  assert batch_tokens("a b c d e f g h", None, 6)[0] == ["[CLS]", "a", "b", "c", "d", "[SEP]"]
  assert batch_tokens("", None, 6)[0] == ["[CLS]", "[SEP]"]
  assert batch_tokens("a", "b", 8)[1].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
  for task, split in (("RTE", "train"), ("MRPC", "dev"), ("CoLA", "dev"), ("STS-B", "dev")):
    processor = glue.get_processor(task)
    examples = getattr(processor, "get_%s_examples" % split)(_glue(task))
    for max_seq_length in (24, 128):
      ids, mask, segments = pair_packing.pack_batch(
          tokenizer, [e.text_a for e in examples], [e.text_b for e in examples],
          max_seq_length)
      expected = [classifier_features.convert_single_example(
          i + 5, e, processor.get_labels(), max_seq_length, tokenizer)
                  for i, e in enumerate(examples)]
      assert ids.tolist() == [f.input_ids for f in expected], (task, max_seq_length)
      assert mask.tolist() == [f.input_mask for f in expected]
      assert segments.tolist() == [f.segment_ids for f in expected]


def test_written_records_hold_each_examples_features(tmp_path, tokenizer):
  """The writer's records, a padding example and a regression task included,
  decode to convert_single_example's features."""
  for task, labels in (("STS-B", [None]), ("MRPC", ["0", "1"])):
    examples = glue.get_processor(task).get_dev_examples(_glue(task))[:9]
    examples.insert(4, classifier_features.PaddingInputExample())
    path = str(tmp_path / (task + ".tf_record"))
    classifier_features.file_based_convert_examples_to_features(examples, labels, 40,
                                                                tokenizer, path)
    problem = heads.REGRESSION if task == "STS-B" else heads.SINGLE_LABEL
    decoded = list(tf_example.read_records(
        path, classifier_features.example_spec(40, problem)).as_numpy_iterator())
    expected = [classifier_features.convert_single_example(i, e, labels, 40, tokenizer)
                for i, e in enumerate(examples)]
    assert len(decoded) == len(expected) == 10
    for got, want in zip(decoded, expected):
      assert got["input_ids"].tolist() == want.input_ids
      assert got["input_mask"].tolist() == want.input_mask
      assert got["segment_ids"].tolist() == want.segment_ids
      assert got["label_ids"] == pytest.approx(want.label_id)
      assert got["is_real_example"] == int(want.is_real_example)


def test_pair_truncation_in_graph_equals_the_loop():
  for max_length in range(0, 24):
    pairs = [(a, b) for a in range(30) for b in range(30)]
    got_a, got_b = packing.truncated_pair_lengths(
        tf.constant([p[0] for p in pairs]), tf.constant([p[1] for p in pairs]), max_length)
    expected = [_loop_truncate(a, b, max_length) for a, b in pairs]
    assert list(zip(got_a.numpy().tolist(), got_b.numpy().tolist())) == expected


def _packed_in_python(ids_a, ids_b, max_seq_length, cls_id=101, sep_id=102):
  """convert_single_example's packing of token ids, the original's way."""
  ids_a, ids_b = list(ids_a), list(ids_b or [])
  if ids_b:
    pair_packing.truncate_seq_pair(ids_a, ids_b, max_seq_length - 3)
  else:
    ids_a = ids_a[:max_seq_length - 2]
  ids = [cls_id] + ids_a + [sep_id] + (ids_b + [sep_id] if ids_b else [])
  segments = [0] * (len(ids_a) + 2) + [1] * (len(ids) - len(ids_a) - 2)
  padding = [0] * (max_seq_length - len(ids))
  return ids + padding, [1] * len(ids) + padding, segments + padding


def test_pair_packing_in_graph_equals_the_original_packing():
  """serving/packing.pack_pair, single texts and pairs of every length pair
  up to 20 tokens (empty A or B included) at lengths that cut them."""
  pairs = [(list(range(1000, 1000 + a)), list(range(2000, 2000 + b)))
           for a in range(0, 21, 3) for b in range(0, 21, 2)]
  for max_seq_length in (5, 8, 13, 24, 48):
    for single in (False, True):
      rows = [a for a, _ in pairs] + ([] if single else [b for _, b in pairs])
      ids = tf.ragged.constant(rows, tf.int32, row_splits_dtype=tf.int64)
      got = packing.pack_pair(ids, max_seq_length, 101, 102, sentence_pair=not single)
      expected = [_packed_in_python(a, None if single else b, max_seq_length) for a, b in pairs]
      for i, name in enumerate(("input_ids", "input_mask", "segment_ids")):
        assert got[name].dtype == tf.int32
        assert got[name].numpy().tolist() == [e[i] for e in expected], (name, max_seq_length)


def test_records_round_trip_with_padding_batches(tmp_path, tokenizer):
  from modeling import inference
  examples = glue.MrpcProcessor().get_dev_examples(_glue("MRPC"))[:11]
  path = str(tmp_path / "eval.tf_record")
  classifier_features.file_based_convert_examples_to_features(
      examples, ["0", "1"], 32, tokenizer, path)
  assert not list(tmp_path.glob("*.tmp-*"))
  records = tf_example.read_records(path, classifier_features.example_spec(32))
  batches = list(inference.padded_batches(records, len(examples), 4))
  assert [b["input_ids"].shape[0] for b in batches] == [4, 4, 4]
  is_real = np.concatenate([b["is_real_example"].numpy() for b in batches])
  assert is_real.tolist() == [1] * 11 + [0]
  expected = [classifier_features.convert_single_example(i, e, ["0", "1"], 32, tokenizer)
              for i, e in enumerate(examples)]
  ids = np.concatenate([b["input_ids"].numpy() for b in batches])
  assert ids[:11].tolist() == [f.input_ids for f in expected]
  assert not ids[11].any()
  labels = np.concatenate([b["label_ids"].numpy() for b in batches])
  assert labels[:11].tolist() == [f.label_id for f in expected]


def test_tensorflow_datasets_source_with_mock_data():
  tfds = pytest.importorskip("tensorflow_datasets")
  with tfds.testing.mock_data(num_examples=6):
    processor = glue.processor_for("MNLI", glue.TFDS_DATA_DIR)
    dev = processor.get_dev_examples()
    assert len(dev) == 6
    assert all(e.label in processor.get_labels() for e in dev)
    assert all(e.guid.startswith("dev-") and e.text_b for e in dev)
    test = processor.get_test_examples()
    assert all(e.label == "contradiction" and e.index is not None for e in test)
    stsb = glue.processor_for("STS-B", glue.TFDS_DATA_DIR)
    assert stsb.is_regression
    assert all(isinstance(e.label, float) for e in stsb.get_train_examples())
    cola = glue.processor_for("CoLA", glue.TFDS_DATA_DIR)
    assert all(e.text_b is None and e.label in ("0", "1") for e in cola.get_dev_examples())
  with pytest.raises(UserError, match="not available from tensorflow-datasets"):
    glue.processor_for("XNLI", glue.TFDS_DATA_DIR)


MRPC_SOURCES = {"msr_paraphrase_train.txt": "msr_paraphrase_train.txt",
                "msr_paraphrase_test.txt": "msr_paraphrase_test.txt",
                "data_mrpc_dev_ids.tsv": "dev_ids.tsv"}


def test_tensorflow_datasets_prepares_mrpc_offline_from_its_source_files(tmp_path):
  """The real preparation path of --data_dir=tfds, with no network: the
  source files tensorflow-datasets would download (the SentEval MRPC files,
  their checksums as it records them) given as --tfds_manual_dir. Its dev
  set is GLUE's MRPC dev.tsv."""
  pytest.importorskip("tensorflow_datasets")
  manual = tmp_path / "manual"
  manual.mkdir()
  for name, shared in MRPC_SOURCES.items():
    shutil.copy(shared_path("glue/MRPC/" + shared), manual / name)
  processor = glue.processor_for("MRPC", glue.TFDS_DATA_DIR, tfds_manual_dir=str(manual))
  processor.data_dir = str(tmp_path / "tfds")
  dev = processor.get_dev_examples()
  from_files = glue.MrpcProcessor().get_dev_examples(shared_path("glue/MRPC"))
  assert sorted((e.text_a, e.text_b, e.label) for e in dev) == sorted(
      (e.text_a, e.text_b, e.label) for e in from_files)


def test_tensorflow_datasets_without_network_says_what_to_do(tmp_path, monkeypatch):
  tfds = pytest.importorskip("tensorflow_datasets")
  import requests  # pylint: disable=g-import-not-at-top

  def offline(*args, **kwargs):
    raise requests.exceptions.ConnectionError("Failed to resolve 'dl.fbaipublicfiles.com'")
  monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", offline)
  processor = glue.processor_for("MRPC", glue.TFDS_DATA_DIR)
  processor.data_dir = str(tmp_path)
  with pytest.raises(UserError, match="could not download glue/mrpc .*msr_paraphrase_test.txt"
                     ".*--tfds_manual_dir"):
    processor.get_dev_examples()
