"""run_classifier.py against outputs of the original run_classifier.py.

tests/data/classifier_reference/README.md says how each reference was made.
"""

import hashlib
import json
import os
import re
import signal
import sys

import numpy as np
import pytest
import tensorflow as tf

from classifier_runs import CONFIG, NUM_LABELS, REF, UNCASED, run_classifier, task_checkpoint
from conftest import (assert_three_steps_match, assert_trained_between, data_file,
                      kill_at_checkpoint, read_eval_results, shared_path)
from data_prep import tokenization
import modeling
from modeling import losses
from plumbing import tf_example
from tasks.classification import features as classifier_features
from tasks.classification import glue
from tasks import metrics


_parse_results = read_eval_results


def _features_digest(path):
  """sha256 of the records' features as JSON (see the reference README)."""
  rows = []
  for raw in tf.data.TFRecordDataset(path):
    example = tf.train.Example.FromString(raw.numpy())
    rows.append({k: list(v.int64_list.value) for k, v in example.features.feature.items()})
  return hashlib.sha256(json.dumps(rows, sort_keys=True).encode("utf-8")).hexdigest()


REFERENCE_RUNS = {  # reference dir -> (task, max_seq_length, batch size)
    "MRPC": ("mrpc", 128, 8),
    "CoLA": ("cola", 128, 8),
    "MNLI": ("mnli", 128, 8),
    "MRPC_seq32": ("mrpc", 32, 8),
    "MRPC_batch7": ("mrpc", 128, 7),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_RUNS) + ["MRPC_batch7+fixed_length"])
def test_eval_and_predict_reproduce_the_original(tmp_path, name):
  """By default batches of similar length, each cut to its longest row;
  +fixed_length runs every batch at max_seq_length, as the original."""
  name, _, variant = name.partition("+")
  task, max_seq_length, batch_size = REFERENCE_RUNS[name]
  with open(data_file(REF + name + "/records.json")) as f:
    reference = json.load(f)
  output_dir = tmp_path / "out"
  result = run_classifier([
      "--task_name=" + task, "--do_eval", "--do_predict",
      "--data_dir=" + shared_path(reference["data_dir"]),
      "--vocab_file=" + data_file(UNCASED), "--bert_config_file=" + CONFIG,
      "--init_checkpoint=" + task_checkpoint(tmp_path, task),
      "--max_seq_length=%d" % max_seq_length, "--eval_batch_size=%d" % batch_size,
      "--predict_batch_size=%d" % batch_size, "--output_dir=%s" % output_dir,
      "--pad_to_max_seq_length=%s" % (variant == "fixed_length")])
  assert result.returncode == 0, result.stderr[-3000:]
  if variant != "fixed_length":
    assert "in batches of similar length" in result.stderr

  ours = _parse_results(output_dir / "eval_results.txt")
  theirs = _parse_results(data_file(REF + name + "/eval_results.txt"))
  extra = {"mrpc": {"eval_f1"}, "cola": {"eval_mcc"}, "mnli": set()}[task]
  assert set(ours) == set(theirs) | extra
  assert ours["global_step"] == theirs["global_step"] == "0"
  for key in ("eval_accuracy", "eval_loss", "loss"):
    assert abs(float(ours[key]) - float(theirs[key])) <= 1e-5, (key, ours[key], theirs[key])

  got = np.loadtxt(output_dir / "test_results.tsv", delimiter="\t", ndmin=2)
  want = np.loadtxt(data_file(REF + name + "/test_results.tsv"), delimiter="\t", ndmin=2)
  assert got.shape == want.shape == (reference["files"]["predict.tf_record"]["examples"],
                                     NUM_LABELS[task])
  np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)

  for record_file, expected in reference["files"].items():
    path = str(output_dir / record_file)
    assert sum(1 for _ in tf.data.TFRecordDataset(path)) == expected["records"]
    assert _features_digest(path) == expected["sha256_features_json"], record_file
    assert os.path.getsize(path) == expected["file_bytes"]


