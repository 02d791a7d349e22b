"""run_pretraining.py and the shared training loop: faithfulness, distribution,
resuming, NaN guard, bad input, and the original's eval results."""

import json
import os
import re
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import (REPO_ROOT, data_file, guessing_baselines, kill_at_checkpoint,
                      read_eval_results, run_cli_cases)
import modeling
from modeling import losses
from modeling import optimization
from modeling import training
from plumbing.errors import Stopped
from plumbing.errors import UserError
from pretraining_runs import (EVAL_REF, MIRRORED_REFERENCE_RUN, MULTI_WORKER_REFERENCE_RUN, RECORDS,
                              assert_reference_trajectory, assert_same_weights, reference_run,
                              run_pretraining, tiny_config, train_args, weights)

def test_eval_alone_reproduces_original_eval_results(tmp_path):
  result = run_pretraining(["--input_file=" + RECORDS, "--output_dir=" + str(tmp_path), "--do_eval",
                 "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
                 "--init_checkpoint=" + data_file(EVAL_REF + "model.ckpt"),
                 "--eval_batch_size=8", "--max_eval_steps=5"])
  assert result.returncode == 0, result.stderr[-3000:]

  ours = read_eval_results(tmp_path / "eval_results.txt")
  theirs = read_eval_results(data_file(EVAL_REF + "eval_results.txt"))
  assert ours.keys() == theirs.keys() == {
      "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
      "next_sentence_accuracy", "next_sentence_loss"}
  for key in theirs:
    assert abs(float(ours[key]) - float(theirs[key])) <= 1e-4, key


@pytest.mark.parametrize("strategy, accumulation", [("one_device", 1), ("one_device", 3)])
def test_training_loop_steps_match_original(tmp_path, strategy, accumulation):
  """The driver's six steps equal the original model_fn pieces + optimizer,
  also when each batch is split into 3 micro-batches."""
  assert_reference_trajectory(reference_run(strategy, accumulation, str(tmp_path / "loop")))


def test_stopped_and_resumed_run_matches_original(tmp_path):
  """Stopped after 3 steps, a new model and optimizer resume from the
  checkpoint alone (no init_checkpoint: weights, Adam slots and step all
  come from it) and end on the original's trajectory."""
  out_dir = str(tmp_path / "loop")
  halfway = reference_run("one_device", 1, out_dir, save_every=3, stop_after=3)
  assert int(halfway["step"]) == 3
  assert tf.train.latest_checkpoint(out_dir).endswith("ckpt-3")
  assert_reference_trajectory(reference_run("one_device", 1, out_dir, save_every=3, init=None))


def test_sigterm_saves_the_step_it_stopped_at_and_the_rerun_matches_original(tmp_path):
  """SIGTERM arriving while one compiled call runs all 6 steps stops the run
  after the step in progress, with a checkpoint at that step (not at a
  save_checkpoints_steps boundary); the same call again ends on the
  original's trajectory."""
  out_dir = str(tmp_path / "loop")
  with pytest.raises(Stopped, match="SIGTERM at step"):
    reference_run("one_device", 1, out_dir, iterations_per_loop=6, sigterm_at_batch=2)
  stopped_at = int(tf.train.latest_checkpoint(out_dir).rsplit("-", 1)[1])
  assert 0 < stopped_at < 6  # Inside the loop of 6, which saves only at its end.
  assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # Handler restored.
  assert_reference_trajectory(reference_run("one_device", 1, out_dir, init=None,
                                             iterations_per_loop=6))


_HOLD_LOCK = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from plumbing.run_directory import lock as run_lock
with run_lock.hold(sys.argv[2]):
  print("held", flush=True)
  time.sleep(600)
