"""Multi-label classification (run_multi_label.py, tasks/multi_label.py):
its loss against the binary cross-entropy formula, its scores against
counts made by hand, and a run whose files, export and conversion back
agree with each other and with those formulas."""

import csv
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from classifier_runs import CONFIG, UNCASED
from conftest import assert_one_line_error, data_file, run_cli_cases
import modeling
from modeling import heads
from tasks import multi_label

LABELS = ("business", "politics", "sports")
WORDS = {"sports": ("goal", "match", "team"), "politics": ("vote", "election", "senate"),
         "business": ("market", "stock", "profit")}
FILLER = ("the", "a", "today", "after", "news", "people", "city", "report", "new")


def _bce(logits, labels):
  """Binary cross-entropy from logits, from its definition, per example:
  the mean over labels of -[y log s(x) + (1 - y) log(1 - s(x))]."""
  total = 0.0
  for x, y in zip(logits, labels):
    s = 1 / (1 + math.exp(-x))
    total += -(y * math.log(s) + (1 - y) * math.log(1 - s))
  return total / len(logits)


def test_the_loss_is_binary_cross_entropy():
  config = modeling.BertConfig.from_json_file(CONFIG)
  model = modeling.BertClassifier(config, 3, problem=heads.MULTI_LABEL)
  rng = np.random.RandomState(0)
  ids = rng.randint(5, config.vocab_size, (4, 9)).astype(np.int32)
  labels = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]], np.int32)
  out = model({"input_ids": ids, "label_ids": labels}, training=False)
  logits = out["logits"].numpy().astype(np.float64)
  want = [_bce(row, y) for row, y in zip(logits, labels)]
  np.testing.assert_allclose(out["per_example_loss"].numpy(), want, atol=1e-6)
  np.testing.assert_allclose(float(out["loss"]), np.mean(want), atol=1e-6)
  np.testing.assert_allclose(out["probabilities"].numpy(), 1 / (1 + np.exp(-logits)),
                             atol=1e-6)


def test_scores_against_counts_by_hand():
  gold = [[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 0]]
  predicted = [[1, 0, 0], [0, 0, 0], [1, 1, 0], [1, 1, 0]]
  # Label 0: TP 2, FP 1, FN 0 -> F1 4/5. Label 1: TP 2, FP 0, FN 0 -> 1.
  # Label 2: TP 0, FP 0, FN 1 -> 0. All: TP 4, FP 1, FN 1 -> 8/10.
  got = multi_label.scores(gold, predicted)
  assert got["micro_f1"] == pytest.approx(0.8)
  assert got["macro_f1"] == pytest.approx((0.8 + 1.0 + 0.0) / 3)
  assert got["exact_match"] == pytest.approx(0.5)  # Rows 2 and 3.
  # A label nobody has and nobody predicts counts 0 in the macro mean.
  assert multi_label.scores([[1, 0]], [[1, 0]])["macro_f1"] == pytest.approx(0.5)


def _texts(count, seed):
  """Sentences made of filler and topic words; their labels, the topics of
  the words they hold."""
  rng = np.random.RandomState(seed)
  rows = []
  for _ in range(count):
    topics = [t for t in LABELS if rng.rand() < 0.4]
    words = [str(w) for w in rng.choice(FILLER, 5)]
    words += [str(rng.choice(WORDS[t])) for t in topics]
    rng.shuffle(words)
    rows.append((" ".join(words), ";".join(topics)))
  return rows


def _write_csv(path, rows):
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["text", "topics"])
    writer.writerows(rows)
  return str(path)


def _read_tsv(path):
  with open(path, encoding="utf-8") as f:
    return [line.rstrip("\n").split("\t") for line in f]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  tmp = tmp_path_factory.mktemp("multi_label")
  dev = _texts(24, 1)
  paths = {"train": _write_csv(tmp / "train.csv", _texts(96, 0)),
           "dev": _write_csv(tmp / "dev.csv", dev)}
  output_dir, export_dir = tmp / "out", tmp / "export"
  (result,) = run_cli_cases("run_multi_label.py", [[
      "--do_train", "--do_eval", "--do_predict", "--train_file=" + paths["train"],
      "--dev_file=" + paths["dev"], "--test_file=" + paths["dev"], "--label_column=topics",
      "--vocab_file=" + data_file(UNCASED), "--bert_config_file=" + CONFIG,
      "--init_checkpoint=" + data_file("eval_reference/model.ckpt"), "--max_seq_length=24",
      "--train_batch_size=8", "--num_train_epochs=8", "--learning_rate=2e-3",
      "--threshold=0.4", "--output_dir=%s" % output_dir, "--export_dir=%s" % export_dir]])
  assert result.returncode == 0, result.stderr[-3000:]
  return tmp, dev, output_dir, export_dir


