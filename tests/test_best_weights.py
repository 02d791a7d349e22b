"""Which of a run's weights a later command reads (modeling/checkpoints/best.py):
best/ when its evaluations reach the latest checkpoint, else the latest;
--weights picks another; each choice named in one log line."""

import json
import logging

import numpy as np
import pytest
import tensorflow as tf

from conftest import read_eval_results, run_cli_cases
from modeling.checkpoints import best
from modeling.checkpoints import loading
from plumbing.errors import UserError
from test_fine_tuning_protocol import CONFIG, tiny_mrpc_args, write_mrpc


class _Model(tf.Module):

  def __init__(self, value):
    super().__init__()
    self.w = tf.Variable(float(value))


def _run_directory(path, latest_steps=(20, 75), best_step=10, evaluated=(10, 20, 50)):
  """A run's directory: checkpoints whose weight is their step, and best/
  holding step `best_step`'s, evaluated at the steps `evaluated`."""
  step = tf.Variable(0, dtype=tf.int64)
  model = _Model(0)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model, step=step), str(path),
                                       max_to_keep=None, checkpoint_name="ckpt")
  for number in latest_steps:
    model.w.assign(float(number))
    step.assign(number)
    manager.save(checkpoint_number=number)
  (path / "best").mkdir()
  tf.train.Checkpoint(model=_Model(best_step)).write(str(path / "best" / ("ckpt-%d" % best_step)))
  history = {str(s): 0.9 if s == best_step else 0.5 for s in evaluated}
  (path / "best" / "history.json").write_text(json.dumps(
      {"metric": "eval_f1", "best_step": best_step, "stopped_at": None, "history": history}))
  return path


def _loaded(directory, weights=None):
  model = _Model(-1)
  step = loading.load_for_inference(model, str(directory), weights=weights)
  return float(model.w.numpy()), step


def test_best_is_read_when_its_evaluations_reach_the_latest_checkpoint(tmp_path, caplog):
  run = _run_directory(tmp_path, evaluated=(10, 20, 50, 75))
  with caplog.at_level(logging.INFO, logger="absl"):
    assert _loaded(run) == (10.0, 10)
  [line] = [r.getMessage() for r in caplog.records if "Reading the weights" in r.getMessage()]
  assert str(run / "best" / "ckpt-10") in line
  assert "the best on dev (eval_f1 = 0.900000 at step 10)" in line
  assert "the latest checkpoint, step 75, is read with --weights=latest" in line
  caplog.clear()
  with caplog.at_level(logging.INFO, logger="absl"):
    assert _loaded(run, "latest") == (75.0, 75)
  assert "best/ holds the best on dev" in caplog.text
  assert _loaded(run, "best") == (10.0, 10)
  assert _loaded(run, str(run / "ckpt-20")) == (20.0, 20)


def test_best_of_an_earlier_stretch_of_training_is_passed_over_with_a_line(tmp_path, caplog):
  run = _run_directory(tmp_path, evaluated=(10, 20, 50))  # Trained on to 75 without evaluating.
  with caplog.at_level(logging.INFO, logger="absl"):
    assert _loaded(run) == (75.0, 75)
  assert "best/ was passed over: its evaluations end at step 50" in caplog.text
  with pytest.raises(UserError, match="best/ holds evaluations up to step 50 only"):
    _loaded(run, "best")


def test_a_run_without_best_reads_its_latest_and_a_choice_needs_a_directory(tmp_path):
  step = tf.Variable(7, dtype=tf.int64)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=_Model(7), step=step), str(tmp_path),
                             max_to_keep=1, checkpoint_name="ckpt").save(checkpoint_number=7)
  assert _loaded(tmp_path) == (7.0, 7)
  with pytest.raises(UserError, match="no best/history.json"):
    _loaded(tmp_path, "best")
  with pytest.raises(UserError, match="is one checkpoint already"):
    best.choose(str(tmp_path / "ckpt-7"), "latest")
  with pytest.raises(FileNotFoundError):
    best.choose(str(tmp_path / "empty_dir_that_is_not_there"))


def test_later_commands_on_a_run_read_its_best_weights(tmp_path):
  data = tmp_path / "data"
  write_mrpc(data)
  out = tmp_path / "out"
  common = tiny_mrpc_args(data) + ["--train_batch_size=8", "--learning_rate=1e-3",
                                   "--output_dir=%s" % out]
  trained, later, latest = run_cli_cases("run_classifier.py", [
      common + ["--do_train", "--do_eval", "--num_train_epochs=3", "--eval_every_steps=2",
                "--save_checkpoints_steps=6"],
      common + ["--do_eval"],
      common + ["--do_eval", "--weights=latest"],
  ])
  for result in (trained, later, latest):
    assert result.returncode == 0, result.stderr[-3000:]
  state = json.loads((out / "best" / "history.json").read_text())
  step = state["best_step"]
  assert step < 18  # Else best and latest are the same weights: nothing is tested.
  assert "Reading the weights of %s: the best on dev" % (out / "best" / ("ckpt-%d" % step)) in (
      later.stderr)
  (out / "eval_results.txt").rename(tmp_path / "latest_results.txt")
  assert read_eval_results(tmp_path / "latest_results.txt")["global_step"] == "18"
  assert "Reading the weights of %s: the latest checkpoint (step 18)" % (out / "ckpt-18") in (
      latest.stderr)

  # The later command's results are the best step's, as the training command's were.
  run_cli_cases("run_classifier.py", [common + ["--do_eval"]])
  results = read_eval_results(out / "eval_results.txt")
  assert results["global_step"] == str(step)
  assert abs(float(results["eval_f1"]) - state["history"][str(step)]) <= 1e-6

  # Converting the run's directory converts its best weights.
  converted = tmp_path / "converted"
  from_dir, from_best = run_cli_cases("convert_checkpoint.py", [
      ["--input_checkpoint=%s" % out, "--output_checkpoint=%s" % (converted / "dir" / "m.ckpt"),
       "--output_format=original", "--bert_config_file=" + CONFIG],
      ["--input_checkpoint=%s" % (out / "best" / ("ckpt-%d" % step)),
       "--output_checkpoint=%s" % (converted / "best" / "m.ckpt"), "--output_format=original",
       "--bert_config_file=" + CONFIG],
  ])
  assert from_dir.returncode == 0 and from_best.returncode == 0, from_dir.stderr[-3000:]
  one = tf.train.load_checkpoint(str(converted / "dir" / "m.ckpt"))
  other = tf.train.load_checkpoint(str(converted / "best" / "m.ckpt"))
  names = one.get_variable_to_shape_map()
  assert "output_weights" in names
  for name in names:
    np.testing.assert_array_equal(one.get_tensor(name), other.get_tensor(name))