"""


def test_a_live_runs_output_dir_refuses_a_second_run_and_a_dead_runs_does_not(tmp_path):
  """While a process trains into a directory, another training run there
  stops with one line naming the holder, before writing anything; once the
  holder dies (SIGKILL: no clean-up), the directory is free again."""
  out_dir = tmp_path / "loop"
  out_dir.mkdir()
  holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, REPO_ROOT, str(out_dir)],
                            stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(UserError, match=r"in use by another training run \(\{\"pid\": %d"
                       % holder.pid):
      reference_run("one_device", 1, str(out_dir))
    result = run_pretraining(train_args(tiny_config(tmp_path), out_dir, 3))
    assert result.returncode == 1
    assert re.fullmatch(r"run_pretraining\.py: error: --output_dir=\S+ is in use by another "
                        r"training run .*", result.stderr.strip().splitlines()[-1])
    assert tf.train.latest_checkpoint(str(out_dir)) is None
  finally:
    holder.kill()
    holder.wait()
  assert_reference_trajectory(reference_run("one_device", 1, str(out_dir)))


def test_mirrored_three_cpus_matches_original(tmp_path):
  """Three replicas, one example each: the original's one-device steps."""
  result_file = str(tmp_path / "result.npz")
  result = subprocess.run(
      [sys.executable, "-c", MIRRORED_REFERENCE_RUN, REPO_ROOT, str(tmp_path / "loop"),
       result_file], capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  ours = dict(np.load(result_file))
  assert int(ours["replicas"]) == 3
  assert_reference_trajectory(ours)


def test_mirrored_and_accumulated_run_equals_one_device(tmp_path):
  """The scripts' flags reach the driver: two replicas (logical CPUs) with 2
  micro-batches each train the weights one device trains."""
  config = tiny_config(tmp_path)
  init = data_file(EVAL_REF + "model.ckpt")
  runs = {"one_device": [], "mirrored": ["--num_cpu_devices=2",
                                         "--gradient_accumulation_steps=2"]}
  for strategy, extra in runs.items():
    result = run_pretraining(train_args(config, tmp_path / strategy, 4, [
        "--init_checkpoint=" + init, "--distribution_strategy=" + strategy] + extra))
    assert result.returncode == 0, result.stderr[-3000:]
  assert "MirroredStrategy with 2 replicas" in result.stderr
  one_device = weights(config, str(tmp_path / "one_device"))
  assert_same_weights(one_device, weights(config, str(tmp_path / "mirrored")), atol=1e-5)
  _assert_moved(one_device, weights(config, init))


def _assert_moved(trained, start):
  """Most weight matrices changed: training ran."""
  changed = [n for n in trained if np.abs(trained[n] - start[n]).max() > 1e-4]
  assert len(changed) > len(trained) // 2, len(changed)


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_multi_worker_mirrored_two_processes(tmp_path):
  config = tiny_config(tmp_path)
  ports = [_free_port(), _free_port()]
  workers = ["127.0.0.1:%d" % p for p in ports]
  procs = []
  for index in range(2):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
    procs.append(subprocess.Popen(
        [sys.executable, "run_pretraining.py"] + train_args(
            config, tmp_path / "out", 3, ["--distribution_strategy=multi_worker_mirrored"]),
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  outputs = [p.communicate(timeout=600)[0] for p in procs]
  assert [p.returncode for p in procs] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path / "out")).endswith("ckpt-3")
  assert not [n for n in os.listdir(tmp_path / "out") if n.startswith("worker_tmp")]


def test_two_workers_train_the_weights_one_device_trains(tmp_path):
  """MultiWorkerMirroredStrategy over two processes, each reading half of a
  batch of four, against one device reading the whole batch: the same
  weights after six steps (within 1e-5), and weights that moved."""
  ports = [_free_port(), _free_port()]
  workers = ["127.0.0.1:%d" % p for p in ports]
  procs = []
  for index in range(2):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_CONFIG=json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
    procs.append(subprocess.Popen(
        [sys.executable, "-c", MULTI_WORKER_REFERENCE_RUN, REPO_ROOT, str(tmp_path / "loop"),
         str(tmp_path / ("worker%d.npz" % index))],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  outputs = [p.communicate(timeout=600)[0] for p in procs]
  assert [p.returncode for p in procs] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
  one_device = reference_run("one_device", 1, str(tmp_path / "one"), rows=(0, 1, 2, 0))
  start = tf.train.load_checkpoint(data_file("modeling_reference/model.ckpt"))
  for index in range(2):
    worker = dict(np.load(tmp_path / ("worker%d.npz" % index)))
    assert int(worker["replicas"]) == 2 and int(worker["step"]) == 6
    assert worker.keys() == one_device.keys()
    moved = 0
    for key, value in one_device.items():
      if key.startswith("var/"):
        np.testing.assert_allclose(worker[key], value, rtol=0, atol=1e-5, err_msg=key)
        moved += np.abs(value - start.get_tensor(key[4:])).max() > 1e-3
    assert moved > 20


def test_killed_run_resumes_to_the_same_weights(tmp_path):
  config = tiny_config(tmp_path, dropout=0.1)  # Dropout on: its RNG must resume too.
  args = lambda out: ["--input_file=" + RECORDS, "--output_dir=" + str(out), "--do_train",
                      "--bert_config_file=" + config, "--train_batch_size=4",
                      "--num_train_steps=24", "--num_warmup_steps=2", "--learning_rate=1e-3",
                      "--save_checkpoints_steps=6", "--iterations_per_loop=2"]
  assert run_pretraining(args(tmp_path / "straight")).returncode == 0
  killed = tmp_path / "killed"
  kill_at_checkpoint([sys.executable, "run_pretraining.py"] + args(killed),
                    killed, "ckpt-12")
  assert (killed / "ckpt-12.index").exists() and not (killed / "ckpt-24.index").exists()
  at_kill = weights(config, str(killed / "ckpt-12"))
  result = run_pretraining(args(killed))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Resuming from" in result.stderr
  resumed = weights(config, str(killed))
  assert_same_weights(weights(config, str(tmp_path / "straight")), resumed, atol=1e-6)
  _assert_moved(resumed, at_kill)  # The resumed run trained steps 13-24.


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
  config = modeling.BertConfig.from_json_file(tiny_config(tmp_path))
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    model = modeling.BertPretrainer(config)
    optimizer = optimization.create_optimizer(1e-3, 10, 1)
  inner = losses.ModelLoss(model)

  class PoisonedLoss(object):
    totals = inner.totals

    def __call__(self, model, features, totals):
      # NaN from the 5th step on; a constant, so the gradients stay finite.
      return inner(model, features, totals) + tf.where(optimizer.iterations >= 4, np.nan, 0.0)

  def dataset_fn(batch, ctx):
    from data_prep.pretraining import dataset as pretraining_dataset
    return pretraining_dataset.pretraining_dataset([RECORDS], 128, 20, batch, is_training=True)
  with pytest.raises(training.NonFiniteLossError, match="last good checkpoint is .*ckpt-4"):
    settings = training.TrainingSettings(
        output_dir=str(tmp_path), num_train_steps=10, train_batch_size=4,
        save_checkpoints_steps=2, iterations_per_loop=2)
    training.train(strategy, model, PoisonedLoss(), dataset_fn, settings, optimizer=optimizer)
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-4")


def test_bad_inputs_fail_before_training(tmp_path):
  """One line each, before any step: records that do not fit the flags, no
  input, a checkpoint of another shape, nothing to do, no TPU, dynamic
  masking without its vocabulary, a left-to-right objective on a model that
  sees both sides."""
  config = tiny_config(tmp_path)
  results = run_cli_cases("run_pretraining.py", [
      train_args(config, tmp_path / "a", 2, ["--max_seq_length=64"]),
      train_args(config, tmp_path / "b", 2) + ["--input_file=" + str(tmp_path / "none*")],
      train_args(config, tmp_path / "c", 2, [
          "--init_checkpoint=" + data_file("modeling_reference/model.ckpt")]),
      ["--input_file=" + RECORDS, "--output_dir=" + str(tmp_path / "d"),
       "--bert_config_file=" + config],
      train_args(config, tmp_path / "e", 2, ["--use_tpu", "--tpu_name=local"]),
      train_args(config, tmp_path / "f", 2, ["--dynamic_masking"]),
      train_args(config, tmp_path / "g", 2, ["--pretraining_objective=ltr"])])
  expected = [("--max_seq_length=64", "input_ids of length 128"), ("No file matches",),
              ("has shape",), ("do_train",), ("No TPU could be reached (--tpu_name='local'",),
              ("--dynamic_masking needs --vocab_file: the vocabulary of the records.",),
              ("causal_attention",)]
  assert len(results) == len(expected)
  for result, fragments in zip(results, expected):
    errors = [l for l in result.stderr.splitlines() if l.startswith("run_pretraining.py: error:")]
    assert result.returncode == 1 and len(errors) == 1, result.stderr[-3000:]
    assert all(f in errors[0] for f in fragments), errors[0]
  assert not list((tmp_path / "c").glob("ckpt-*"))


def test_loss_falls_on_a_tiny_model(tmp_path):
  """The original README's demo in small: a tiny model overfits sample data."""
  config = tiny_config(tmp_path)
  out = tmp_path / "out"
  result = run_pretraining(["--input_file=" + RECORDS, "--output_dir=" + str(out), "--do_train",
                 "--do_eval", "--bert_config_file=" + config, "--train_batch_size=8",
                 "--num_train_steps=150", "--num_warmup_steps=10", "--learning_rate=1e-2",
                 "--save_checkpoints_steps=150", "--iterations_per_loop=50",
                 "--max_eval_steps=3", "--eval_batch_size=8"])
  assert result.returncode == 0, result.stderr[-3000:]
  losses = [float(line.split("loss = ")[1].split(",")[0])
            for line in result.stderr.splitlines() if "step " in line and "loss = " in line]
  # 150 steps of batch 8 over 23 records: the model memorises them. Ignoring
  # context it could reach the masked labels' entropy (+ ln 2 for the next
  # sentence) at best, and score the commonest label's share.
  majority, entropy = guessing_baselines(RECORDS, 128, 20)
  assert len(losses) == 3 and losses[0] > losses[1] > losses[2], losses
  assert losses[-1] < (entropy + np.log(2)) / 5, (losses, entropy)
  results = read_eval_results(out / "eval_results.txt")
  assert results["global_step"] == "150"
  assert float(results["masked_lm_accuracy"]) > max(0.9, 10 * majority), (results, majority)
  assert float(results["next_sentence_accuracy"]) > 0.9
  assert (out / "train").is_dir() and os.listdir(out / "train")  # TensorBoard summaries
