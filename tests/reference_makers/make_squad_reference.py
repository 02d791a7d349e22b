"""Remakes tests/data/squad_reference/ with the original run_squad.py.

  TF_CPP_MIN_LOG_LEVEL=2 bench/output/envs/original/bin/python \
      tests/reference_makers/make_squad_reference.py \
      --original_dir=/path/to/bert [--output_dir=DIR] [--check] [--remake_heads] \
      [--random=SEED,SEED]

Run from the repository root with an interpreter that has TensorFlow and
tf_keras (bench/output/envs/original). The original's code is read from the
checkout given by --original_dir (see original.py); none of it is in this
repository.

What is remade (the folder's README.md says what each file holds):
  examples.json                    read_squad_examples on the input files
  <run>/predictions.json, ...      run_squad.main --do_predict, driven through
  <run>/features.json,               a stand-in for TPUEstimator, with the
  <run>/raw_results.npz              features and raw results it produced
  train_features/train_features.json  the training features (file order and
                                   main's shuffled order) and their records
  train_steps.npz                  3 steps of the original model_fn in TRAIN mode
  random/<seed>/reference.json,    examples and features of the random files,
  random/<seed>/predictions.json, ...  and write_predictions on their logits
What is read, not remade: heads.npz (the random SQuAD head; --remake_heads
draws it again from its seed and compares it too), edge.json (hand-written),
and in random/<seed>/ the generated train.json, predict.json, the random
logits raw_results.npz and the run's `settings` (kept in reference.json).

TensorFlow 2 has no tf.estimator and no tf.contrib. The original functions
are defined (original.functions) in a namespace whose `tf` is tf.compat.v1
plus stand-ins for the names they use from those: ModeKeys, a
TPUEstimatorSpec record, inert RunConfig/TPUConfig, map_and_batch (map, then
batch) and a TPUEstimator whose predict does on the CPU what
Estimator.predict does when the model directory has no checkpoint (the
variables come from --init_checkpoint through the model_fn's own
init_from_checkpoint). FLAGS is a plain object holding one run's settings,
built from the flag list each features.json records. RawResult, a
module-level namedtuple in the original, is defined here.

--check compares with the committed folder and exits 1 on a difference.
Byte for byte: every JSON file of examples, features and records, every
predictions.json, and all files of random/ (their logits are inputs, so
nothing there depends on float arithmetic). The model's outputs are
float32 results that another CPU may round differently in the last digits:
raw_results.npz is compared within FLOAT_TOLERANCE, and nbest_predictions.json
and null_odds.json, which print those logits with repr, byte for byte or
else with the same texts, keys and order and numbers within FLOAT_TOLERANCE;
train_steps.npz within STEP_TOLERANCE.
"""

import argparse
import collections
import hashlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import types

import numpy as np
import six

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TEST_DATA = os.path.join(REPO, "tests", "data")
COMMITTED = os.path.join(TEST_DATA, "squad_reference")
SHARED = os.path.normpath(os.path.join(REPO, "..", "shared", "data"))
VOCAB = os.path.join(TEST_DATA, "vocab", "bert_uncased_vocab.txt")
CONFIG = os.path.join(TEST_DATA, "eval_reference", "bert_config.json")
ENCODER_CHECKPOINT = os.path.join(TEST_DATA, "eval_reference", "model.ckpt")
EDGE = os.path.join(COMMITTED, "edge.json")

sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

# The model's float32 logits depend on the CPU's kernels (vector width,
# oneDNN blocking), which round in different orders: on the machine these
# files were remade on (AMD EPYC, AVX-512) the logits differ from the
# committed ones by up to 7.1e-6 (|logits| up to 6.7, a few ulp; switching
# oneDNN off or capping it at AVX2 alone moves them by 3e-6 to 7e-6 there),
# and every text and order of the outputs is identical. Compared within the
# tolerance the tests use.
FLOAT_TOLERANCE = 1e-5
# Three optimizer steps: the same noise, and Adam divides by sqrt(v) + 1e-6,
# so gradients that are zero up to rounding become updates of ~1e-6.
STEP_TOLERANCE = 1e-5

HEAD_SEED = 2001
V11_PREDICT = "checks/squad/v1.1/input_predict.json"
V20_PREDICT = "checks/squad/v2.0/input_predict.json"
V11_TRAIN = "checks/squad/v1.1/input_train_format.json"
V20_TRAIN = "checks/squad/v2.0/input_train_format.json"
EDGE_NAME = "edge.json (this directory)"

