"""run_pretraining.py and the shared training loop: faithfulness, distribution,
resuming, NaN guard, bad input, and the original's eval results."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, kill_at_checkpoint
import modeling
from modeling import losses
from modeling import optimization
from modeling import pretraining
from modeling import training

RECORDS = data_file("pretraining_reference/sample_default.tfrecord")  # 23 records, seq 128
EVAL_REF = "eval_reference/"


def _tiny_config(tmp_path, dropout=0.0, name="config.json"):
  with open(data_file(EVAL_REF + "bert_config.json")) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
  path = tmp_path / name
  path.write_text(json.dumps(values))
  return str(path)


def _run(args, env=None, timeout=600):
  return subprocess.run([sys.executable, "run_pretraining.py"] + args, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout,
                        env=dict(os.environ, **(env or {})))


def _train_args(config, output_dir, steps, extra=()):
  return ["--input_file=" + RECORDS, "--output_dir=" + str(output_dir), "--do_train",
          "--bert_config_file=" + config, "--train_batch_size=8",
          "--num_train_steps=%d" % steps, "--num_warmup_steps=2", "--learning_rate=1e-3",
          "--save_checkpoints_steps=%d" % steps, "--iterations_per_loop=3"] + list(extra)


def _weights(config_path, checkpoint):
  model = modeling.BertPretrainer(modeling.BertConfig.from_json_file(config_path))
  modeling.load_checkpoint(model, checkpoint, log=False)
  return {n: v.numpy() for n, v in model.original_names().items()}


def _assert_same_weights(a, b, atol):
  assert a.keys() == b.keys()
  for name in a:
    np.testing.assert_allclose(a[name], b[name], rtol=0, atol=atol, err_msg=name)


def test_eval_alone_reproduces_original_eval_results(tmp_path):
  result = _run(["--input_file=" + RECORDS, "--output_dir=" + str(tmp_path), "--do_eval",
                 "--bert_config_file=" + data_file(EVAL_REF + "bert_config.json"),
                 "--init_checkpoint=" + data_file(EVAL_REF + "model.ckpt"),
                 "--eval_batch_size=8", "--max_eval_steps=5"])
  assert result.returncode == 0, result.stderr[-3000:]

  def parse(path):
    with open(path) as f:
      lines = f.read().splitlines()
    assert lines == sorted(lines)
    return dict(line.split(" = ") for line in lines)
  ours = parse(tmp_path / "eval_results.txt")
  theirs = parse(data_file(EVAL_REF + "eval_results.txt"))
  assert ours.keys() == theirs.keys() == {
      "global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
      "next_sentence_accuracy", "next_sentence_loss"}
  for key in theirs:
    assert abs(float(ours[key]) - float(theirs[key])) <= 1e-4, key


def test_training_loop_steps_match_original(tmp_path):
  """Losses and weights after 6 steps, vs the original model_fn pieces + optimizer."""
  ref = dict(np.load(data_file("modeling_reference/optimizer_steps.npz")))
  inputs = dict(np.load(data_file("modeling_reference/inputs.npz")))
  features = {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids",
                                     "masked_lm_positions", "masked_lm_ids",
                                     "masked_lm_weights", "next_sentence_labels")}
  with open(data_file("modeling_reference/bert_config.json")) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    model = modeling.BertPretrainer(modeling.BertConfig.from_dict(values))
    optimizer = optimization.create_optimizer(2e-3, 8, 3)
  dataset_fn = lambda batch, ctx: tf.data.Dataset.from_tensors(features).repeat()
  out_dir = str(tmp_path / "loop")  # Fresh: a left-over checkpoint would be resumed.
  settings = training.TrainingSettings(
      output_dir=out_dir, num_train_steps=6, train_batch_size=3, save_checkpoints_steps=6,
      iterations_per_loop=4, init_checkpoint=data_file("modeling_reference/model.ckpt"))
  result = training.train(strategy, model, losses.PretrainingLoss(), dataset_fn, settings,
                          optimizer=optimizer)
  assert result.step == 6
  for name, variable in model.original_names().items():
    np.testing.assert_allclose(variable.numpy(), ref["var/" + name], rtol=0, atol=1e-5,
                               err_msg=name)


def test_mirrored_two_cpus_equals_one_device(tmp_path):
  config = _tiny_config(tmp_path)
  init = "--init_checkpoint=" + data_file(EVAL_REF + "model.ckpt")
  for strategy in ("one_device", "mirrored"):
    result = _run(_train_args(config, tmp_path / strategy, 4, [
        init, "--distribution_strategy=" + strategy, "--num_cpu_devices=2"]))
    assert result.returncode == 0, result.stderr[-3000:]
  assert "MirroredStrategy with 2 replicas" in result.stderr
  _assert_same_weights(_weights(config, str(tmp_path / "one_device")),
                       _weights(config, str(tmp_path / "mirrored")), atol=1e-5)


def test_gradient_accumulation_gives_the_same_update(tmp_path):
  config = _tiny_config(tmp_path)
  init = "--init_checkpoint=" + data_file(EVAL_REF + "model.ckpt")
  for steps in (1, 4):
    result = _run(_train_args(config, tmp_path / str(steps), 3, [
        init, "--gradient_accumulation_steps=%d" % steps]))
    assert result.returncode == 0, result.stderr[-3000:]
  _assert_same_weights(_weights(config, str(tmp_path / "1")),
                       _weights(config, str(tmp_path / "4")), atol=1e-5)


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_multi_worker_mirrored_two_processes(tmp_path):
  config = _tiny_config(tmp_path)
  ports = [_free_port(), _free_port()]
  workers = ["127.0.0.1:%d" % p for p in ports]
  procs = []
  for index in range(2):
    env = dict(os.environ, TF_CONFIG=json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
    procs.append(subprocess.Popen(
        [sys.executable, "run_pretraining.py"] + _train_args(
            config, tmp_path / "out", 3, ["--distribution_strategy=multi_worker_mirrored"]),
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  outputs = [p.communicate(timeout=600)[0] for p in procs]
  assert [p.returncode for p in procs] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
  assert tf.train.latest_checkpoint(str(tmp_path / "out")).endswith("ckpt-3")
  assert not [n for n in os.listdir(tmp_path / "out") if n.startswith("worker_tmp")]


def test_tpu_request_without_tpu_fails_clearly(tmp_path):
  result = _run(_train_args(_tiny_config(tmp_path), tmp_path / "out", 2,
                            ["--use_tpu", "--tpu_name=local"]), timeout=300)
  assert result.returncode != 0
  assert "No TPU could be reached (--tpu_name='local'" in result.stderr


def test_killed_run_resumes_to_the_same_weights(tmp_path):
  config = _tiny_config(tmp_path, dropout=0.1)  # Dropout on: its RNG must resume too.
  args = lambda out: ["--input_file=" + RECORDS, "--output_dir=" + str(out), "--do_train",
                      "--bert_config_file=" + config, "--train_batch_size=4",
                      "--num_train_steps=24", "--num_warmup_steps=2", "--learning_rate=1e-3",
                      "--save_checkpoints_steps=6", "--iterations_per_loop=2"]
  assert _run(args(tmp_path / "straight")).returncode == 0
  killed = tmp_path / "killed"
  kill_at_checkpoint([sys.executable, "run_pretraining.py"] + args(killed),
                    killed, "ckpt-12")
  assert (killed / "ckpt-12.index").exists() and not (killed / "ckpt-24.index").exists()
  result = _run(args(killed))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Resuming from" in result.stderr
  _assert_same_weights(_weights(config, str(tmp_path / "straight")),
                       _weights(config, str(killed)), atol=1e-6)


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
  config = modeling.BertConfig.from_json_file(_tiny_config(tmp_path))
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    model = modeling.BertPretrainer(config)
    optimizer = optimization.create_optimizer(1e-3, 10, 1)
  inner = losses.PretrainingLoss()

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
  config = _tiny_config(tmp_path)
  result = _run(_train_args(config, tmp_path / "a", 2, ["--max_seq_length=64"]))
  assert result.returncode != 0 and "--max_seq_length=64" in result.stderr
  assert "input_ids of length 128" in result.stderr
  result = _run(_train_args(config, tmp_path / "b", 2) + ["--input_file=" + str(tmp_path / "none*")])
  assert result.returncode != 0 and "No file matches" in result.stderr
  result = _run(_train_args(config, tmp_path / "c", 2, [
      "--init_checkpoint=" + data_file("modeling_reference/model.ckpt")]))
  assert result.returncode != 0 and "has shape" in result.stderr
  assert not list((tmp_path / "c").glob("ckpt-*"))
  result = _run(["--input_file=" + RECORDS, "--output_dir=" + str(tmp_path / "d"),
                 "--bert_config_file=" + config])
  assert result.returncode != 0 and "do_train" in result.stderr


def test_loss_falls_on_a_tiny_model(tmp_path):
  """The original README's demo in small: a tiny model overfits sample data."""
  config = _tiny_config(tmp_path)
  out = tmp_path / "out"
  result = _run(["--input_file=" + RECORDS, "--output_dir=" + str(out), "--do_train",
                 "--do_eval", "--bert_config_file=" + config, "--train_batch_size=8",
                 "--num_train_steps=150", "--num_warmup_steps=10", "--learning_rate=1e-2",
                 "--save_checkpoints_steps=150", "--iterations_per_loop=50",
                 "--max_eval_steps=3", "--eval_batch_size=8"])
  assert result.returncode == 0, result.stderr[-3000:]
  losses = [float(line.split("loss = ")[1].split(",")[0])
            for line in result.stderr.splitlines() if "step " in line and "loss = " in line]
  assert len(losses) == 3 and losses[-1] < losses[0] - 1.0, losses
  with open(out / "eval_results.txt") as f:
    results = dict(line.split(" = ") for line in f.read().splitlines())
  assert results["global_step"] == "150"
  assert float(results["masked_lm_accuracy"]) > 0.2
  assert (out / "train").is_dir() and os.listdir(out / "train")  # TensorBoard summaries