def _examples_digest(examples):
  rows = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
  return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()


with open(data_file(REF + "examples.json"), encoding="utf-8") as _f:
  EXAMPLE_SETS = json.load(_f)["sets"]


@pytest.mark.parametrize("entry", EXAMPLE_SETS,
                         ids=["%s-%s-%s" % (e["task_name"], e["data_dir"].split()[0], e["split"])
                              for e in EXAMPLE_SETS])
def test_processors_return_the_original_examples(entry):
  """Every set the original's processors read (examples.json): XNLI from
  this repository, the GLUE files from ../shared/data (skipped without it)."""
  if entry["task_name"] == "xnli":
    processor = glue.XnliProcessor()
    data_dir = data_file(REF + "xnli_data")
  else:
    processor = glue.get_processor(entry["task_name"])
    data_dir = shared_path(entry["data_dir"])
  examples = getattr(processor, "get_%s_examples" % entry["split"])(data_dir)
  assert len(examples) == entry["count"], entry
  if "examples" in entry:
    assert [[e.guid, e.text_a, e.text_b, e.label] for e in examples] == entry["examples"]
  assert _examples_digest(examples) == entry["sha256"], entry


@pytest.mark.parametrize("trimmed", [False, True])
def test_three_training_steps_match_the_original(tmp_path, trimmed):
  """Classifier loss + the original optimizer, step for step (no dropout);
  `trimmed`: each batch cut to its longest row, as training runs by default."""
  reference = dict(np.load(data_file(REF + "train_steps.npz")))
  with open(CONFIG) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model = modeling.BertClassifier(modeling.BertConfig.from_dict(values), num_labels=2)
  model.classifier.dropout.rate = 0.0  # The reference ran create_model(is_training=False).
  modeling.load_checkpoint(model, task_checkpoint(tmp_path, "mrpc"), log=False)

  tokenizer = tokenization.FullTokenizer(data_file(UNCASED), do_lower_case=True)
  examples = glue.MrpcProcessor().get_dev_examples(
      shared_path("checks/classifier/MRPC"))[:24]
  features = classifier_features.convert_examples_to_features(examples, ["0", "1"], 128, tokenizer)
  arrays = [np.array([getattr(f, k) for f in features], np.int32)
            for k in ("input_ids", "input_mask", "segment_ids", "label_id")]
  digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays))
  assert digest.hexdigest() == str(reference["inputs_sha256"])

  batches = [{k: tf.constant(a[8 * step:8 * step + 8]) for k, a in zip(
      ("input_ids", "input_mask", "segment_ids", "label_ids"), arrays)} for step in range(3)]
  if trimmed:
    batches = [tf_example.trim_padding(b, 8) for b in batches]
    assert max(b["input_ids"].shape[1] for b in batches) < 128
  assert_three_steps_match(model, losses.ModelLoss(model), batches, reference)


def test_glue_metrics_on_hand_computed_cases():
  labels = np.array([1, 1, 1, 0, 0, 0, 1, 0])
  predictions = np.array([1, 0, 1, 0, 1, 0, 1, 0])
  # tp 3, fn 1, fp 1, tn 3: precision = recall = 0.75.
  assert metrics.f1_score(labels, predictions) == pytest.approx(0.75)
  assert metrics.matthews_correlation(labels, predictions) == pytest.approx(0.5)
  assert metrics.matthews_correlation(labels, np.ones(8)) == 0.0
  assert metrics.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
  # Ranks with a tie: x -> [1, 2.5, 2.5, 4], y -> [1, 2, 3, 4].
  assert metrics.spearman([1, 5, 5, 9], [0, 1, 2, 3]) == pytest.approx(
      np.corrcoef([1, 2.5, 2.5, 4], [1, 2, 3, 4])[0, 1])
  # A regressor's scores as a [n, 1] column (as Hugging Face returns them):
  # deviations [-1.5, -.5, .5, 1.5] and [-1.5, .5, -.5, 1.5] give 4 / 5.
  column = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
  results = metrics.eval_metrics((column, np.zeros(4), np.ones(4)), [1.0, 3.0, 2.0, 4.0],
                                 batch_size=4, is_regression=True)
  assert results["eval_pearson"] == pytest.approx(0.8)
  assert results["eval_spearman"] == pytest.approx(0.8)
  with pytest.raises(ValueError, match="Correlating 4 scores with 3"):
    metrics.pearson(column, [1.0, 2.0, 3.0])
  # The batch-mean `loss` of the original's Estimator skips padding rows.
  per_example = np.array([1.0, 3.0, 2.0, 0.0], np.float32)
  assert metrics.batch_mean_loss(per_example, np.array([1, 1, 1, 0]), 2) == 2.0