# run dir -> (predict file, v2, threshold, (seq, stride, query), n_best, max answer,
#             files kept, whether features.json and raw_results.npz are kept)
PREDICT_RUNS = collections.OrderedDict([
    ("v1.1", (V11_PREDICT, False, 0.0, (128, 64, 24), 20, 30, "pn", True)),
    ("v2.0", (V20_PREDICT, True, 0.0, (128, 64, 24), 20, 30, "pno", True)),
    ("v2.0_thresh", (V20_PREDICT, True, -1.0, (128, 64, 24), 20, 30, "p", False)),
    ("v2.0_thresh_m7", (V20_PREDICT, True, -7.0, (128, 64, 24), 20, 30, "p", False)),
    ("v1.1_nbest8_len2", (V11_PREDICT, False, 0.0, (128, 64, 24), 8, 2, "pn", False)),
    ("edge", (EDGE_NAME, False, 0.0, (64, 16, 12), 20, 30, "pn", True)),
    ("edge_v2", (EDGE_NAME, True, 0.0, (64, 16, 12), 20, 30, "pno", True)),
])
OUTPUT_FILES = {"p": "predictions.json", "n": "nbest_predictions.json", "o": "null_odds.json"}

# (file, is_training, v2) in the order of examples.json.
EXAMPLE_SETS = [(V11_PREDICT, False, False), (V11_TRAIN, True, False),
                (V20_PREDICT, False, True), (V20_TRAIN, True, True),
                (EDGE_NAME, False, False), (EDGE_NAME, True, False), (EDGE_NAME, False, True)]
EXAMPLE_COLUMNS = ["qas_id", "len(doc_tokens)", "sha256(json.dumps(doc_tokens))",
                   "sha256(json.dumps(question_text))"]
TRAINING_COLUMNS = ["orig_answer_text", "start_position", "end_position", "is_impossible"]

# key of train_features.json -> (file, v2, (seq, stride, query))
TRAIN_SETS = collections.OrderedDict([
    ("v1.1", (V11_TRAIN, False, (128, 64, 24))),
    ("v2.0", (V20_TRAIN, True, (128, 64, 24))),
    ("edge", (EDGE_NAME, False, (64, 16, 12))),
])
PER_FEATURE_COLUMNS = ["unique_id", "example_index", "doc_span_index", "len(tokens)",
                       "sum(input_mask)", "sha256 of json.dumps(row, sort_keys=True)"]
POSITIONS_COLUMNS = ["unique_id", "start_position", "end_position", "is_impossible"]

# What is taken from the original's run_squad.py.
ORIGINAL_NAMES = [
    "SquadExample", "InputFeatures", "read_squad_examples", "convert_examples_to_features",
    "_improve_answer_span", "_check_is_max_context", "create_model", "model_fn_builder",
    "input_fn_builder", "write_predictions", "get_final_text", "_get_best_indexes",
    "_compute_softmax", "FeatureWriter", "validate_flags_or_throw", "main",
]


# --- Stand-ins for what TensorFlow 2 lacks ----------------------------------

class RunSettings(object):
  """The FLAGS of one run: reading a setting that was not given is an error,
  so nothing silently falls back to a default of ours."""

  def __init__(self, **values):
    self.__dict__.update(values)

  def __getattr__(self, name):
    raise AttributeError("the original read FLAGS.%s, which this maker does not set" % name)


class Spec(object):
  """What the model_fn returns (TPUEstimatorSpec): its fields, nothing else."""

  def __init__(self, mode, predictions=None, loss=None, train_op=None, eval_metrics=None,
               scaffold_fn=None, **unused):
    self.mode, self.predictions, self.loss = mode, predictions, loss
    self.train_op, self.eval_metrics, self.scaffold_fn = train_op, eval_metrics, scaffold_fn


class CpuEstimator(object):
  """TPUEstimator(use_tpu=False).predict for a model directory without
  checkpoints: a fresh graph (global step first, then the input_fn's
  dataset, then the model_fn), run in a session whose variables get their
  initial values, which init_from_checkpoint set to the checkpoint's."""

  def __init__(self, tf, mode_keys, model_fn, use_tpu=False, config=None, train_batch_size=None,
               predict_batch_size=None):
    if use_tpu:
      raise ValueError("only use_tpu=False is emulated")
    self._tf, self._modes, self._model_fn = tf, mode_keys, model_fn
    self._predict_batch_size = predict_batch_size
    self.predict_batches = None

  def train(self, *unused, **unused_kw):
    raise NotImplementedError("the reference runs do not train through main")

  def predict(self, input_fn, yield_single_examples=True):
    """The predictions dict, batch by batch, split into single examples."""
    if not yield_single_examples:
      raise ValueError("only yield_single_examples=True is emulated")
    tf = self._tf
    with tf.Graph().as_default():
      tf.train.get_or_create_global_step()
      params = {"batch_size": self._predict_batch_size}
      features = tf.data.make_one_shot_iterator(input_fn(params)).get_next()
      spec = self._model_fn(features, None, self._modes.PREDICT, params)
      with tf.Session() as session:
        session.run([tf.global_variables_initializer(), tf.local_variables_initializer(),
                     tf.tables_initializer()])
        batches = 0
        while True:
          try:
            values = session.run(spec.predictions)
          except tf.errors.OutOfRangeError:
            break
          batches += 1
          for i in range(len(next(iter(values.values())))):
            yield {name: value[i] for name, value in values.items()}
    self.predict_batches = batches


