"""Remakes tests/data/eval_reference/eval_results.txt with the original
google-research/bert run_pretraining.py.

Inputs (read from the committed folders, never redrawn): eval_reference's
bert_config.json and model.ckpt.*, and
pretraining_reference/sample_default.tfrecord. The original run_pretraining
`main` runs with the flags tests/test_run_pretraining.py gives our
run_pretraining.py (--do_eval --eval_batch_size=8 --max_eval_steps=5, the
rest at their defaults), parsed by absl as `tf.app.run` would. TensorFlow 2
has no tf.estimator or tf.contrib, so the script's `tf` is a proxy that adds
small stand-ins for the names `main` and its `model_fn`/`input_fn` use; the
stand-in TPUEstimator.evaluate does in a tf.compat.v1 Session what
`TPUEstimator(use_tpu=False).evaluate` does (see `_Estimator.evaluate`;
make_extract_features_reference.py uses the same stand-ins for predict).
Everything else, down to writing eval_results.txt, is the original's code.

Usage, from the repository root, in an environment with TensorFlow and
tf_keras (see original.py):

  TF_CPP_MIN_LOG_LEVEL=2 bench/output/envs/original/bin/python \
      tests/reference_makers/make_eval_reference.py \
      --original_dir=/path/to/bert [--output_dir=DIR] [--check]
"""

import argparse
import importlib
import os
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
COMMITTED = os.path.join(DATA, "eval_reference")
RECORDS = os.path.join(DATA, "pretraining_reference", "sample_default.tfrecord")
MADE_FILE = "eval_results.txt"

# If the regenerated file is not byte for byte the committed one, each value
# may still differ by this much relative to its size: float32 sums inside the
# CPU kernels can be split differently on another processor or thread count,
# and str() of a float32 shows its last bit. On the machine the reference was
# made on the file comes out identical.
RTOL = 1e-6

# TensorFlow's oneDNN custom ops on (its default on x86), as for
# modeling_reference; here the file comes out the same with them off too.
ONEDNN_OPTS = "1"


def flags_of_the_run(output_dir):
  """The command line the reference evaluation ran with."""
  return ["run_pretraining.py",
          "--input_file=" + RECORDS,
          "--output_dir=" + output_dir,
          "--do_eval",
          "--bert_config_file=" + os.path.join(COMMITTED, "bert_config.json"),
          "--init_checkpoint=" + os.path.join(COMMITTED, "model.ckpt"),
          "--eval_batch_size=8",
          "--max_eval_steps=5"]


class _Proxy(object):
  """A module look-alike: the given attributes first, then `real`'s."""

  def __init__(self, real, **added):
    self._real = real
    self.__dict__.update(added)

  def __getattr__(self, name):
    return getattr(self._real, name)


def _record(**fields):
  return types.SimpleNamespace(**fields)


