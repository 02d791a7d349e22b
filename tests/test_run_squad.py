"""run_squad.py --do_predict against the original's output files.

tests/data/squad_reference/README.md says how each reference was made.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import (REPO_ROOT, assert_three_steps_match, assert_trained_between, data_file,
                      kill_at_checkpoint, shared_path)
from tasks.squad import evaluate as squad_evaluate

REF = "squad_reference/"
CONFIG = data_file("eval_reference/bert_config.json")
UNCASED = "vocab/bert_uncased_vocab.txt"

RUNS = {  # reference dir -> (predict file, v2, threshold, extra flags)
    "v1.1": ("checks/squad/v1.1/input_predict.json", False, 0.0, []),
    "v2.0": ("checks/squad/v2.0/input_predict.json", True, 0.0, []),
    "v2.0_thresh_m7": ("checks/squad/v2.0/input_predict.json", True, -7.0, []),
    "v1.1_nbest8_len2": ("checks/squad/v1.1/input_predict.json", False, 0.0,
                         ["--n_best_size=8", "--max_answer_length=2"]),
}


def squad_checkpoint(directory):
  """The reference's init_checkpoint: the eval_reference encoder plus the
  SQuAD head of heads.npz, under the original's names."""
  prefix = os.path.join(str(directory), "squad_init", "model.ckpt")
  reader = tf.train.load_checkpoint(data_file("eval_reference/model.ckpt"))
  tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
             if n.startswith("bert/")}
  tensors.update(dict(np.load(data_file(REF + "heads.npz"))))
  os.makedirs(os.path.dirname(prefix), exist_ok=True)
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[n]) for n in names])
  return prefix


def run_squad(args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable, "run_squad.py"] + args, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=600, env=env)


def _load(path):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _assert_same_nbest(ours, theirs):
  assert list(ours) == list(theirs)
  for qas_id in theirs:
    assert [e["text"] for e in ours[qas_id]] == [e["text"] for e in theirs[qas_id]], qas_id
    for key in ("probability", "start_logit", "end_logit"):
      np.testing.assert_allclose([e[key] for e in ours[qas_id]],
                                 [e[key] for e in theirs[qas_id]], rtol=0, atol=1e-5,
                                 err_msg="%s %s" % (qas_id, key))


# Runs that also export a SavedModel, whose raw-text answers must be the
# original's predictions too.
EXPORTED = ("v1.1", "v2.0_thresh_m7")