class LoggingProxy(object):
  """tf.logging with warnings also kept (read_squad_examples reports the
  answers it skips as warnings), and the original's own
  set_verbosity(INFO) ignored unless --verbose."""

  def __init__(self, logging, verbose):
    self._logging, self._verbose = logging, verbose
    self.warnings = []
    logging.set_verbosity(logging.INFO if verbose else logging.WARN)

  def set_verbosity(self, level):
    if self._verbose:
      self._logging.set_verbosity(level)

  def warning(self, message, *args):
    self.warnings.append(message % args if args else message)
    self._logging.warning(message, *args)

  def __getattr__(self, name):
    return getattr(self._logging, name)


class TfWithStandIns(types.ModuleType):
  """tf.compat.v1 plus the tf.estimator / tf.contrib names the original
  uses. Every TPUEstimator made is appended to `estimators`."""

  def __init__(self, tf, verbose, estimators):
    super(TfWithStandIns, self).__init__("tf_with_stand_ins")
    self._base = tf
    mode_keys = types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer")
    self.estimator = types.SimpleNamespace(ModeKeys=mode_keys)

    def make_estimator(**kwargs):
      estimators.append(CpuEstimator(tf, mode_keys, **kwargs))
      return estimators[-1]

    def map_then_batch(map_func, batch_size, drop_remainder=False):
      # AutoGraph cannot read the source of the exec'd original and would
      # warn that it runs map_func as it is; say so up front.
      map_func = tf.autograph.experimental.do_not_convert(map_func)
      return lambda dataset: dataset.map(map_func).batch(batch_size,
                                                         drop_remainder=drop_remainder)

    inert = lambda *args, **kwargs: None
    self.contrib = types.SimpleNamespace(
        tpu=types.SimpleNamespace(
            TPUEstimatorSpec=Spec, TPUEstimator=make_estimator, RunConfig=inert,
            TPUConfig=inert, InputPipelineConfig=types.SimpleNamespace(PER_HOST_V2=2)),
        data=types.SimpleNamespace(map_and_batch=map_then_batch))
    self.logging = LoggingProxy(tf.logging, verbose)

  def __getattr__(self, name):  # Everything else: tf.compat.v1 itself.
    return getattr(self._base, name)


# --- Helpers ------------------------------------------------------------------

def sha256_hex(data):
  return hashlib.sha256(data).hexdigest()


def sha_of_text(text):
  return sha256_hex(text.encode("utf-8"))


def write_json(path, obj, sort_keys=False, newline=True):
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(json.dumps(obj, indent=1, sort_keys=sort_keys) + ("\n" if newline else ""))


def input_path(name):
  return EDGE if name == EDGE_NAME else os.path.join(SHARED, name)


def record_digests(tf, path, scratch):
  """Digests of a TFRecord file that do not depend on protobuf's map order:
  the records re-serialised deterministically and re-written, and their
  int64 features as sorted JSON (see the README)."""
  canonical = os.path.join(scratch, "canonical.tf_record")
  rows = []
  with tf.io.TFRecordWriter(canonical) as writer:
    for raw in tf.io.tf_record_iterator(path):
      example = tf.train.Example.FromString(raw)
      writer.write(example.SerializeToString(deterministic=True))
      rows.append({name: list(feature.int64_list.value)
                   for name, feature in example.features.feature.items()})
  with open(canonical, "rb") as f:
    canonical_sha = sha256_hex(f.read())
  os.remove(canonical)
  return collections.OrderedDict([
      ("records", len(rows)), ("file_bytes", os.path.getsize(path)),
      ("sha256_canonical_file", canonical_sha),
      ("sha256_features_json", sha_of_text(json.dumps(rows, sort_keys=True)))])


def draw_heads():
  """heads.npz as the README says it was drawn."""
  rs = np.random.RandomState(HEAD_SEED)
  weights = rs.normal(0, 0.5, [2, 16]).astype(np.float32)
  bias = rs.normal(0, 0.1, [2]).astype(np.float32)
  return collections.OrderedDict([("cls/squad/output_weights", weights),
                                  ("cls/squad/output_bias", bias)])


def write_checkpoint(tf, heads, prefix):
  """The encoder of eval_reference plus the SQuAD head, saved by a Saver
  under the original's variable names."""
  reader = tf.train.NewCheckpointReader(ENCODER_CHECKPOINT)
  tensors = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
             if name.startswith("bert/")}
  tensors.update(heads)
  os.makedirs(os.path.dirname(prefix), exist_ok=True)
  with tf.Graph().as_default():
    variables = {name: tf.Variable(value, name="v%d" % i)
                 for i, (name, value) in enumerate(sorted(tensors.items()))}
    saver = tf.train.Saver(var_list=variables)
    with tf.Session() as session:
      session.run(tf.global_variables_initializer())
      saver.save(session, prefix, write_meta_graph=False, write_state=False)
  return prefix


def example_row(e):
  return [e.qas_id, e.question_text, e.doc_tokens, e.orig_answer_text, e.start_position,
          e.end_position, e.is_impossible]


