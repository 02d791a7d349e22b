"""Remakes tests/data/extract_features_reference/{default,layers_0_2}/output.jsonl
with the original google-research/bert extract_features.py.

Inputs (read from the committed folders): the folder's bert_config.json,
input.txt and layers.npz, ../eval_reference/model.ckpt and the uncased
vocabulary (tests/data/vocab/bert_uncased_vocab.txt, the same file as
../shared/data/vocab/bert_uncased_vocab.txt). The 4-layer init_checkpoint is
assembled from eval_reference's embeddings, layer 0 and pooler and the
layers 1-3 of layers.npz, and written by tf.compat.v1.train.Saver to a
temporary directory. With --remake_layers, layers.npz itself is drawn again
the seeded way the README describes and written to --output_dir (and, with
--check, compared too).

The original extract_features `main` runs once per output directory, with
the flags of RUNS parsed by absl as `tf.app.run` would. Its `tf` is the
proxy of make_eval_reference.py, whose stand-in TPUEstimator.predict does
in a tf.compat.v1 Session what `TPUEstimator(use_tpu=False).predict` does;
reading input.txt, the features, the model and the JSON writing are the
original's code.

Usage, from the repository root, in an environment with TensorFlow and
tf_keras (see original.py):

  TF_CPP_MIN_LOG_LEVEL=2 bench/output/envs/original/bin/python \
      tests/reference_makers/make_extract_features_reference.py \
      --original_dir=/path/to/bert [--output_dir=DIR] [--check] [--remake_layers]
"""

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_eval_reference  # pylint: disable=g-import-not-at-top,wrong-import-position
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
COMMITTED = os.path.join(DATA, "extract_features_reference")
ENCODER_CHECKPOINT = os.path.join(DATA, "eval_reference", "model.ckpt")
VOCAB = os.path.join(DATA, "vocab", "bert_uncased_vocab.txt")
OUTPUT = "output.jsonl"

# Output directory -> the run's own flags (the others are common, see
# flags_of_the_run). do_lower_case is True by default anyway.
RUNS = {
    "default": ["--layers=-1,-2,-3,-4", "--max_seq_length=24", "--batch_size=4",
                "--do_lower_case=True"],
    "layers_0_2": ["--layers=0,2", "--max_seq_length=16", "--batch_size=5"],
}

# The layers of layers.npz (README: "Model and checkpoint"), in drawing order.
DRAWN_LAYERS = (1, 2, 3)
LAYER_SHAPES = (  # suffix, shape (hidden 16, intermediate 32)
    ("attention/output/LayerNorm/beta", [16]),
    ("attention/output/LayerNorm/gamma", [16]),
    ("attention/output/dense/bias", [16]),
    ("attention/output/dense/kernel", [16, 16]),
    ("attention/self/key/bias", [16]),
    ("attention/self/key/kernel", [16, 16]),
    ("attention/self/query/bias", [16]),
    ("attention/self/query/kernel", [16, 16]),
    ("attention/self/value/bias", [16]),
    ("attention/self/value/kernel", [16, 16]),
    ("intermediate/dense/bias", [32]),
    ("intermediate/dense/kernel", [16, 32]),
    ("output/LayerNorm/beta", [16]),
    ("output/LayerNorm/gamma", [16]),
    ("output/dense/bias", [16]),
    ("output/dense/kernel", [32, 16]),
)
LAYERS_SEED = 7
# The tensors of the encoder checkpoint the 4-layer model takes unchanged.
KEPT_PREFIXES = ("bert/embeddings/", "bert/encoder/layer_0/", "bert/pooler/")

# Fallback when a file is not byte-identical: structure and tokens must be
# equal and each printed value within this of the committed one. The values
# are float32 rounded to 6 decimals; a kernel that sums in another order (on
# another processor or thread count) moves a value of a few units by a few
# float32 ulps (~1e-6), which with the rounding can change the printed number
# by up to about two units of the 6th decimal. On the machine the reference
# was made on the files come out identical.
VALUE_ATOL = 3e-6

# These outputs were made with TensorFlow's oneDNN custom ops off. With them
# on (TensorFlow's default on x86) the float32 results move by an ulp or so
# and about 15% of the printed values change in the 6th decimal, so the
# setting is pinned before TensorFlow loads.
ONEDNN_OPTS = "0"


def draw_layers():
  """layers.npz drawn again: one RandomState(7), layer 1 first and, within a
  layer, the suffixes in LAYER_SHAPES order; kernels and biases normal with
  scale 0.02, gammas 1 + 0.1 * standard normal, betas 0.1 * standard normal."""
  rs = np.random.RandomState(LAYERS_SEED)
  layers = {}
  for layer in DRAWN_LAYERS:
    for suffix, shape in LAYER_SHAPES:
      if suffix.endswith("/gamma"):
        value = 1 + 0.1 * rs.normal(0, 1, shape)
      elif suffix.endswith("/beta"):
        value = 0.1 * rs.normal(0, 1, shape)
      else:
        value = rs.normal(0, 0.02, shape)
      layers["bert/encoder/layer_%d/%s" % (layer, suffix)] = value.astype(np.float32)
  return layers


