"""Remakes tests/data/modeling_reference/outputs.npz and optimizer_steps.npz
with the original google-research/bert code.

Inputs (read from the committed folder, never redrawn): bert_config.json,
model.ckpt.* and inputs.npz. Outputs:

- outputs.npz: what the original modeling.py and the heads of
  run_pretraining.py, run_classifier.py (3 labels) and run_squad.py compute
  from those inputs with is_training=False. Each head gets a graph of its own
  (each builds its own BertModel under "bert/"), restored from model.ckpt.
- optimizer_steps.npz: six steps of the original optimization.create_optimizer
  (init_lr 2e-3, 8 steps, 3 of warm-up) on the masked-LM + next-sentence loss
  with dropout 0, starting from model.ckpt.

Usage, from the repository root, in an environment with TensorFlow and
tf_keras (see original.py):

  TF_CPP_MIN_LOG_LEVEL=2 bench/output/envs/original/bin/python \
      tests/reference_makers/make_modeling_reference.py \
      --original_dir=/path/to/bert [--output_dir=DIR] [--check]
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

COMMITTED = os.path.normpath(os.path.join(HERE, "..", "data", "modeling_reference"))
MADE_FILES = ("outputs.npz", "optimizer_steps.npz")

# Optimizer settings of optimizer_steps.npz.
INIT_LR, TRAIN_STEPS, WARMUP_STEPS, STEPS_RECORDED = 2e-3, 8, 3, 6
NUM_LABELS = 3

# When the regenerated arrays are not bit for bit the committed ones, they
# still pass within this absolute + relative tolerance: the CPU kernels
# (oneDNN / Eigen) may split sums differently on another processor or thread
# count, which moves the last bits of float32 results. On the machine the
# references were made on the arrays come out identical.
ATOL = RTOL = 1e-6

# The references were made with TensorFlow's oneDNN custom ops on (its default
# on x86). With them off (TF_ENABLE_ONEDNN_OPTS=0) the arrays differ in the
# last bits (up to ~1e-6), so the setting is pinned before TensorFlow loads.
ONEDNN_OPTS = "1"

PRETRAINING_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                      "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


class Original(object):
  """The original's modules and the head functions of its scripts."""

  def __init__(self, checkout):
    (self.tf, self.tokenization, self.modeling, self.optimization,
     self.code_dir) = original.load(checkout)
    # The head functions run with the shimmed tf and modules as their globals.
    self.heads = {}
    for script, names in (
        ("run_pretraining.py", ["get_masked_lm_output", "get_next_sentence_output",
                                "gather_indexes"]),
        ("run_classifier.py", ["create_model"]),
        ("run_squad.py", ["create_model"])):
      namespace = {"tf": self.tf, "modeling": self.modeling,
                   "optimization": self.optimization}
      self.heads[script] = original.functions(checkout, script, names, namespace)

  def config(self, **overrides):
    with open(os.path.join(COMMITTED, "bert_config.json")) as f:
      values = json.load(f)
    values.update(overrides)
    return self.modeling.BertConfig.from_dict(values)


def _feeds(tf, inputs):
  """Placeholders for every input array, and the feed dict filling them."""
  holders = {name: tf.placeholder(tf.as_dtype(value.dtype), value.shape, name=name)
             for name, value in inputs.items()}
  return holders, {holders[name]: value for name, value in inputs.items()}


def _restore_all(tf, session, checkpoint):
  """Sets every global variable of the session's graph from `checkpoint`."""
  tf.train.Saver(tf.global_variables()).restore(session, checkpoint)


def _pretraining_graph(orig, config, is_training, x):
  """The encoder and both pre-training heads, as run_pretraining's model_fn
  wires them; returns (model, masked-LM triple, next-sentence triple)."""
  heads = orig.heads["run_pretraining.py"]
  model = orig.modeling.BertModel(
      config=config, is_training=is_training, input_ids=x["input_ids"],
      input_mask=x["input_mask"], token_type_ids=x["segment_ids"],
      use_one_hot_embeddings=False)
  masked_lm = heads["get_masked_lm_output"](
      config, model.get_sequence_output(), model.get_embedding_table(),
      x["masked_lm_positions"], x["masked_lm_ids"], x["masked_lm_weights"])
  next_sentence = heads["get_next_sentence_output"](
      config, model.get_pooled_output(), x["next_sentence_labels"])
  return model, masked_lm, next_sentence