def feature_row(f, is_training):
  """One feature as the README's digests see it."""
  row = {"unique_id": f.unique_id, "example_index": f.example_index,
         "doc_span_index": f.doc_span_index, "tokens": f.tokens,
         "token_to_orig_map": {str(k): v for k, v in f.token_to_orig_map.items()},
         "token_is_max_context": {str(k): v for k, v in f.token_is_max_context.items()},
         "input_ids": f.input_ids, "input_mask": f.input_mask, "segment_ids": f.segment_ids}
  if is_training:
    row.update(start_position=f.start_position, end_position=f.end_position,
               is_impossible=f.is_impossible)
  return row


def feature_summary(features, is_training, per_feature=True):
  rows = [feature_row(f, is_training) for f in features]
  summary = collections.OrderedDict([
      ("num_features", len(rows)), ("sha256", sha_of_text(json.dumps(rows, sort_keys=True)))])
  if per_feature:
    summary["per_feature_columns"] = PER_FEATURE_COLUMNS
    summary["per_feature"] = [
        [f.unique_id, f.example_index, f.doc_span_index, len(f.tokens), sum(f.input_mask),
         sha_of_text(json.dumps(row, sort_keys=True))] for f, row in zip(features, rows)]
  return summary


def questions_in(path):
  with open(path, encoding="utf-8") as f:
    data = json.load(f)["data"]
  return [qa["id"] for article in data for paragraph in article["paragraphs"]
          for qa in paragraph["qas"]]


class Original(object):
  """The original's run_squad functions in their namespace, with FLAGS set
  per call."""

  def __init__(self, tf, modules, checkout, verbose):
    self.tf = tf
    self.estimators = []
    self.tf_stand_in = TfWithStandIns(tf, verbose, self.estimators)
    tokenization, modeling, optimization = modules
    self.tokenization, self.modeling, self.optimization = tokenization, modeling, optimization
    self.ns = {"tf": self.tf_stand_in, "modeling": modeling, "optimization": optimization,
               "tokenization": tokenization, "collections": collections, "json": json,
               "math": math, "os": os, "random": random, "six": six,
               "RawResult": collections.namedtuple(
                   "RawResult", ["unique_id", "start_logits", "end_logits"])}
    original.functions(checkout, "run_squad.py", ORIGINAL_NAMES, self.ns)

  def __getattr__(self, name):
    return self.ns[name]

  def set_flags(self, **values):
    self.ns["FLAGS"] = RunSettings(**values)

  def read_examples(self, path, is_training, v2):
    """(examples, warnings the call logged)."""
    self.set_flags(version_2_with_negative=v2)
    before = len(self.tf_stand_in.logging.warnings)
    examples = self.ns["read_squad_examples"](path, is_training)
    return examples, self.tf_stand_in.logging.warnings[before:]

  def features(self, examples, tokenizer, lengths, is_training, writer=None):
    features = []

    def keep(feature):
      features.append(feature)
      if writer is not None:
        writer.process_feature(feature)
    seq, stride, query = lengths
    self.ns["convert_examples_to_features"](examples, tokenizer, seq, stride, query,
                                            is_training, keep)
    return features


# --- The parts of the folder ----------------------------------------------------

def make_examples(orig, out):
  sets = []
  for name, is_training, v2 in EXAMPLE_SETS:
    examples, warnings = orig.read_examples(input_path(name), is_training, v2)
    rows = []
    for e in examples:
      row = [e.qas_id, len(e.doc_tokens), sha_of_text(json.dumps(e.doc_tokens)),
             sha_of_text(json.dumps(e.question_text))]
      if is_training:
        row += [e.orig_answer_text, e.start_position, e.end_position, e.is_impossible]
      rows.append(row)
    sets.append(collections.OrderedDict([
        ("file", name), ("is_training", is_training), ("version_2_with_negative", v2),
        ("count", len(examples)), ("skipped_warnings", len(warnings)),
        ("sha256_all", sha_of_text(json.dumps([example_row(e) for e in examples]))),
        ("columns", EXAMPLE_COLUMNS + (TRAINING_COLUMNS if is_training else [])),
        ("examples", rows)]))
  write_json(os.path.join(out, "examples.json"), collections.OrderedDict([
      ("about", "read_squad_examples of the original; see README.md"), ("sets", sets)]))


def flag_list(run):
  """The command line of a predict run, with placeholders for paths."""
  predict_file, v2, threshold, lengths, n_best, max_answer, _, _ = PREDICT_RUNS[run]
  shown = "<edge.json>" if predict_file == EDGE_NAME else "<shared/data>/" + predict_file
  return ["--vocab_file=<shared/data>/vocab/bert_uncased_vocab.txt",
          "--bert_config_file=<eval_reference/bert_config.json>",
          "--init_checkpoint=<checkpoint>", "--output_dir=<empty dir>",
          "--do_train=False", "--do_predict=True", "--predict_file=" + shown,
          "--do_lower_case=True", "--max_seq_length=%d" % lengths[0],
          "--doc_stride=%d" % lengths[1], "--max_query_length=%d" % lengths[2],
          "--predict_batch_size=8", "--n_best_size=%d" % n_best,
          "--max_answer_length=%d" % max_answer, "--use_tpu=False", "--verbose_logging=False",
          "--version_2_with_negative=%s" % v2, "--null_score_diff_threshold=%s" % threshold]


