"""create_pretraining_data against records written by the original script.

tests/data/pretraining_reference/*.tfrecord were produced by the original
release's create_pretraining_data.py with the flags in REFERENCE_RUNS (see
tests/data/README.md); we must reproduce them record for record, feature by
feature.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, run_cli_cases, shared_path
import create_pretraining_data as cpd  # The script, which has the original's library names.
from data_prep.pretraining import generator
from data_prep.pretraining import python_random
from data_prep.pretraining import records as pretraining_records
from data_prep import tokenization
from pretraining_references import (CORPUS_A, CORPUS_B, REFERENCE_RUNS, UNCASED, read_records,
                                    reference_outputs, run_reference)

@pytest.mark.parametrize("name", sorted(REFERENCE_RUNS))
def test_records_identical_to_original(name, tmp_path):
  ours = run_reference(name, tmp_path)
  theirs = reference_outputs(name)
  for our_file, their_file in zip(ours, theirs):
    got, want = read_records([our_file]), read_records([their_file])
    assert len(got) == len(want) > 0
    for index, (g, w) in enumerate(zip(got, want)):
      assert g == w, "%s record %d differs" % (os.path.basename(our_file), index)


def test_parallel_tokenization_gives_same_records(tmp_path):
  ours = run_reference("own_cased_multi", tmp_path, num_workers=2)
  assert read_records(ours) == read_records(reference_outputs("own_cased_multi"))


def test_python_random_stream_matches_cpython():
  import random
  bounds = random.Random(5)
  for seed in (0, 1, 12345, 2**40 + 3):
    rng = random.Random(seed)
    state = python_random.state_from_seed(seed)
    for _ in range(700):  # Crosses a state refill.
      assert python_random.random_float(state) == rng.random()
      bound = bounds.randint(1, 5000)
      python_random.randint(state, 0, 0)  # Consumes like randint(0, 0) does.
      rng.randint(0, 0)
      assert python_random.randint(state, 3, 3 + bound) == rng.randint(3, 3 + bound)
    values = np.arange(300)
    expected = list(range(300))
    python_random.shuffle(state, values)
    rng.shuffle(expected)
    assert values.tolist() == expected
    assert python_random.state_to_python(state).random() == rng.random()


def _two_instances():
  from data_prep.pretraining import instances as pi
  tokens = np.array([5, 200, 300, 40000, 2**20], np.int32)
  inst = pi.Instances(tokens, 101, 102, 8, 3, capacity=2)
  inst.count = 2
  inst.spans[:] = [[0, 2, 2, 4], [4, 5, 1, 2]]  # A=[5,200] B=[300,40000]; A=[2**20] B=[200]
  inst.masked_positions[0, :2] = [2, 4]
  inst.masked_labels[0, :2] = [200, 300]
  inst.masked_replacements[0, :2] = [103, 300]
  inst.num_masked[:] = [2, 0]
  inst.is_random_next[:] = [1, 0]
  return inst


def test_encoder_matches_protobuf():
  inst = _two_instances()
  records = list(pretraining_records.iter_serialized(inst, np.array([1, 0])))
  def example(ids, mask, segs, pos, labels, weights, nsp):
    feature = lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
    return tf.train.Example(features=tf.train.Features(feature={
        "input_ids": feature(ids), "input_mask": feature(mask),
        "segment_ids": feature(segs), "masked_lm_positions": feature(pos),
        "masked_lm_ids": feature(labels), "next_sentence_labels": feature([nsp]),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights))}))
  want = [
      example([101, 2**20, 102, 200, 102, 0, 0, 0], [1] * 5 + [0] * 3,
              [0, 0, 0, 1, 1, 0, 0, 0], [0, 0, 0], [0, 0, 0], [0.0] * 3, 0),
      example([101, 5, 103, 102, 300, 40000, 102, 0], [1] * 7 + [0],
              [0, 0, 0, 0, 1, 1, 1, 0], [2, 4, 0], [200, 300, 0], [1.0, 1.0, 0.0], 1),
  ]
  assert len(records) == len(want)
  for record, expected in zip(records, want):
    assert tf.train.Example.FromString(record) == expected
    assert len(record) == expected.ByteSize()  # Minimal encoding, no extra bytes.


def test_record_files_byte_identical_to_tensorflow_writer(tmp_path):
  from plumbing import tfrecord
  inst = _two_instances()
  ours = tmp_path / "ours.tfrecord"
  pretraining_records.write_instances(inst, np.array([1, 0, 1]), [str(ours)])
  theirs = tmp_path / "theirs.tfrecord"
  with tf.io.TFRecordWriter(str(theirs)) as writer:
    for record in pretraining_records.iter_serialized(inst, np.array([1, 0, 1])):
      writer.write(record)
  assert ours.read_bytes() == theirs.read_bytes()
  assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def _run_cli(args, cwd=REPO_ROOT):
  script = os.path.join(REPO_ROOT, "create_pretraining_data.py")
  return subprocess.run([sys.executable, script] + args, cwd=cwd, capture_output=True,
                        text=True, timeout=300)


def _vocab(tmp_path, tokens):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
  return str(path)


def test_cli_errors_name_the_problem_and_leave_no_output(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("Hello world.\nSecond line.\n\nOther doc.\n", encoding="utf-8")
  good_vocab = _vocab(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"])
  out = tmp_path / "out.tfrecord"
  base = ["--vocab_file=" + good_vocab, "--output_file=" + str(out)]
  cases = [
      (["--input_file=" + str(tmp_path / "missing*.txt")], "missing"),
      (["--input_file=" + str(corpus), "--max_seq_length=3"], "max_seq_length"),
      (["--input_file=" + str(corpus), "--masked_lm_prob=0"], "masked_lm_prob"),
      (["--input_file=" + str(corpus), "--masked_lm_prob=1.5"], "masked_lm_prob"),
  ]
  empty = tmp_path / "empty.txt"
  empty.write_text("")
  cases.append((["--input_file=" + str(empty)], "empty.txt"))
  bad_utf8 = tmp_path / "bad.txt"
  bad_utf8.write_bytes(b"fine line\nbad \xff byte\n")
  cases.append((["--input_file=" + str(bad_utf8)], "bad.txt:2"))
  no_mask_vocab = tmp_path / "v2"
  no_mask_vocab.mkdir()
  cases.append((["--input_file=" + str(corpus),
                 "--vocab_file=" + _vocab(no_mask_vocab, ["[UNK]", "[CLS]", "[SEP]"])],
                "[MASK]"))
  results = run_cli_cases("create_pretraining_data.py",
                          [base + extra for extra, _ in cases])
  for (extra, expected), result in zip(cases, results):
    assert result.returncode == 1, extra
    errors = [l for l in result.stderr.splitlines() if "error: " in l]
    assert len(errors) == 1 and expected in errors[0], (extra, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
  assert not out.exists()
  assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_invalid_utf8_can_be_ignored_like_convert_to_unicode(tmp_path):
  vocab = data_file(UNCASED)
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"The caf\xc3\xa9 is open.\nIt \xff\xfeserves tea.\n\nA new document here.\n")
  clean = tmp_path / "clean.txt"
  clean.write_bytes(b"The caf\xc3\xa9 is open.\nIt serves tea.\n\nA new document here.\n")
  outs = []
  for src in (bad, clean):
    out = str(tmp_path / (src.stem + ".tfrecord"))
    result = _run_cli(["--input_file=" + str(src), "--output_file=" + out,
                       "--vocab_file=" + vocab, "--on_invalid_utf8=ignore",
                       "--dupe_factor=2", "--max_seq_length=16"])
    assert result.returncode == 0, result.stderr[-2000:]
    outs.append(read_records([out]))
  assert outs[0] == outs[1] and outs[0]


def test_sharded_mode_is_deterministic_and_resumes(tmp_path):
  vocab = data_file(UNCASED)
  out_dir = tmp_path / "shards"
  args = ["--input_file=%s,%s" % (data_file(CORPUS_A), data_file(CORPUS_B)),
          "--output_dir=" + str(out_dir), "--vocab_file=" + vocab,
          "--dupe_factor=2", "--max_seq_length=64", "--num_workers=1"]
  # Two tasks, as two machines would run them.
  for task in (0, 1):
    result = _run_cli(args + ["--num_tasks=2", "--task_index=%d" % task])
    assert result.returncode == 0, result.stderr[-2000:]
  names = sorted(os.listdir(out_dir))
  assert names == [CORPUS_A + ".tfrecord", CORPUS_B + ".tfrecord"]
  first = {n: read_records([str(out_dir / n)]) for n in names}
  # Each shard equals a standalone run of its file with the derived seed.
  tokenizer = tokenization.FullTokenizer(vocab, True)
  single = str(tmp_path / "single.tfrecord")
  generator.generate([data_file(CORPUS_B)], [single], tokenizer,
                     generator.Options(max_seq_length=64, dupe_factor=2,
                                       random_seed=generator.derived_seed(12345, CORPUS_B)))
  assert read_records([single]) == first[CORPUS_B + ".tfrecord"]
  # Resume: a missing shard is redone identically, an existing one skipped.
  os.remove(out_dir / names[0])
  mtime = os.path.getmtime(out_dir / names[1])
  result = _run_cli(args)
  assert result.returncode == 0, result.stderr[-2000:]
  assert os.path.getmtime(out_dir / names[1]) == mtime
  assert read_records([str(out_dir / names[0])]) == first[names[0]]


def test_library_api_matches_original_records(tmp_path):
  """create_training_instances + write_instance_to_example_files, the
  original's library functions, give the original's records and advance the
  caller's random.Random."""
  import random
  shared_inputs, _, vocab, _, flag_values = REFERENCE_RUNS["sample_wwm"]
  tokenizer = tokenization.FullTokenizer(data_file(vocab), do_lower_case=True)
  rng = random.Random(flag_values["random_seed"])
  before = rng.getstate()
  instances = cpd.create_training_instances(
      [shared_path(p) for p in shared_inputs], tokenizer, flag_values["max_seq_length"],
      flag_values["dupe_factor"], flag_values["short_seq_prob"],
      flag_values["masked_lm_prob"], flag_values["max_predictions_per_seq"], rng,
      do_whole_word_mask=True)
  assert rng.getstate() != before
  assert instances[0].tokens[0] == "[CLS]" and "tokens: [CLS]" in str(instances[0])
  out = str(tmp_path / "api.tfrecord")
  cpd.write_instance_to_example_files(instances, tokenizer, flag_values["max_seq_length"],
                                      flag_values["max_predictions_per_seq"], [out])
  assert read_records([out]) == read_records(reference_outputs("sample_wwm"))


def test_failed_write_leaves_no_file(tmp_path):
  from plumbing import tfrecord
  paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
  with pytest.raises(RuntimeError):
    with tfrecord.atomic_writers(paths) as writers:
      writers[0].write_batch(np.frombuffer(b"abc", np.uint8), np.array([0, 3]))
      raise RuntimeError("interrupted")
  assert os.listdir(tmp_path) == []