def forward_outputs(orig, inputs, checkpoint):
  """outputs.npz: the original's values for the committed inputs."""
  tf = orig.tf
  config = orig.config()
  outputs = {}

  with tf.Graph().as_default():
    x, feed = _feeds(tf, {k: inputs[k] for k in PRETRAINING_INPUTS})
    model, masked_lm, next_sentence = _pretraining_graph(orig, config, False, x)
    fetches = {
        "sequence_output": model.get_sequence_output(),
        "pooled_output": model.get_pooled_output(),
        "embedding_output": model.get_embedding_output(),
        "embedding_table": model.get_embedding_table(),
    }
    fetches.update(zip(("mlm_loss", "mlm_per_example_loss", "mlm_log_probs"), masked_lm))
    fetches.update(zip(("nsp_loss", "nsp_per_example_loss", "nsp_log_probs"), next_sentence))
    for i, layer in enumerate(model.get_all_encoder_layers()):
      fetches["encoder_layer_%d" % i] = layer
    with tf.Session() as session:
      _restore_all(tf, session, checkpoint)
      pretraining = session.run(fetches, feed)

  with tf.Graph().as_default():
    x, feed = _feeds(tf, {k: inputs[k] for k in
                          ("input_ids", "input_mask", "segment_ids", "label_ids")})
    classifier = orig.heads["run_classifier.py"]["create_model"](
        config, False, x["input_ids"], x["input_mask"], x["segment_ids"], x["label_ids"],
        NUM_LABELS, False)
    with tf.Session() as session:
      _restore_all(tf, session, checkpoint)
      classifier = session.run(classifier, feed)

  with tf.Graph().as_default():
    x, feed = _feeds(tf, {k: inputs[k] for k in ("input_ids", "input_mask", "segment_ids")})
    squad = orig.heads["run_squad.py"]["create_model"](
        config, False, x["input_ids"], x["input_mask"], x["segment_ids"], False)
    with tf.Session() as session:
      _restore_all(tf, session, checkpoint)
      squad = session.run(squad, feed)

  # The committed file's key order (np.savez keeps it in the zip).
  for key in ("sequence_output", "pooled_output", "embedding_output", "embedding_table",
              "mlm_loss", "mlm_per_example_loss", "mlm_log_probs",
              "nsp_loss", "nsp_per_example_loss", "nsp_log_probs"):
    outputs[key] = pretraining[key]
  outputs.update(zip(("classifier_loss", "classifier_per_example_loss",
                      "classifier_logits", "classifier_probabilities"), classifier))
  outputs.update(zip(("squad_start_logits", "squad_end_logits"), squad))
  for i in range(config.num_hidden_layers):
    outputs["encoder_layer_%d" % i] = pretraining["encoder_layer_%d" % i]
  return outputs