def flags_from_list(flags, checkpoint, output_dir):
  """FLAGS for main from a flag list: placeholders replaced, values typed as
  the original's flags are."""
  places = {"<shared/data>": SHARED, "<eval_reference/bert_config.json>": CONFIG,
            "<checkpoint>": checkpoint, "<empty dir>": output_dir, "<edge.json>": EDGE}
  booleans = {"do_train", "do_predict", "do_lower_case", "use_tpu", "verbose_logging",
              "version_2_with_negative"}
  integers = {"max_seq_length", "doc_stride", "max_query_length", "predict_batch_size",
              "n_best_size", "max_answer_length"}
  values = {}
  for flag in flags:
    name, value = flag[2:].split("=", 1)
    for place, path in places.items():
      value = value.replace(place, path)
    if name in booleans:
      value = {"True": True, "False": False}[value]
    elif name in integers:
      value = int(value)
    elif name == "null_score_diff_threshold":
      value = float(value)
    values[name] = value
  # Read by main but without effect on a predict-only run on the CPU.
  values.update(train_file=None, train_batch_size=32, learning_rate=5e-5,
                num_train_epochs=3.0, warmup_proportion=0.1, save_checkpoints_steps=1000,
                iterations_per_loop=1000, num_tpu_cores=8, tpu_name=None, tpu_zone=None,
                gcp_project=None, master=None)
  return values


def make_predict_run(orig, run, checkpoint, out, scratch):
  """run_squad.main for one run directory, keeping what it passed between
  its steps (the originals are called unchanged)."""
  _, _, _, lengths, _, _, kept, with_features = PREDICT_RUNS[run]
  run_dir = os.path.join(scratch, "run_" + run)
  flags = flag_list(run)
  orig.set_flags(**flags_from_list(flags, checkpoint, run_dir))
  seen = {}
  ns = orig.ns
  originals = {name: ns[name] for name in
               ("read_squad_examples", "convert_examples_to_features", "write_predictions")}

  def reading(input_file, is_training):
    seen["examples"] = originals["read_squad_examples"](input_file, is_training)
    return seen["examples"]

  def converting(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                 is_training, output_fn):
    seen["features"] = []

    def both(feature):
      seen["features"].append(feature)
      output_fn(feature)
    return originals["convert_examples_to_features"](
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, both)

  def writing(all_examples, all_features, all_results, *args):
    seen["results"] = list(all_results)
    return originals["write_predictions"](all_examples, all_features, all_results, *args)

  ns.update(read_squad_examples=reading, convert_examples_to_features=converting,
            write_predictions=writing)
  try:
    ns["main"](None)
  finally:
    ns.update(originals)
  target = os.path.join(out, run)
  os.makedirs(target, exist_ok=True)
  for letter in kept:
    shutil.copyfile(os.path.join(run_dir, OUTPUT_FILES[letter]),
                    os.path.join(target, OUTPUT_FILES[letter]))
  batches = orig.estimators[-1].predict_batches
  print("%s: %d examples, %d features, %d batches" % (
      run, len(seen["examples"]), len(seen["features"]), batches))
  if not with_features:
    return
  summary = collections.OrderedDict([("num_examples", len(seen["examples"]))])
  summary.update(feature_summary(seen["features"], False))
  summary["eval.tf_record"] = record_digests(orig.tf, os.path.join(run_dir, "eval.tf_record"),
                                             scratch)
  summary["predict_batches"] = batches
  summary["flags"] = flags
  write_json(os.path.join(target, "features.json"), summary)
  results = seen["results"]
  np.savez_compressed(
      os.path.join(target, "raw_results.npz"),
      unique_ids=np.array([r.unique_id for r in results], np.int64),
      start_logits=np.array([r.start_logits for r in results], np.float32),
      end_logits=np.array([r.end_logits for r in results], np.float32))


def make_train_features(orig, tokenizer, out, scratch):
  everything = collections.OrderedDict([(
      "about", "convert_examples_to_features(is_training=True) of the original on the "
               "train-format files; see README.md")])
  for key, (name, v2, lengths) in TRAIN_SETS.items():
    path = input_path(name)
    examples, warnings = orig.read_examples(path, True, v2)
    kept = {e.qas_id for e in examples}
    questions = questions_in(path)
    entry = collections.OrderedDict([
        ("train_file", name), ("version_2_with_negative", v2), ("max_seq_length", lengths[0]),
        ("doc_stride", lengths[1]), ("max_query_length", lengths[2]),
        ("num_questions_in_file", len(questions)), ("num_examples", len(examples)),
        ("skipped_qas_ids", [q for q in questions if q not in kept]),
        ("skip_warnings", warnings)])
    shuffled = list(examples)
    random.Random(12345).shuffle(shuffled)  # What main does before converting.
    for order, group in (("file_order", examples), ("main_shuffled", shuffled)):
      record = os.path.join(scratch, "train.tf_record")
      writer = orig.FeatureWriter(record, is_training=True)
      features = orig.features(group, tokenizer, lengths, True, writer)
      writer.close()
      part = collections.OrderedDict([("num_examples", len(group))])
      part.update(feature_summary(features, True, per_feature=order == "file_order"))
      if order == "file_order":
        part["positions_columns"] = POSITIONS_COLUMNS
        part["positions"] = [[f.unique_id, f.start_position, f.end_position, f.is_impossible]
                             for f in features]
      part["train.tf_record"] = record_digests(orig.tf, record, scratch)
      if order == "main_shuffled":
        part["qas_id_order"] = [e.qas_id for e in group]
      os.remove(record)
      entry[order] = part
    everything[key] = entry
    print("train features %s: %d examples, %d features" % (
        key, len(examples), entry["file_order"]["num_features"]))
  write_json(os.path.join(out, "train_features", "train_features.json"), everything)