def _assert_export_answers_as_the_original(export_dir, predict_file, reference, v2):
  import tensorflow_text  # noqa: F401  (the tokenizer's ops)
  from serving import export
  assert export.xla_functions(str(export_dir)) == []
  with open(predict_file, encoding="utf-8") as f:
    data = json.load(f)["data"]
  qas = [(q["id"], q["question"], p["context"])
         for a in data for p in a["paragraphs"] for q in p["qas"]]
  serve = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
  out = serve(question=tf.constant([q for _, q, _ in qas]),
              context=tf.constant([c for _, _, c in qas]))
  predictions = _load(os.path.join(reference, "predictions.json"))
  assert [a.decode("utf-8") for a in out["answer"].numpy()] == [
      predictions[i] for i, _, _ in qas]
  if v2:
    # A threshold changes no null odds: its reference keeps only predictions.
    null_odds = _load(data_file(REF + "v2.0/null_odds.json"))
    np.testing.assert_allclose(out["null_odds"].numpy(), [null_odds[i] for i, _, _ in qas],
                               rtol=0, atol=1e-5)
  else:
    nbest = _load(os.path.join(reference, "nbest_predictions.json"))
    for key in ("start_logit", "end_logit"):
      np.testing.assert_allclose(out[key].numpy(), [nbest[i][0][key] for i, _, _ in qas],
                                 rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_predict_reproduces_the_original(tmp_path, name):
  predict_file, v2, threshold, extra = RUNS[name]
  output_dir = tmp_path / "out"
  if name in EXPORTED:
    extra = extra + ["--export_dir=%s" % (tmp_path / "export")]
  result = run_squad([
      "--do_predict", "--predict_file=" + shared_path(predict_file),
      "--vocab_file=" + data_file(UNCASED), "--bert_config_file=" + CONFIG,
      "--init_checkpoint=" + squad_checkpoint(tmp_path), "--output_dir=%s" % output_dir,
      "--max_seq_length=128", "--doc_stride=64", "--max_query_length=24",
      "--predict_batch_size=8", "--version_2_with_negative=%s" % v2,
      "--null_score_diff_threshold=%s" % threshold] + extra)
  assert result.returncode == 0, result.stderr[-3000:]
  reference = data_file(REF + name)
  # What the original wrote for each run (squad_reference/README.md).
  expected = {"predictions.json", "nbest_predictions.json"} | ({"null_odds.json"} if v2 else set())
  if name == "v2.0_thresh_m7":
    expected = {"predictions.json"}  # Only the answers change with the threshold.
  assert set(os.listdir(reference)) >= expected, sorted(os.listdir(reference))
  theirs = _load(os.path.join(reference, "predictions.json"))
  assert _load(output_dir / "predictions.json") == theirs
  if "nbest_predictions.json" in expected:
    _assert_same_nbest(_load(output_dir / "nbest_predictions.json"),
                       _load(os.path.join(reference, "nbest_predictions.json")))
  if "null_odds.json" in expected:
    ours = _load(output_dir / "null_odds.json")
    their_odds = _load(os.path.join(reference, "null_odds.json"))
    assert list(ours) == list(their_odds)
    np.testing.assert_allclose(list(ours.values()), list(their_odds.values()), rtol=0, atol=1e-5)
  # The scores are SQuAD's metric (tested against the official scripts in
  # test_squad_data.py) of the original's predictions, which ours equal.
  with open(shared_path(predict_file), encoding="utf-8") as f:
    dataset = json.load(f)
  null_odds = _load(output_dir / "null_odds.json") if v2 else None
  assert _load(output_dir / "squad_eval.json") == pytest.approx(
      squad_evaluate.evaluate(dataset, theirs, na_probs=null_odds))
  if name in EXPORTED:
    _assert_export_answers_as_the_original(tmp_path / "export", shared_path(predict_file),
                                           reference, v2)


def test_three_training_steps_match_the_original(tmp_path):
  """The original's model_fn in TRAIN mode (its span loss and optimizer),
  step for step on its first 24 training features (dropout off)."""
  from data_prep import tokenization
  import modeling
  from modeling import losses
  from tasks.squad import examples as squad_examples
  from tasks.squad import features as squad_features
  reference = dict(np.load(data_file(REF + "train_steps.npz")))
  with open(CONFIG) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  model = modeling.BertSpanPredictor(modeling.BertConfig.from_dict(values))
  modeling.load_checkpoint(model, squad_checkpoint(tmp_path), log=False)

  tokenizer = tokenization.FullTokenizer(data_file(UNCASED), do_lower_case=True)
  examples = squad_examples.read_squad_examples(
      shared_path("checks/squad/v1.1/input_train_format.json"), is_training=True)
  features = []
  squad_features.convert_examples_to_features(examples, tokenizer, 128, 64, 24, True,
                                              features.append)
  names = ("input_ids", "input_mask", "segment_ids", "start_positions", "end_positions")
  arrays = [np.array([getattr(f, k) for f in features[:24]], np.int32) for k in (
      "input_ids", "input_mask", "segment_ids", "start_position", "end_position")]
  digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays))
  assert digest.hexdigest() == str(reference["inputs_sha256"])

  batches = [{k: tf.constant(a[8 * step:8 * step + 8]) for k, a in zip(names, arrays)}
             for step in range(3)]
  assert_three_steps_match(model, losses.ModelLoss(model), batches, reference)


def test_killed_training_resumes_to_the_same_predictions(tmp_path):
  """Killed after its first checkpoint and run again, training ends where an
  uninterrupted run ends: the same predictions and logits."""
  def args(output_dir):  # 26 questions, batch 8, 4 epochs: 13 steps.
    return ["--do_train", "--do_predict", "--vocab_file=" + data_file(UNCASED),
            "--train_file=" + shared_path("checks/squad/v1.1/input_train_format.json"),
            "--predict_file=" + shared_path("checks/squad/v1.1/input_predict.json"),
            "--bert_config_file=" + CONFIG, "--init_checkpoint=" + squad_checkpoint(tmp_path),
            "--max_seq_length=64", "--doc_stride=32", "--max_query_length=16",
            "--train_batch_size=8", "--num_train_epochs=4", "--learning_rate=1e-3",
            "--save_checkpoints_steps=6", "--iterations_per_loop=2",
            "--output_dir=%s" % output_dir]

  straight = tmp_path / "straight"
  result = run_squad(args(straight))
  assert result.returncode == 0, result.stderr[-3000:]
  killed = tmp_path / "killed"
  kill_at_checkpoint([sys.executable, "run_squad.py"] + args(killed), killed, "ckpt-6")
  assert (killed / "ckpt-6.index").exists() and not (killed / "ckpt-12.index").exists()
  assert not (killed / "predictions.json").exists()
  result = run_squad(args(killed))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Resuming from" in result.stderr
  assert_trained_between(str(killed / "ckpt-6"), str(killed))  # To the last step.
  assert _load(killed / "predictions.json") == _load(straight / "predictions.json")
  first = _load(straight / "nbest_predictions.json")
  second = _load(killed / "nbest_predictions.json")
  for qas_id in first:
    np.testing.assert_allclose([e["start_logit"] for e in second[qas_id]],
                               [e["start_logit"] for e in first[qas_id]], rtol=0, atol=1e-6)
