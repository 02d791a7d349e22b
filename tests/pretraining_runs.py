"""Runs of run_pretraining.py and of the shared training loop on the
original's reference batch, with the checks against the original's
trajectory: what the pre-training, dynamic-masking and fault tests share."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf

from conftest import PRETRAINING_FEATURES, REPO_ROOT, data_file, reference_config
import modeling
from modeling import losses
from modeling import optimization
from modeling import strategy as strategy_lib
from modeling import training

RECORDS = data_file("pretraining_reference/sample_default.tfrecord")  # 23 records, seq 128
EVAL_REF = "eval_reference/"


def tiny_config(tmp_path, dropout=0.0, name="config.json"):
  with open(data_file(EVAL_REF + "bert_config.json")) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
  path = tmp_path / name
  path.write_text(json.dumps(values))
  return str(path)


def run_pretraining(args, env=None, timeout=600):
  return subprocess.run([sys.executable, "run_pretraining.py"] + args, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout,
                        env=dict(os.environ, **(env or {})))


def train_args(config, output_dir, steps, extra=()):
  return ["--input_file=" + RECORDS, "--output_dir=" + str(output_dir), "--do_train",
          "--bert_config_file=" + config, "--train_batch_size=8",
          "--num_train_steps=%d" % steps, "--num_warmup_steps=2", "--learning_rate=1e-3",
          "--save_checkpoints_steps=%d" % steps, "--iterations_per_loop=3"] + list(extra)


def weights(config_path, checkpoint):
  model = modeling.BertPretrainer(modeling.BertConfig.from_json_file(config_path))
  modeling.load_checkpoint(model, checkpoint, log=False)
  return {n: v.numpy() for n, v in model.original_names().items()}


def assert_same_weights(a, b, atol):
  assert a.keys() == b.keys()
  for name in a:
    np.testing.assert_allclose(a[name], b[name], rtol=0, atol=atol, err_msg=name)


def reference_run(strategy_name, accumulation, out_dir, save_every=6, stop_after=None,
                  init=data_file("modeling_reference/model.ckpt"), iterations_per_loop=4,
                  sigterm_at_batch=None, rows=(0, 1, 2)):
  """Six steps of the training driver on the original's reference batch of 3,
  from its checkpoint, with its optimizer (8 steps, 3 of warm-up); returns
  the final step, replica count and weights (by original name). A run
  stopped early (`stop_after` steps) resumes from `out_dir` when called again.
  `rows`: the batch, as indices into the 3 examples (a worker of several
  reads every n-th of them, so the workers' batches together are this one).
  `sigterm_at_batch`: the input pipeline sends this process SIGTERM as it
  reads that batch, as a preemptible machine's shutdown would."""
  inputs = dict(np.load(data_file("modeling_reference/inputs.npz")))
  features = {k: inputs[k][list(rows)] for k in PRETRAINING_FEATURES}
  strategy = strategy_lib.create_strategy(strategy_name)
  with strategy.scope():
    model = modeling.BertPretrainer(reference_config(hidden_dropout_prob=0.0,
                                                     attention_probs_dropout_prob=0.0))
    optimizer = optimization.create_optimizer(2e-3, 8, 3)
  # Per-replica batches of the 3 examples in order: each step sees all three.
  def dataset_fn(batch, context):
    dataset = tf.data.Dataset.from_tensor_slices(features).shard(
        context.num_input_pipelines, context.input_pipeline_id).repeat().batch(batch)
    if sigterm_at_batch is None:
      return dataset

    def send_sigterm(index):
      if int(index) == sigterm_at_batch:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # The batch comes late: the request is seen before more steps run.
      return index

    def read(index, batch):
      with tf.control_dependencies([tf.py_function(send_sigterm, [index], tf.int64)]):
        return tf.nest.map_structure(tf.identity, batch)
    return dataset.enumerate().map(read)
  settings = training.TrainingSettings(
      output_dir=out_dir, num_train_steps=6, train_batch_size=len(rows),
      save_checkpoints_steps=save_every,
      iterations_per_loop=iterations_per_loop, gradient_accumulation_steps=accumulation,
      init_checkpoint=init)
  result = training.train(strategy, model, losses.ModelLoss(model), dataset_fn, settings,
                          optimizer=optimizer, stop_after_steps=stop_after)
  return dict(step=result.step, replicas=strategy.num_replicas_in_sync,
              **{"var/" + n: v.numpy() for n, v in model.original_names().items()})


# reference_run under MirroredStrategy over three logical CPUs, which must be
# made before TensorFlow starts running: in a process of its own.
MIRRORED_REFERENCE_RUN = r"""
import sys
import numpy as np
repo, out_dir, result_file = sys.argv[1:4]
sys.path[:0] = [repo, repo + "/tests"]
from modeling import strategy as strategy_lib
strategy_lib.split_cpu(3)
from pretraining_runs import reference_run
np.savez(result_file, **reference_run("mirrored", 1, out_dir))
"""


# reference_run as one of two workers under MultiWorkerMirroredStrategy
# (TF_CONFIG in the environment names the worker), on a batch of four.
MULTI_WORKER_REFERENCE_RUN = r"""
import sys
import numpy as np
repo, out_dir, result_file = sys.argv[1:4]
sys.path[:0] = [repo, repo + "/tests"]
from pretraining_runs import reference_run
np.savez(result_file, **reference_run("multi_worker_mirrored", 1, out_dir, rows=(0, 1, 2, 0)))
"""


def assert_reference_trajectory(ours):
  """Weights after six steps equal the original's (optimizer_steps.npz), and
  moved away from the checkpoint they started from."""
  ref = dict(np.load(data_file("modeling_reference/optimizer_steps.npz")))
  assert int(ours["step"]) == 6
  start = tf.train.load_checkpoint(data_file("modeling_reference/model.ckpt"))
  moved = 0
  for key, value in ref.items():
    if key.startswith("var/"):
      np.testing.assert_allclose(ours[key], value, rtol=0, atol=1e-5, err_msg=key)
      moved += np.abs(ours[key] - start.get_tensor(key[4:])).max() > 1e-3
  assert moved > 20  # Training changed the weights (not a run that did nothing).