def optimizer_steps(orig, inputs, checkpoint):
  """optimizer_steps.npz: learning rate and loss before each of six steps,
  and every trainable variable after the last."""
  tf = orig.tf
  optimization = orig.optimization
  config = orig.config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  made = {}

  real_class = optimization.AdamWeightDecayOptimizer

  def recording_optimizer(*args, **kwargs):
    """Makes the original optimizer (with the module's class back in place:
    its constructor finds itself by name) and remembers its learning-rate
    tensor and the op its apply_gradients returns."""
    optimization.AdamWeightDecayOptimizer = real_class
    try:
      optimizer = real_class(*args, **kwargs)
    finally:
      optimization.AdamWeightDecayOptimizer = recording_optimizer
    made["learning_rate"] = optimizer.learning_rate
    apply_gradients = optimizer.apply_gradients

    def recorded_apply_gradients(*args, **kwargs):
      made["update"] = apply_gradients(*args, **kwargs)
      return made["update"]
    optimizer.apply_gradients = recorded_apply_gradients
    return optimizer

  with tf.Graph().as_default():
    x, feed = _feeds(tf, {k: inputs[k] for k in PRETRAINING_INPUTS})
    _, masked_lm, next_sentence = _pretraining_graph(orig, config, True, x)
    loss = masked_lm[0] + next_sentence[0]
    trainable = tf.trainable_variables()
    assignment_map, _ = orig.modeling.get_assignment_map_from_checkpoint(trainable,
                                                                         checkpoint)
    tf.train.init_from_checkpoint(checkpoint, assignment_map)
    optimization.AdamWeightDecayOptimizer = recording_optimizer
    try:
      train_op = optimization.create_optimizer(loss, INIT_LR, TRAIN_STEPS, WARMUP_STEPS,
                                               False)
    finally:
      optimization.AdamWeightDecayOptimizer = real_class
    # create_optimizer groups the update with the global-step increment, with
    # no order between them, so the update may read the rate of the next
    # step. Here the two run one after the other: the update of step t uses
    # the rate of step t, as the schedule intends.
    increments = [op for op in train_op.control_inputs if op is not made["update"]]
    assert len(increments) == 1 and len(train_op.control_inputs) == 2, train_op
    increment = increments[0]

    rates, losses = [], []
    with tf.Session() as session:
      session.run(tf.global_variables_initializer())
      for _ in range(STEPS_RECORDED):
        rate, value = session.run([made["learning_rate"], loss], feed)
        rates.append(rate)
        losses.append(value)
        session.run(made["update"], feed)
        session.run(increment)
      assert session.run(tf.train.get_global_step()) == STEPS_RECORDED
      final = session.run(trainable)

  steps = {"learning_rates": np.array(rates, np.float32),
           "losses": np.array(losses, np.float32)}
  for variable, value in zip(trainable, final):
    steps["var/" + variable.op.name] = value
  return steps


def compare(made_path, committed_path):
  """(True, how) when the files match (bytes, or arrays within ATOL/RTOL),
  else (False, what differs)."""
  with open(made_path, "rb") as f, open(committed_path, "rb") as g:
    if f.read() == g.read():
      return True, "byte-identical"
  made, committed = dict(np.load(made_path)), dict(np.load(committed_path))
  problems = []
  if list(made) != list(committed):
    problems.append("keys differ: %s vs committed %s" % (list(made), list(committed)))
  for key in committed:
    if key not in made:
      continue
    a, b = made[key], committed[key]
    if a.dtype != b.dtype or a.shape != b.shape:
      problems.append("%s: %s%s vs committed %s%s" % (key, a.dtype, a.shape, b.dtype, b.shape))
    elif not np.allclose(a, b, rtol=RTOL, atol=ATOL):
      problems.append("%s: max |difference| %.3g" % (key, np.abs(a - b).max()))
  if problems:
    return False, "; ".join(problems)
  worst = max(float(np.abs(made[k] - committed[k]).max()) for k in committed)
  return True, ("not byte-identical, every array within atol=rtol=%g (max |difference| %.3g)"
                % (ATOL, worst))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", help="where to write (default: a new temporary directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare the files made with the committed ones")
  args = parser.parse_args()
  os.environ["TF_ENABLE_ONEDNN_OPTS"] = ONEDNN_OPTS
  output_dir = args.output_dir or tempfile.mkdtemp(prefix="modeling_reference_")
  os.makedirs(output_dir, exist_ok=True)

  orig = Original(args.original_dir)
  try:
    inputs = dict(np.load(os.path.join(COMMITTED, "inputs.npz")))
    checkpoint = os.path.join(COMMITTED, "model.ckpt")
    np.savez(os.path.join(output_dir, "outputs.npz"), **forward_outputs(orig, inputs, checkpoint))
    np.savez(os.path.join(output_dir, "optimizer_steps.npz"),
             **optimizer_steps(orig, inputs, checkpoint))
  finally:
    original.cleanup(orig.code_dir)
  print("Wrote %s to %s" % (", ".join(MADE_FILES), output_dir))

  if args.check:
    failures = 0
    for name in MADE_FILES:
      same, how = compare(os.path.join(output_dir, name), os.path.join(COMMITTED, name))
      print("%s %s: %s" % ("matches" if same else "DIFFERS", name, how))
      failures += not same
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
  main()
