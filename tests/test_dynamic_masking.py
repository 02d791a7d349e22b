"""run_pretraining.py --dynamic_masking: records masked afresh as they are
read, by create_pretraining_data's rules."""

import json
import os
import subprocess
import sys

import numpy as np

from conftest import REPO_ROOT, data_file
from data_prep import tokenization
from data_prep.pretraining import dataset
from data_prep.pretraining import dynamic_masking
from pretraining_runs import tiny_config, train_args

VOCAB = data_file("vocab/bert_uncased_vocab.txt")
# Records of sample_text.txt: (file, max_seq_length, max_predictions_per_seq).
RECORDS = {False: (data_file("pretraining_reference/sample_default.tfrecord"), 128, 20),
           True: (data_file("pretraining_reference/sample_wwm.tfrecord"), 64, 10)}
MASK, CLS, SEP = 103, 101, 102


def stream(whole_word, count, masking=True, seed=3, skip=0):
  vocab = tokenization.load_vocab(VOCAB)
  path, seq, predictions = RECORDS[whole_word]
  masker = dynamic_masking.DynamicMasking(
      vocab, 0.15, predictions, whole_word, seed) if masking else None
  d = dataset.pretraining_dataset([path], seq, predictions, 1, is_training=True, seed=seed,
                                  masking=masker)
  rows = []
  for features in d.skip(skip).take(count):
    rows.append({k: v.numpy()[0] for k, v in features.items()})
  return rows


def original_ids(row):
  ids = row["input_ids"].copy()
  for p, i, w in zip(row["masked_lm_positions"], row["masked_lm_ids"], row["masked_lm_weights"]):
    if w:
      ids[p] = i
  return ids


def test_masks_follow_the_generators_rules_and_change_every_epoch():
  static = stream(False, 230, masking=False)
  fresh = stream(False, 230)
  kinds = {"mask": 0, "same": 0, "other": 0}
  for before, after in zip(static, fresh):
    tokens = original_ids(before)
    assert (original_ids(after) == tokens).all()  # The same record, its tokens intact.
    length = int(after["input_mask"].sum())
    count = int(after["masked_lm_weights"].sum())
    assert count == min(20, max(1, int(np.rint(length * 0.15))))
    positions = after["masked_lm_positions"][:count]
    assert (np.diff(positions) > 0).all() and (after["masked_lm_weights"][count:] == 0).all()
    assert all(0 < p < length and tokens[p] not in (CLS, SEP) for p in positions)
    assert (after["masked_lm_ids"][:count] == tokens[positions]).all()
    unmasked = np.setdiff1d(np.arange(len(tokens)), positions)
    assert (after["input_ids"][unmasked] == tokens[unmasked]).all()
    for p in positions:
      new = after["input_ids"][p]
      kinds["mask" if new == MASK else "same" if new == tokens[p] else "other"] += 1
  total = sum(kinds.values())
  assert total > 3000
  assert abs(kinds["mask"] / total - 0.8) < 0.03
  assert abs(kinds["same"] / total - 0.1) < 0.02 and abs(kinds["other"] / total - 0.1) < 0.02
  # Each of the 23 records comes back 10 times, masked differently each time.
  by_record = {}
  for row in fresh:
    by_record.setdefault(original_ids(row).tobytes(), set()).add(
        row["masked_lm_positions"].tobytes())
  assert len(by_record) == 23 and min(len(masks) for masks in by_record.values()) >= 8


def test_whole_word_masking_masks_every_piece_of_a_word():
  vocab = tokenization.load_vocab(VOCAB)
  continuation = np.zeros(max(vocab.values()) + 1, bool)
  continuation[[i for t, i in vocab.items() if t.startswith("##")]] = True
  pieces = 0
  for row in stream(True, 100):
    tokens = original_ids(row)
    count = int(row["masked_lm_weights"].sum())
    masked = set(row["masked_lm_positions"][:count].tolist())
    length = int(row["input_mask"].sum())
    for p in masked:  # A word's pieces are masked with it, before and after.
      # A piece that opens a segment (truncation can cut a word) stands
      # alone after [CLS]; after [SEP] it joins segment A's last word.
      if continuation[tokens[p]] and tokens[p - 1] not in (CLS, SEP):
        assert p - 1 in masked
        pieces += 1
      if p + 1 < length and continuation[tokens[p + 1]]:
        assert p + 1 in masked
  assert pieces > 20


