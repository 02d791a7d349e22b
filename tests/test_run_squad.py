"""run_squad.py --do_predict against the original's output files.

tests/data/squad_reference/README.md says how each reference was made.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, shared_path

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


@pytest.mark.parametrize("name", sorted(RUNS))
def test_predict_reproduces_the_original(tmp_path, name):
  predict_file, v2, threshold, extra = RUNS[name]
  output_dir = tmp_path / "out"
  result = run_squad([
      "--do_predict", "--predict_file=" + shared_path(predict_file),
      "--vocab_file=" + shared_path(UNCASED), "--bert_config_file=" + CONFIG,
      "--init_checkpoint=" + squad_checkpoint(tmp_path), "--output_dir=%s" % output_dir,
      "--max_seq_length=128", "--doc_stride=64", "--max_query_length=24",
      "--predict_batch_size=8", "--version_2_with_negative=%s" % v2,
      "--null_score_diff_threshold=%s" % threshold] + extra)
  assert result.returncode == 0, result.stderr[-3000:]
  reference = data_file(REF + name)
  assert _load(output_dir / "predictions.json") == _load(os.path.join(reference, "predictions.json"))
  if os.path.exists(os.path.join(reference, "nbest_predictions.json")):
    _assert_same_nbest(_load(output_dir / "nbest_predictions.json"),
                       _load(os.path.join(reference, "nbest_predictions.json")))
  if os.path.exists(os.path.join(reference, "null_odds.json")):
    ours = _load(output_dir / "null_odds.json")
    theirs = _load(os.path.join(reference, "null_odds.json"))
    assert list(ours) == list(theirs)
    np.testing.assert_allclose(list(ours.values()), list(theirs.values()), rtol=0, atol=1e-5)
  scores = _load(output_dir / "squad_eval.json")
  assert {"exact", "f1", "total"} <= set(scores)
  if v2:
    assert {"HasAns_exact", "NoAns_exact", "best_f1", "best_f1_thresh"} <= set(scores)