class LearningRateTap(object):
  """Keeps the learning-rate tensor create_optimizer hands its optimizer (it
  is not returned), by wrapping the optimizer's __init__ for the call."""

  def __init__(self, optimization):
    self._class = optimization.AdamWeightDecayOptimizer
    self.learning_rate = None

  def __enter__(self):
    init = self._init = self._class.__init__
    tap = self

    def recording_init(optimizer, learning_rate, *args, **kwargs):
      tap.learning_rate = learning_rate
      init(optimizer, learning_rate, *args, **kwargs)

    self._class.__init__ = recording_init
    return self

  def __exit__(self, *unused):
    self._class.__init__ = self._init


def split_train_op(train_op, global_step):
  """create_optimizer's train_op groups the update with the global-step
  increment without ordering them; returns (update ops, increment op) so
  that they can be run one after the other (the README explains why)."""
  def is_increment(op):
    return (op.type in ("Assign", "AssignVariableOp")
            and op.inputs[0].op.name == global_step.op.name)
  frontier = list(train_op.control_inputs)
  while not any(is_increment(op) for op in frontier):
    expanded = []
    for op in frontier:  # tf.group may nest its NoOps (one per device).
      expanded.extend(op.control_inputs if op.type == "NoOp" else [op])
    if expanded == frontier:
      raise RuntimeError("no global-step increment under %s" % train_op.name)
    frontier = expanded
  increments = [op for op in frontier if is_increment(op)]
  if len(increments) != 1:
    raise RuntimeError("%d global-step increments under %s" % (len(increments), train_op.name))
  return [op for op in frontier if not is_increment(op)], increments[0]


def make_train_steps(orig, tokenizer, checkpoint, out):
  """The original model_fn in TRAIN mode (its loss and create_optimizer),
  3 steps on the first 24 training features of v1.1, dropout off."""
  tf, modeling = orig.tf, orig.modeling
  examples, _ = orig.read_examples(input_path(V11_TRAIN), True, False)
  features = orig.features(examples, tokenizer, (128, 64, 24), True)[:24]
  columns = collections.OrderedDict([
      ("unique_ids", "unique_id"), ("input_ids", "input_ids"), ("input_mask", "input_mask"),
      ("segment_ids", "segment_ids"), ("start_positions", "start_position"),
      ("end_positions", "end_position")])
  arrays = {name: np.array([getattr(f, attribute) for f in features], np.int32)
            for name, attribute in columns.items()}
  with open(CONFIG) as f:
    values = json.load(f)
  values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  config = modeling.BertConfig.from_dict(values)
  with tf.Graph().as_default():
    global_step = tf.train.get_or_create_global_step()
    batch = tf.data.make_one_shot_iterator(
        tf.data.Dataset.from_tensor_slices(arrays).batch(8)).get_next()
    model_fn = orig.model_fn_builder(config, checkpoint, 2e-3, 6, 2, False, False)
    with LearningRateTap(orig.optimization) as tap:
      spec = model_fn(batch, None, orig.tf_stand_in.estimator.ModeKeys.TRAIN,
                      {"batch_size": 8})
    updates, increment = split_train_op(spec.train_op, global_step)
    learning_rates, losses = [], []
    with tf.Session() as session:
      session.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
      for _ in range(3):
        learning_rates.append(session.run(tap.learning_rate))
        losses.append(session.run([spec.loss, updates])[0])
        session.run(increment)
      step = session.run(global_step)
      variables = {v.op.name: session.run(v) for v in tf.trainable_variables()}
  digest = sha256_hex(b"".join(np.ascontiguousarray(arrays[name]).tobytes() for name in (
      "input_ids", "input_mask", "segment_ids", "start_positions", "end_positions")))
  content = collections.OrderedDict([
      ("learning_rates", np.array(learning_rates, np.float32)),
      ("losses", np.array(losses, np.float32)),
      ("global_step", np.array(step, np.int64)),
      ("inputs_sha256", np.array(digest))])
  for name in sorted(variables):
    value = variables[name]
    if name == "bert/embeddings/word_embeddings":
      rows = sorted(set(np.unique(arrays["input_ids"]).tolist()) |
                    set(range(0, value.shape[0], 97)))
      rows = np.array(rows, np.int32)
      content["rows/" + name] = rows
      content["var_rows/" + name] = value[rows]
    else:
      content["var/" + name] = value
  np.savez(os.path.join(out, "train_steps.npz"), **content)
  print("train_steps.npz: losses %s" % np.array(losses, np.float32))