def test_same_seed_same_masks_and_a_resumed_stream_continues_the_same():
  whole = stream(False, 40)
  assert all((a["input_ids"] == b["input_ids"]).all() for a, b in zip(whole, stream(False, 40)))
  resumed = stream(False, 15, skip=25)
  for a, b in zip(whole[25:], resumed):
    for key in a:
      assert (a[key] == b[key]).all(), key
  other_seed = stream(False, 40, seed=4)
  assert any((a["masked_lm_positions"] != b["masked_lm_positions"]).any()
             for a, b in zip(whole, other_seed))


# run_pretraining.py's main with its input pipeline's batches kept as the
# training loop takes them (in order; the first ones are the steps' batches).
_RECORDING_RUN = r"""
import json, sys
import numpy as np
repo, out_file = sys.argv[1:3]
sys.path[:0] = [repo, repo + "/tests"]
import tensorflow as tf
import run_pretraining
real = run_pretraining.pretraining_dataset.pretraining_dataset
batches = []

def recording(*args, **kwargs):
  def keep(*arrays):
    batches.append([a.numpy() for a in arrays])
    return 0
  def record(features):
    keys = sorted(features)
    with tf.control_dependencies([tf.py_function(keep, [features[k] for k in keys], tf.int32)]):
      return {k: tf.identity(v) for k, v in features.items()}
  return real(*args, **kwargs).map(record)

run_pretraining.pretraining_dataset.pretraining_dataset = recording
import cli_cases
(result,) = cli_cases.run_cases("run_pretraining.py", [json.loads(sys.argv[3])])
assert result["returncode"] == 0, result
keys = sorted(["input_ids", "input_mask", "segment_ids", "masked_lm_positions",
               "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"])
np.savez(out_file, **{"%d/%s" % (i, k): v for i, b in enumerate(batches) for k, v in zip(keys, b)})
"""


def _received(tmp_path, args):
  out_file = str(tmp_path / "received.npz")
  result = subprocess.run([sys.executable, "-c", _RECORDING_RUN, REPO_ROOT, out_file,
                           json.dumps(args)], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  saved = dict(np.load(out_file))
  rows = []
  for step in range(len({k.split("/")[0] for k in saved})):
    batch = {k.split("/")[1]: v for k, v in saved.items() if k.startswith("%d/" % step)}
    rows += [{k: v[i] for k, v in batch.items()} for i in range(len(batch["input_ids"]))]
  return rows


def test_run_pretraining_with_dynamic_masking(tmp_path):
  """What the model is given in a run of run_pretraining.py --dynamic_masking
  (batches of 8, 4 steps, over the 23 records): each row is one of the
  records with its own tokens back under the masks, masked by the rules, and
  a record that comes again comes masked differently."""
  config = tiny_config(tmp_path)
  received = _received(tmp_path, train_args(config, tmp_path / "out", 4, [
      "--dynamic_masking", "--vocab_file=" + VOCAB, "--do_whole_word_mask"]))[:32]
  assert len(received) == 32 and (tmp_path / "out" / "ckpt-4.index").exists()
  # Batches come cut to their longest row: rows are compared without padding.
  key = lambda ids: tuple(np.trim_zeros(ids, "b").tolist())
  masks = lambda row: tuple(row["masked_lm_positions"][:int(row["masked_lm_weights"].sum())])
  path, seq, predictions = RECORDS[False]
  records = {key(original_ids({k: v.numpy()[0] for k, v in features.items()})):
             {k: v.numpy()[0] for k, v in features.items()}
             for features in dataset.pretraining_dataset([path], seq, predictions, 1,
                                                         is_training=False, repeat=False)}
  assert len(records) == 23
  seen = {}
  for row in received:
    tokens = original_ids(row)
    assert key(tokens) in records  # One of the records, its tokens intact.
    count = int(row["masked_lm_weights"].sum())
    length = int(row["input_mask"].sum())
    assert count == min(20, max(1, int(np.rint(length * 0.15))))
    positions = row["masked_lm_positions"][:count]
    assert all(0 < p < length and tokens[p] not in (CLS, SEP) for p in positions)
    seen.setdefault(key(tokens), []).append(masks(row))
  # 32 rows of 23 records: at least 9 records came again, each time masked anew.
  repeated = [m for m in seen.values() if len(m) > 1]
  assert sum(len(m) - 1 for m in repeated) >= 9
  assert all(len(set(m)) == len(m) for m in repeated)
  assert all(masks(records[k]) not in m for k, m in seen.items())  # Not the records' masks.