def test_killed_or_terminated_fine_tuning_resumes_to_the_same_results(tmp_path):
  """A run killed (SIGKILL) after a checkpoint, or stopped by SIGTERM (which
  saves the step it stopped at, says so in one line and exits with 143), and
  run again ends as an uninterrupted one (weights, dropout state and input
  position are all restored)."""
  source = shared_path("checks/classifier/MRPC/dev.tsv")
  data = tmp_path / "data"
  data.mkdir()
  with open(source, encoding="utf-8") as f:
    lines = f.readlines()[:97]
  (data / "train.tsv").write_text("".join(lines), encoding="utf-8")
  (data / "dev.tsv").write_text("".join(lines[:41]), encoding="utf-8")

  def args(output_dir):  # 96 examples, batch 8, 3 epochs: 36 steps, checkpoints every 6.
    return ["--task_name=MRPC", "--do_train", "--do_eval", "--data_dir=%s" % data,
            "--vocab_file=" + data_file(UNCASED), "--bert_config_file=" + CONFIG,
            "--init_checkpoint=" + data_file("eval_reference/model.ckpt"),
            "--max_seq_length=32", "--train_batch_size=8", "--num_train_epochs=3",
            "--learning_rate=1e-3", "--save_checkpoints_steps=6",
            "--iterations_per_loop=2", "--keep_checkpoint_max=0", "--output_dir=%s" % output_dir]

  straight = tmp_path / "straight"
  result = run_classifier(args(straight))
  assert result.returncode == 0, result.stderr[-3000:]
  first = _parse_results(straight / "eval_results.txt")
  assert first["global_step"] == "36"

  killed = tmp_path / "killed"
  kill_at_checkpoint([sys.executable, "run_classifier.py"] + args(killed), killed, "ckpt-6")
  assert (killed / "ckpt-6.index").exists() and not (killed / "ckpt-12.index").exists()

  terminated = tmp_path / "terminated"
  status, stderr = kill_at_checkpoint([sys.executable, "run_classifier.py"] + args(terminated),
                                      terminated, "ckpt-6", sig=signal.SIGTERM)
  assert status == 143, stderr[-3000:]
  last_line = stderr.strip().splitlines()[-1]
  assert re.fullmatch(r"run_classifier\.py: stopped: SIGTERM at step \d+ of 36; saved .*ckpt-\d+\. "
                      r"Run the same command again to continue from there\.", last_line), last_line
  stopped_at = int(tf.train.latest_checkpoint(str(terminated)).rsplit("-", 1)[1])
  assert 6 <= stopped_at < 36 and "step %d of 36" % stopped_at in last_line
  assert not (terminated / "eval_results.txt").exists()

  for interrupted, checkpoint in ((killed, "ckpt-6"), (terminated, "ckpt-%d" % stopped_at)):
    result = run_classifier(args(interrupted))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resuming from" in result.stderr
    assert_trained_between(str(interrupted / checkpoint), str(interrupted))  # To the last step.
    second = _parse_results(interrupted / "eval_results.txt")
    assert second["global_step"] == "36"
    for key in first:
      assert abs(float(first[key]) - float(second[key])) <= 1e-6, (interrupted, key)