def make_random(orig, seed, out, scratch):
  """A random/<seed>/ folder: examples and features of its two files, and
  write_predictions on its logits, with the run's settings."""
  folder = os.path.join(COMMITTED, "random", seed)
  with open(os.path.join(folder, "reference.json"), encoding="utf-8") as f:
    settings = json.load(f)["settings"]
  v2 = settings["v2"]
  tokenizer = orig.tokenization.FullTokenizer(VOCAB, settings["do_lower_case"])
  lengths = (settings["max_seq_length"], settings["doc_stride"], settings["max_query_length"])
  reference = {"settings": settings}
  for name, is_training in (("train.json", True), ("predict.json", False)):
    examples, _ = orig.read_examples(os.path.join(folder, name), is_training, v2)
    features = orig.features(examples, tokenizer, lengths, is_training)
    reference[name] = {
        "examples_sha256": sha_of_text(json.dumps([example_row(e) for e in examples],
                                                  sort_keys=True)),
        "features_sha256": sha_of_text(json.dumps(
            [feature_row(f, is_training) for f in features], sort_keys=True)),
        "num_examples": len(examples), "num_features": len(features)}
  raw = np.load(os.path.join(folder, "raw_results.npz"))
  # As main hands them over: Python ints and lists of Python floats.
  results = [orig.RawResult(int(u), [float(x) for x in s], [float(x) for x in e])
             for u, s, e in zip(raw["unique_ids"], raw["start_logits"], raw["end_logits"])]
  orig.set_flags(version_2_with_negative=v2,
                 null_score_diff_threshold=settings["null_score_diff_threshold"],
                 verbose_logging=False)
  target = os.path.join(out, "random", seed)
  os.makedirs(target, exist_ok=True)
  run_dir = os.path.join(scratch, "random_" + seed)
  os.makedirs(run_dir)
  names = ["predictions.json", "nbest_predictions.json", "null_odds.json"]
  orig.write_predictions(examples, features, results, settings["n_best_size"],
                         settings["max_answer_length"], settings["do_lower_case"],
                         *[os.path.join(run_dir, n) for n in names])
  for name in names[:3 if v2 else 2]:
    shutil.copyfile(os.path.join(run_dir, name), os.path.join(target, name))
  write_json(os.path.join(target, "reference.json"), reference, sort_keys=True, newline=False)
  print("random/%s: %d predict features" % (seed, len(features)))


# --- Comparison -------------------------------------------------------------------

def close_json(a, b, path="$"):
  """None if `a` and `b` have the same structure, keys in the same order,
  strings and other values equal and floats within FLOAT_TOLERANCE; else
  where they part. Also returns the largest float difference."""
  if isinstance(a, dict) and isinstance(b, dict):
    if list(a) != list(b):
      return "%s: keys differ" % path, 0.0
    worst = 0.0
    for k in a:
      problem, diff = close_json(a[k], b[k], "%s[%r]" % (path, k))
      if problem:
        return problem, diff
      worst = max(worst, diff)
    return None, worst
  if isinstance(a, list) and isinstance(b, list):
    if len(a) != len(b):
      return "%s: %d items, committed %d" % (path, len(a), len(b)), 0.0
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
      problem, diff = close_json(x, y, "%s[%d]" % (path, i))
      if problem:
        return problem, diff
      worst = max(worst, diff)
    return None, worst
  if isinstance(a, float) and isinstance(b, float):
    diff = abs(a - b)
    if diff > FLOAT_TOLERANCE:
      return "%s: %r vs committed %r" % (path, a, b), diff
    return None, diff
  if a != b or type(a) is not type(b):
    return "%s: %r vs committed %r" % (path, a, b), 0.0
  return None, 0.0


def compare_npz(ours, theirs, tolerance):
  a, b = np.load(ours), np.load(theirs)
  problems, worst = [], 0.0
  if list(a.files) != list(b.files):
    problems.append("keys differ: only ours %s, only committed %s" % (
        sorted(set(a.files) - set(b.files)), sorted(set(b.files) - set(a.files))))
  for key in b.files:
    if key not in a.files:
      continue
    x, y = a[key], b[key]
    if x.dtype != y.dtype or x.shape != y.shape:
      problems.append("%s: %s%s vs committed %s%s" % (key, x.dtype, x.shape, y.dtype, y.shape))
    elif x.dtype.kind == "f":
      diff = float(np.abs(x.astype(np.float64) - y).max()) if x.size else 0.0
      worst = max(worst, diff)
      if diff > tolerance:
        problems.append("%s: max difference %.3g > %g" % (key, diff, tolerance))
    elif not np.array_equal(x, y):
      problems.append("%s: values differ" % key)
  return problems, worst


def is_input(relative):
  """Committed files that are inputs of the regeneration, not outputs."""
  parts = relative.split(os.sep)
  if parts[0] == "random":
    return parts[-1] in ("train.json", "predict.json", "raw_results.npz")
  return relative in ("README.md", "edge.json", "heads.npz")