def test_a_run_scores_its_own_predictions_as_the_formulas_do(run):
  _, dev, output_dir, _ = run
  with open(output_dir / "labels.txt", encoding="utf-8") as f:
    assert tuple(f.read().split()) == LABELS
  probabilities = np.array(_read_tsv(output_dir / "test_results.tsv"), np.float64)
  gold = np.array([[int(label in topics.split(";")) for label in LABELS]
                   for _, topics in dev])
  chosen = probabilities >= 0.4
  predictions = _read_tsv(output_dir / "test_predictions.tsv")
  assert predictions[0] == ["index", "labels"]
  for i, (row, on) in enumerate(zip(predictions[1:], chosen)):
    assert row == [str(i), ";".join(l for l, c in zip(LABELS, on) if c)]
  results = dict(line.split(" = ") for line in
                 (output_dir / "eval_results.txt").read_text().splitlines())
  tp = (gold & chosen).sum(0)
  fp = (~gold.astype(bool) & chosen).sum(0)
  fn = (gold.astype(bool) & ~chosen).sum(0)
  per_label = [2 * t / (2 * t + p + n) if t + p + n else 0.0 for t, p, n in zip(tp, fp, fn)]
  assert float(results["eval_micro_f1"]) == pytest.approx(
      2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()), abs=1e-6)
  assert float(results["eval_macro_f1"]) == pytest.approx(np.mean(per_label), abs=1e-6)
  assert float(results["eval_exact_match"]) == pytest.approx(
      np.mean((gold == chosen).all(1)), abs=1e-6)
  bce = -(gold * np.log(probabilities) + (1 - gold) * np.log(1 - probabilities)).mean(1)
  assert float(results["eval_loss"]) == pytest.approx(bce.mean(), abs=1e-4)
  assert float(results["eval_micro_f1"]) > 0.5  # The topic words are learnt.


def test_the_export_answers_as_the_run_predicted(run):
  import tensorflow_text  # noqa: F401 pylint: disable=g-import-not-at-top,unused-import
  _, dev, output_dir, export_dir = run
  serve = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
  answer = serve(text_a=tf.constant([text for text, _ in dev]))
  probabilities = np.array(_read_tsv(output_dir / "test_results.tsv"), np.float64)
  np.testing.assert_allclose(answer["probabilities"].numpy(), probabilities, atol=1e-5)
  predicted = [row[1] for row in _read_tsv(output_dir / "test_predictions.tsv")[1:]]
  assert [v.decode() for v in answer["labels"].numpy()] == predicted


def test_converted_back_as_a_multi_label_sequence_classifier(run, tmp_path):
  _, _, output_dir, _ = run
  (result,) = run_cli_cases("convert_checkpoint.py", [[
      "--input_checkpoint=%s" % output_dir, "--output_format=huggingface",
      "--output_checkpoint=%s" % (tmp_path / "hf"), "--bert_config_file=" + CONFIG,
      "--vocab_file=" + data_file(UNCASED)]])
  assert result.returncode == 0, result.stderr[-3000:]
  with open(tmp_path / "hf" / "config.json", encoding="utf-8") as f:
    config = json.load(f)
  assert config["architectures"] == ["BertForSequenceClassification"]
  assert config["problem_type"] == "multi_label_classification"
  assert config["id2label"] == {str(i): label for i, label in enumerate(LABELS)}


def test_an_unseen_label_is_one_line_naming_file_and_line(tmp_path):
  train = _write_csv(tmp_path / "train.csv", [("a goal", "sports"), ("a vote", "politics")])
  dev = _write_csv(tmp_path / "dev.csv", [("a stock", "business;sports")])
  (result,) = run_cli_cases("run_multi_label.py", [[
      "--do_train", "--do_eval", "--train_file=" + train, "--dev_file=" + dev,
      "--label_column=topics", "--vocab_file=" + data_file(UNCASED),
      "--bert_config_file=" + CONFIG, "--output_dir=%s" % (tmp_path / "out")]])
  assert_one_line_error(result, "run_multi_label.py", dev + ":2", "'business'")
  assert not os.path.exists(tmp_path / "out")
