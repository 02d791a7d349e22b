"""The original google-research/bert code, loaded from a checkout for the
reference makers. Nothing of it is in this repository: every maker takes
--original_dir (a checkout) and runs in an environment with TensorFlow and
tf_keras (`python bench/environments.py --peers=original` makes one:
bench/output/envs/original/bin/python).

The original is TF1 code: its scripts are copied to a temporary directory
with `import tensorflow as tf` made `tensorflow.compat.v1`, and
`tf.contrib.layers.layer_norm`, which TF2 lacks, replaced by the same
computation (moments, batch_normalization, epsilon 1e-12; variables
LayerNorm/beta and LayerNorm/gamma).
"""

import ast
import os
import shutil
import sys
import tempfile

SCRIPTS = ("tokenization.py", "modeling.py", "optimization.py", "create_pretraining_data.py",
           "run_classifier.py", "run_squad.py", "run_pretraining.py", "extract_features.py")


def code_dir(checkout):
  """A temporary copy of the original's scripts, importable under TF2."""
  if not os.path.exists(os.path.join(checkout, "modeling.py")):
    sys.exit("--original_dir=%s is not a google-research/bert checkout." % checkout)
  target = tempfile.mkdtemp(prefix="bert_original_")
  for name in SCRIPTS:
    with open(os.path.join(checkout, name), encoding="utf-8") as f:
      text = f.read()
    with open(os.path.join(target, name), "w", encoding="utf-8") as f:
      f.write(text.replace("import tensorflow as tf\n", "import tensorflow.compat.v1 as tf\n"))
  return target


def load(checkout):
  """(tf.compat.v1, the original's tokenization, modeling and optimization
  modules, the code directory), in graph mode."""
  os.environ["TF_USE_LEGACY_KERAS"] = "1"  # The original's tf.layers need tf_keras.
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  tf.disable_v2_behavior()
  directory = code_dir(checkout)
  sys.path.insert(0, directory)
  import modeling  # pylint: disable=g-import-not-at-top
  import optimization  # pylint: disable=g-import-not-at-top
  import tokenization  # pylint: disable=g-import-not-at-top

  def layer_norm(x, name=None):
    with tf.variable_scope(name, default_name="LayerNorm"):
      beta = tf.get_variable("beta", [x.shape[-1]], initializer=tf.zeros_initializer())
      gamma = tf.get_variable("gamma", [x.shape[-1]], initializer=tf.ones_initializer())
      mean, variance = tf.nn.moments(x, [-1], keep_dims=True)
      return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12)
  modeling.layer_norm = layer_norm
  return tf, tokenization, modeling, optimization, directory


def functions(checkout, script, names, namespace):
  """The top-level functions and classes `names` of one of the original's
  scripts, defined in `namespace` (importing the script itself would define
  its flags and need tf.estimator, which TF2 lacks)."""
  path = os.path.join(checkout, script)
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  body = [n for n in tree.body
          if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
  missing = set(names) - {n.name for n in body}
  if missing:
    raise ValueError("%s has no %s" % (script, ", ".join(sorted(missing))))
  exec(compile(ast.Module(body, []), path, "exec"), namespace)  # pylint: disable=exec-used
  return namespace


def cleanup(directory):
  shutil.rmtree(directory, ignore_errors=True)