# Files whose numbers are the model's float32 outputs (see FLOAT_TOLERANCE).
MODEL_OUTPUT_JSON = ("nbest_predictions.json", "null_odds.json")


def check(out, random_seeds):
  """Compares the remade files with the committed ones; returns the number
  of differences."""
  def files_under(root):
    found = set()
    for directory, _, files in os.walk(root):
      for name in files:
        found.add(os.path.relpath(os.path.join(directory, name), root))
    return found
  remade, committed = files_under(out), files_under(COMMITTED)
  failures = 0
  for relative in sorted(committed | remade):
    ours, theirs = os.path.join(out, relative), os.path.join(COMMITTED, relative)
    if relative not in remade:
      parts = relative.split(os.sep)
      if parts[0] == "random" and parts[1] not in random_seeds:
        print("  skipped   %s (seed not run)" % relative)
      elif is_input(relative):
        print("  input     %s (not remade)" % relative)
      else:
        print("  MISSING   %s (committed, not remade)" % relative)
        failures += 1
      continue
    if relative not in committed:
      print("  EXTRA     %s (no committed file)" % relative)
      failures += 1
      continue
    in_random = relative.startswith("random" + os.sep)
    if relative.endswith(".npz"):
      tolerance = 0.0 if relative == "heads.npz" else (
          STEP_TOLERANCE if relative == "train_steps.npz" else FLOAT_TOLERANCE)
      problems, worst = compare_npz(ours, theirs, tolerance)
      if problems:
        failures += 1
        print("  DIFFERS   %s: %s" % (relative, "; ".join(problems)))
      else:
        print("  %s %s (%s)" % ("same     " if worst == 0 else "close    ", relative,
                                 "arrays identical" if worst == 0 else
                                 "integers identical, floats within %.3g" % worst))
      continue
    with open(ours, "rb") as f:
      mine = f.read()
    with open(theirs, "rb") as f:
      reference = f.read()
    if mine == reference:
      print("  same      %s (bytes)" % relative)
      continue
    if relative.endswith(MODEL_OUTPUT_JSON) and not in_random:
      problem, worst = close_json(json.loads(mine), json.loads(reference))
      if problem is None:
        print("  close     %s (texts and order identical, numbers within %.3g)" % (
            relative, worst))
        continue
    else:
      problem = "bytes differ"
    failures += 1
    print("  DIFFERS   %s: %s" % (relative, problem))
  return failures


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="a checkout of google-research/bert")
  parser.add_argument("--output_dir", help="where to write (default: a new temporary directory)")
  parser.add_argument("--check", action="store_true",
                      help="compare with tests/data/squad_reference; exit 1 on a difference")
  parser.add_argument("--remake_heads", action="store_true",
                      help="also draw heads.npz again from its seed (default: read the "
                           "committed one)")
  parser.add_argument("--random", default=None,
                      help="comma-separated seeds of random/ to remake (default: all)")
  parser.add_argument("--verbose", action="store_true", help="the original's INFO logging")
  args = parser.parse_args()

  seeds = sorted(os.listdir(os.path.join(COMMITTED, "random")), key=int)
  if args.random is not None:
    wanted = [s for s in args.random.split(",") if s]
    unknown = set(wanted) - set(seeds)
    if unknown:
      sys.exit("no random/%s in %s" % (", ".join(sorted(unknown)), COMMITTED))
    seeds = wanted
  out = os.path.abspath(args.output_dir or tempfile.mkdtemp(prefix="squad_reference_"))
  os.makedirs(out, exist_ok=True)
  if os.listdir(out):
    sys.exit("--output_dir=%s is not empty" % out)
  tf, tokenization, modeling, optimization, code = original.load(args.original_dir)
  scratch = tempfile.mkdtemp(prefix="squad_reference_scratch_")
  try:
    orig = Original(tf, (tokenization, modeling, optimization), args.original_dir, args.verbose)
    if args.remake_heads:
      heads = draw_heads()
      np.savez(os.path.join(out, "heads.npz"), **heads)
    else:
      heads = collections.OrderedDict(np.load(os.path.join(COMMITTED, "heads.npz")))
    checkpoint = write_checkpoint(tf, heads, os.path.join(scratch, "squad_init", "model.ckpt"))
    tokenizer = tokenization.FullTokenizer(VOCAB, do_lower_case=True)

    make_examples(orig, out)
    print("examples.json written")
    for run in PREDICT_RUNS:
      make_predict_run(orig, run, checkpoint, out, scratch)
    make_train_features(orig, tokenizer, out, scratch)
    make_train_steps(orig, tokenizer, checkpoint, out)
    for seed in seeds:
      make_random(orig, seed, out, scratch)
  finally:
    shutil.rmtree(scratch, ignore_errors=True)
    original.cleanup(code)
  print("Written to %s" % out)
  if args.check:
    print("Compared with %s:" % COMMITTED)
    failures = check(out, seeds)
    if failures:
      print("%d file(s) differ." % failures)
      sys.exit(1)
    print("Everything remade matches.")


if __name__ == "__main__":
  main()