def estimator_proxy(tf):
  """tf.compat.v1 plus stand-ins for the tf.estimator / tf.contrib names the
  original scripts' main, model_fn and input_fn use (run_pretraining.py
  here, extract_features.py in make_extract_features_reference.py)."""
  mode_keys = _record(TRAIN="train", EVAL="eval", PREDICT="infer")

  def estimator_spec(mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
                     scaffold_fn=None, host_call=None, export_outputs=None,
                     training_hooks=None, evaluation_hooks=None, prediction_hooks=None):
    return _record(mode=mode, predictions=predictions, loss=loss, train_op=train_op,
                   eval_metrics=eval_metrics, scaffold_fn=scaffold_fn, host_call=host_call)

  def run_config(model_dir=None, tpu_config=None, **unused):
    return _record(model_dir=model_dir, tpu_config=tpu_config)

  class _Estimator(object):
    """What TPUEstimator does with use_tpu=False, for evaluate and predict."""

    def __init__(self, model_fn, config=None, params=None, use_tpu=True,
                 train_batch_size=None, eval_batch_size=None, predict_batch_size=None,
                 **unused):
      if use_tpu:
        raise NotImplementedError("the stand-in only runs without a TPU")
      self._model_fn = model_fn
      self._model_dir = config.model_dir if config else None
      self._params = dict(params or {})
      self._batch_size = {mode_keys.EVAL: eval_batch_size,
                          mode_keys.PREDICT: predict_batch_size}

    def _build(self, input_fn, mode, iterator_maker, checkpoint_path):
      """In the current (new) graph, as the Estimator does: the global step,
      then input_fn's dataset behind an iterator (no labels: the datasets
      hold dicts), then model_fn; returns (global step, iterator, spec)."""
      # With a trained checkpoint in model_dir the Estimator would use that
      # one; the references use init_checkpoint's weights (model_fn calls
      # init_from_checkpoint, as use_tpu is False).
      if checkpoint_path or (self._model_dir and tf.train.latest_checkpoint(self._model_dir)):
        raise SystemExit("%s holds a checkpoint: use an empty output directory"
                         % (checkpoint_path or self._model_dir))
      params = dict(self._params, batch_size=self._batch_size[mode])
      global_step = tf.train.get_or_create_global_step()
      iterator = iterator_maker(input_fn(params))
      spec = self._model_fn(iterator.get_next(), None, mode, params)
      if spec.scaffold_fn:
        spec.scaffold_fn()
      return global_step, iterator, spec

    @staticmethod
    def _initialize(session):
      # The initializers of the variables init_from_checkpoint mapped read
      # the checkpoint.
      session.run(tf.global_variables_initializer())
      session.run([tf.local_variables_initializer(), tf.tables_initializer()])

    def train(self, *unused_args, **unused_kwargs):
      raise NotImplementedError("the stand-in does not train")

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
      with tf.Graph().as_default():
        global_step, iterator, spec = self._build(
            input_fn, mode_keys.EVAL, tf.data.make_initializable_iterator, checkpoint_path)
        # TPUEstimatorSpec on CPU: the metric function is called on its
        # tensors, then the Estimator adds the mean of the loss and groups
        # the update ops in the order of the metrics' names.
        metric_fn, tensors = spec.eval_metrics
        metrics = dict(metric_fn(**tensors) if isinstance(tensors, dict)
                       else metric_fn(*tensors))
        metrics["loss"] = tf.metrics.mean(spec.loss)
        update = tf.group(*[metrics[key][1] for key in sorted(metrics)])
        values = {key: metrics[key][0] for key in metrics}
        with tf.Session() as session:
          self._initialize(session)
          session.run(iterator.initializer)
          done = 0
          while steps is None or done < steps:
            try:
              session.run(update)
            except tf.errors.OutOfRangeError:
              break
            done += 1
          results = session.run(values)
          results["global_step"] = session.run(global_step)
      return results

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
      with tf.Graph().as_default():
        _, _, spec = self._build(input_fn, mode_keys.PREDICT,
                                 tf.data.make_one_shot_iterator, checkpoint_path)
        predictions = spec.predictions
        if predict_keys:
          predictions = {key: predictions[key] for key in predict_keys}
        with tf.Session() as session:
          self._initialize(session)
          while True:  # One batch at a time until the input ends.
            try:
              batch = session.run(predictions)
            except tf.errors.OutOfRangeError:
              return
            if not yield_single_examples:
              yield batch
              continue
            for i in range(len(next(iter(batch.values())))):
              yield {key: value[i] for key, value in batch.items()}

  contrib = _record(
      tpu=_record(TPUEstimator=_Estimator, TPUEstimatorSpec=estimator_spec,
                  RunConfig=run_config, TPUConfig=lambda **unused: None,
                  InputPipelineConfig=_record(PER_HOST_V2=3)),
      data=_record(map_and_batch=tf.data.experimental.map_and_batch))
  return _Proxy(tf, contrib=contrib, estimator=_record(ModeKeys=mode_keys))


def run_original(checkout, output_dir):
  """Runs the original run_pretraining main; returns the file it wrote."""
  tf, _, _, _, code_dir = original.load(checkout)
  try:
    script = importlib.import_module("run_pretraining")  # From code_dir (on sys.path).
    script.tf = estimator_proxy(tf)
    for name in ("input_file", "bert_config_file", "output_dir"):
      script.flags.mark_flag_as_required(name)
    script.FLAGS(flags_of_the_run(output_dir))
    script.main(None)
  finally:
    original.cleanup(code_dir)
  return os.path.join(output_dir, MADE_FILE)


def compare(made_path, committed_path):
  """(True, how) when the files match (bytes, or every value within RTOL),
  else (False, what differs)."""
  with open(made_path, "rb") as f, open(committed_path, "rb") as g:
    made, committed = f.read(), g.read()
  if made == committed:
    return True, "byte-identical"

  def parse(text):
    return [line.split(" = ") for line in text.decode("utf-8").splitlines()]
  made, committed = parse(made), parse(committed)
  if [k for k, _ in made] != [k for k, _ in committed]:
    return False, "keys %s vs committed %s" % ([k for k, _ in made], [k for k, _ in committed])
  problems = ["%s = %s vs committed %s" % (k, a, b) for (k, a), (_, b) in zip(made, committed)
              if abs(float(a) - float(b)) > RTOL * abs(float(b))]
  if problems:
    return False, "; ".join(problems)
  return True, "not byte-identical, every value within %g relative" % RTOL


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", help="where to write (default: a new temporary directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare the file made with the committed one")
  args = parser.parse_args()
  os.environ["TF_ENABLE_ONEDNN_OPTS"] = ONEDNN_OPTS  # Before TensorFlow loads.
  output_dir = os.path.abspath(args.output_dir or tempfile.mkdtemp(prefix="eval_reference_"))
  os.makedirs(output_dir, exist_ok=True)
  made = run_original(args.original_dir, output_dir)
  print("Wrote %s" % made)
  if args.check:
    same, how = compare(made, os.path.join(COMMITTED, MADE_FILE))
    print("%s %s: %s" % ("matches" if same else "DIFFERS", MADE_FILE, how))
    sys.exit(0 if same else 1)


if __name__ == "__main__":
  main()
