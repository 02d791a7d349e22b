"""run_swag.py end to end on SWAG-format files made here: a tiny model learns a
task whose right ending can be told from the wrong ones, and bad input stops
with one line."""

import json
import os
import random
import subprocess
import sys

import numpy as np

from conftest import REPO_ROOT, assert_one_line_error, data_file, read_eval_results, run_cli_cases

HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"
CONTEXTS = ["The man walks into the room.", "A woman sits on the bench.",
            "The children play in the yard.", "Someone opens the old door.",
            "The dog runs along the beach.", "A boy climbs the tall tree."]
RIGHT = ["happy", "bright", "warm", "kind", "calm"]  # The right ending's word...
WRONG = ["sad", "dark", "cold", "cruel", "angry"]    # ...and the wrong ones'.


def _swag_file(path, count, seed, with_label=True):
  """`count` examples: the right ending says "the <RIGHT word> one", the
  three others "the <WRONG word> one"; returns the labels."""
  rng = random.Random(seed)
  labels = []
  lines = [HEADER if with_label else HEADER[:-len(",label")]]
  for i in range(count):
    label = rng.randrange(4)
    endings = ["is the %s one." % rng.choice(WRONG) for _ in range(4)]
    endings[label] = "is the %s one." % rng.choice(RIGHT)
    context = rng.choice(CONTEXTS)
    row = [str(i), "video%d" % i, str(1000 + i), context + " He", context, "He", "gold"]
    row += endings + ([str(label)] if with_label else [])
    lines.append(",".join(row))
    labels.append(label)
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return labels


def _tiny_config(directory):
  path = directory / "bert_config.json"
  path.write_text(json.dumps({
      "vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 1,
      "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "gelu",
      "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
      "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}))
  return str(path)


def run_swag(args, timeout=600):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable, "run_swag.py"] + args, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout, env=env)


def _flags(data_dir, output_dir, config):
  return ["--data_dir=%s" % data_dir, "--output_dir=%s" % output_dir,
          "--vocab_file=" + data_file("vocab/bert_uncased_vocab.txt"),
          "--bert_config_file=" + config, "--max_seq_length=24"]


def test_tiny_model_learns_a_recoverable_task(tmp_path):
  data = tmp_path / "data"
  data.mkdir()
  _swag_file(data / "train.csv", 480, seed=1)
  _swag_file(data / "val.csv", 96, seed=2)
  test_labels = _swag_file(data / "test.csv", 20, seed=3, with_label=False)
  out = tmp_path / "out"
  result = run_swag(_flags(data, out, _tiny_config(tmp_path)) + [
      "--do_train", "--do_eval", "--do_predict", "--train_batch_size=16",
      "--learning_rate=2e-3", "--num_train_epochs=2", "--eval_batch_size=10",
      "--export_dir=%s" % (tmp_path / "export")])
  assert result.returncode == 0, result.stderr[-3000:]
  results = read_eval_results(out / "eval_results.txt")
  assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
  assert results["global_step"] == "60"  # 480 / 16 * 2
  assert float(results["eval_accuracy"]) > 0.9  # Chance is 0.25.
  with open(out / "predictions.tsv") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  assert rows[0] == ["id", "prediction"] + ["probability%d" % i for i in range(4)]
  assert [r[0] for r in rows[1:]] == [str(1000 + i) for i in range(20)]
  probabilities = np.array([[float(p) for p in r[2:]] for r in rows[1:]])
  np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
  predictions = [int(r[1]) for r in rows[1:]]
  assert predictions == list(np.argmax(probabilities, axis=1))
  assert np.mean(np.array(predictions) == np.array(test_labels)) > 0.9
  _check_export(tmp_path / "export", data / "test.csv", probabilities)


def _check_export(export_dir, test_csv, probabilities):
  """The SavedModel, from raw text, answers as --do_predict did, without XLA."""
  import tensorflow as tf
  import tensorflow_text  # pylint: disable=unused-import  (registers its ops)
  from serving import export
  from tasks import swag
  assert export.xla_functions(str(export_dir)) == []
  examples = swag.read_swag_examples(str(test_csv), has_label=False)
  serve = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
  outputs = serve(context=tf.constant([e.context for e in examples]),
                  start=tf.constant([e.start_ending for e in examples]),
                  endings=tf.constant([list(e.endings) for e in examples]))
  np.testing.assert_allclose(outputs["probabilities"].numpy(), probabilities, atol=1e-5)
  chosen = outputs["prediction"].numpy()
  np.testing.assert_array_equal(chosen, np.argmax(probabilities, axis=1))
  assert [t.decode() for t in outputs["ending"].numpy()] == [
      e.endings[i] for e, i in zip(examples, chosen)]


_BAD_ROWS = [
    ("0,v,1,s,a,b,g,e0,e1,e2,e3,7", "val.csv:3: label '7' is not an ending index (0-3)"),
    ("0,v,1,s,a,b,g,e0,e1,,e3,1", "val.csv:3: ending2 is empty"),
]


def test_bad_input_is_one_line_and_no_output(tmp_path):
  cases = []
  for n, (bad_row, _) in enumerate(_BAD_ROWS):
    data = tmp_path / ("data%d" % n)
    data.mkdir()
    _swag_file(data / "val.csv", 1, seed=4)
    with open(data / "val.csv", "a", encoding="utf-8") as f:
      f.write(bad_row + "\n")
    cases.append(_flags(data, tmp_path / ("out%d" % n), _tiny_config(tmp_path)) + ["--do_eval"])
  results = run_cli_cases("run_swag.py", cases)
  assert len(results) == len(_BAD_ROWS)
  for n, (result, (_, message)) in enumerate(zip(results, _BAD_ROWS)):
    assert_one_line_error(result, "run_swag.py", message)
    assert not (tmp_path / ("out%d" % n) / "eval_results.txt").exists()
