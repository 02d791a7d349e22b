"""The pre-training data runs whose records the original script wrote
(tests/data/pretraining_reference/), and reading record files back: what the
data generator's tests and its fault tests share. The reference maker
(tests/reference_makers/make_pretraining_reference.py) reads REFERENCE_RUNS
from this file."""

import tensorflow as tf

from conftest import data_file, shared_path
from data_prep.pretraining import generator
from data_prep import tokenization

UNCASED = "vocab/bert_uncased_vocab.txt"
CHINESE = "vocab/bert_chinese_vocab.txt"
CORPUS_A = "pretraining_corpus_a.txt"
CORPUS_B = "pretraining_corpus_b.txt"

# name -> (shared inputs, own inputs, vocab, outputs, flags)
REFERENCE_RUNS = {
    "sample_default": (["sample_text.txt"], [], UNCASED, 1, dict(
        do_lower_case=True, max_seq_length=128, max_predictions_per_seq=20,
        masked_lm_prob=0.15, random_seed=12345, dupe_factor=2)),
    "sample_wwm": (["sample_text.txt"], [], UNCASED, 1, dict(
        do_lower_case=True, do_whole_word_mask=True, max_seq_length=64,
        max_predictions_per_seq=10, masked_lm_prob=0.2, short_seq_prob=0.3,
        random_seed=7, dupe_factor=2)),
    "own_cased_multi": ([], [CORPUS_A, CORPUS_B], UNCASED, 2, dict(
        do_lower_case=False, max_seq_length=32, max_predictions_per_seq=5,
        random_seed=99, dupe_factor=3, short_seq_prob=0.25)),
    "own_wwm_chinese": ([], [CORPUS_B, CORPUS_A], CHINESE, 1, dict(
        do_lower_case=True, do_whole_word_mask=True, max_seq_length=48,
        max_predictions_per_seq=8, masked_lm_prob=0.3, random_seed=2024,
        dupe_factor=2)),
    "own_wwm_uncased": ([], [CORPUS_A], UNCASED, 1, dict(
        do_lower_case=True, do_whole_word_mask=True, max_seq_length=128,
        max_predictions_per_seq=20, random_seed=12345, dupe_factor=3)),
}


def read_records(paths):
  records = []
  for path in paths:
    for raw in tf.data.TFRecordDataset(path):
      example = tf.train.Example.FromString(raw.numpy())
      records.append({
          name: (list(f.int64_list.value) if f.HasField("int64_list")
                 else list(f.float_list.value))
          for name, f in example.features.feature.items()})
  return records


def run_reference(name, tmp_path, num_workers=1):
  shared_inputs, own_inputs, vocab, num_outputs, flag_values = REFERENCE_RUNS[name]
  inputs = [shared_path(p) for p in shared_inputs] + [data_file(p) for p in own_inputs]
  flag_values = dict(flag_values)
  do_lower_case = flag_values.pop("do_lower_case")
  tokenizer = tokenization.FullTokenizer(data_file(vocab), do_lower_case)
  outputs = [str(tmp_path / ("%s_%d.tfrecord" % (name, i))) for i in range(num_outputs)]
  generator.generate(inputs, outputs, tokenizer, generator.Options(**flag_values),
                     num_workers=num_workers)
  return outputs


def reference_outputs(name):
  num_outputs = REFERENCE_RUNS[name][3]
  if num_outputs == 1:
    return [data_file("pretraining_reference/%s.tfrecord" % name)]
  return [data_file("pretraining_reference/%s_%d.tfrecord" % (name, i))
          for i in range(num_outputs)]