def write_checkpoint(tf, layers, prefix):
  """The 4-layer init_checkpoint: 23 encoder tensors + the 48 of `layers`,
  nothing else (no global step), written by a tf.compat.v1 Saver."""
  reader = tf.train.load_checkpoint(ENCODER_CHECKPOINT)
  tensors = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
             if name.startswith(KEPT_PREFIXES)}
  tensors.update(layers)
  assert len(tensors) == 71, len(tensors)
  with tf.Graph().as_default():
    variables = [tf.Variable(tensors[name], name=name) for name in sorted(tensors)]
    with tf.Session() as session:
      session.run(tf.global_variables_initializer())
      tf.train.Saver(variables).save(session, prefix, write_meta_graph=False,
                                     write_state=False)
  return prefix


def flags_of_the_run(name, checkpoint, output_file):
  return ["extract_features.py",
          "--input_file=" + os.path.join(COMMITTED, "input.txt"),
          "--vocab_file=" + VOCAB,
          "--bert_config_file=" + os.path.join(COMMITTED, "bert_config.json"),
          "--init_checkpoint=" + checkpoint,
          "--output_file=" + output_file] + RUNS[name]


def run_original(checkout, output_dir, layers):
  """Runs the original extract_features main once per entry of RUNS;
  returns {run name: output file}."""
  tf, _, _, _, code_dir = original.load(checkout)
  checkpoint_dir = tempfile.mkdtemp(prefix="extract_features_ckpt_")
  made = {}
  try:
    checkpoint = write_checkpoint(tf, layers, os.path.join(checkpoint_dir, "model.ckpt"))
    script = importlib.import_module("extract_features")  # From code_dir (on sys.path).
    script.tf = make_eval_reference.estimator_proxy(tf)
    for name in ("input_file", "vocab_file", "bert_config_file", "init_checkpoint",
                 "output_file"):
      script.flags.mark_flag_as_required(name)
    for name in sorted(RUNS):
      os.makedirs(os.path.join(output_dir, name), exist_ok=True)
      made[name] = os.path.join(output_dir, name, OUTPUT)
      script.FLAGS.unparse_flags()  # Every run starts from the defaults.
      script.FLAGS(flags_of_the_run(name, checkpoint, made[name]))
      script.main(None)
  finally:
    original.cleanup(code_dir)
    shutil.rmtree(checkpoint_dir, ignore_errors=True)
  return made


def _values(line):
  """The printed numbers of one JSON line, and the line without them."""
  numbers = []
  for token in line["features"]:
    for layer in token["layers"]:
      numbers.extend(layer["values"])
      layer["values"] = len(layer["values"])
  return np.array(numbers), line


def compare_jsonl(made_path, committed_path):
  """(True, how) when the files match (bytes, or structure and tokens equal
  and values within VALUE_ATOL), else (False, what differs)."""
  with open(made_path, "rb") as f, open(committed_path, "rb") as g:
    made, committed = f.read(), g.read()
  if made == committed:
    return True, "byte-identical"
  made = made.decode("ascii").splitlines()
  committed = committed.decode("ascii").splitlines()
  if len(made) != len(committed):
    return False, "%d lines vs committed %d" % (len(made), len(committed))
  worst = 0.0
  for number, (a, b) in enumerate(zip(made, committed)):
    (a_values, a_rest), (b_values, b_rest) = _values(json.loads(a)), _values(json.loads(b))
    if a_rest != b_rest:
      return False, "line %d: tokens, indexes or lengths differ" % number
    difference = float(np.abs(a_values - b_values).max()) if b_values.size else 0.0
    if difference > VALUE_ATOL:
      return False, "line %d: a value differs by %.3g" % (number, difference)
    worst = max(worst, difference)
  return True, ("not byte-identical; tokens equal, every value within %g (max |difference| "
                "%.3g)" % (VALUE_ATOL, worst))


def compare_npz(made_path, committed_path):
  """The seeded draw must give the committed arrays exactly."""
  with open(made_path, "rb") as f, open(committed_path, "rb") as g:
    if f.read() == g.read():
      return True, "byte-identical"
  made, committed = np.load(made_path), np.load(committed_path)
  if made.files != committed.files:
    return False, "keys differ"
  return False, ("; ".join("%s differs" % k for k in made.files
                           if not np.array_equal(made[k], committed[k]))
                 or "same arrays, other bytes")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", help="where to write (default: a new temporary directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare the files made with the committed ones")
  parser.add_argument("--remake_layers", action="store_true",
                      help="draw layers.npz again (seeded) instead of reading the committed one")
  args = parser.parse_args()
  os.environ["TF_ENABLE_ONEDNN_OPTS"] = ONEDNN_OPTS
  output_dir = os.path.abspath(
      args.output_dir or tempfile.mkdtemp(prefix="extract_features_reference_"))
  os.makedirs(output_dir, exist_ok=True)

  checks = {}  # made file -> committed file
  if args.remake_layers:
    layers = draw_layers()
    np.savez(os.path.join(output_dir, "layers.npz"), **layers)
    checks["layers.npz"] = compare_npz
  else:
    layers = dict(np.load(os.path.join(COMMITTED, "layers.npz")))
  made = run_original(args.original_dir, output_dir, layers)
  for name in sorted(made):
    checks[os.path.join(name, OUTPUT)] = compare_jsonl
  print("Wrote %s to %s" % (", ".join(sorted(checks)), output_dir))

  if args.check:
    failures = 0
    for relative, compare in sorted(checks.items()):
      same, how = compare(os.path.join(output_dir, relative), os.path.join(COMMITTED, relative))
      print("%s %s: %s" % ("matches" if same else "DIFFERS", relative, how))
      failures += not same
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
  main()
