"""run_classifier.py runs on the original's classifier references: the
task checkpoints they start from and the command; what the classifier,
export and long-text tests share."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

from conftest import REPO_ROOT, data_file

REF = "classifier_reference/"
CONFIG = data_file("eval_reference/bert_config.json")
UNCASED = "vocab/bert_uncased_vocab.txt"
NUM_LABELS = {"mrpc": 2, "cola": 2, "mnli": 3}


def task_checkpoint(directory, task):
  """The reference's init_checkpoint: the eval_reference encoder plus the
  task's classifier from heads.npz, under the original's names."""
  prefix = os.path.join(str(directory), "%s_init" % task, "model.ckpt")
  if os.path.exists(prefix + ".index"):
    return prefix
  reader = tf.train.load_checkpoint(data_file("eval_reference/model.ckpt"))
  tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()
             if n.startswith("bert/")}
  heads = np.load(data_file(REF + "heads.npz"))
  tensors["output_weights"] = heads[task + "/output_weights"]
  tensors["output_bias"] = heads[task + "/output_bias"]
  os.makedirs(os.path.dirname(prefix), exist_ok=True)
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(tensors[n]) for n in names])
  return prefix


def run_classifier(args, timeout=600):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.run([sys.executable, "run_classifier.py"] + args, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=timeout, env=env)
