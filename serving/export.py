"""What every export shares: the feature inputs, tracing with plain ops,
writing the SavedModel whole, and the check that TF Serving can run it.

Each task's SavedModel is made by its own module (serving/classifier.py,
serving/multiple_choice.py, serving/squad.py), with its signatures listed in
that module's docstring. Models are traced with plain TensorFlow ops (no XLA
kernels: stock `tensorflow_model_server` runs XLA-compiled functions only
behind an experimental flag); only tensorflow-text's ops are needed besides
TensorFlow's own.
"""

import dataclasses

from absl import logging
import keras
import tensorflow as tf

from modeling.blocks import fused
from modeling.blocks import deferred_init
from modeling.blocks import layers
from plumbing import files
from serving import tokenizer as tokenizer_lib

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass(frozen=True)
class RequestLimits:
  """The largest request an export answers, checked inside the graph so that
  one huge request gets an error instead of the server's memory.
  `max_batch_size`: examples per request; `max_text_bytes`: UTF-8 bytes of
  any one text (texts longer than max_seq_length tokens are truncated, or
  for SQuAD windowed, as in training, so this only bounds the work)."""
  max_batch_size: int = 1024
  max_text_bytes: int = 100_000


def prepare_for_serving(model):
  """Prepares each attention layer's projections for serving
  (layers.SelfAttention.prepare_for_serving); returns (ids of the variables
  the export no longer reads, the variables it reads instead)."""
  replaced, prepared = set(), []
  for layer in model._flatten_layers():  # pylint: disable=protected-access
    if isinstance(layer, layers.SelfAttention):
      old, new = layer.prepare_for_serving()
      replaced.update(id(v) for v in old)
      prepared += new
  return replaced, prepared


class Server(tf.Module):
  """What a SavedModel holds: a model, its tokenizer, and the TensorFlow
  variables the model reads.

  The Keras model itself is not a tracked part of the module: Keras
  variables wrap TensorFlow ones, and tracking both writes each weight
  twice, once under the name TF Serving's loader restores and once under the
  name the serving functions read, so that a TF1-style session (TF
  Serving's) runs the functions on uninitialised variables. Tracking the
  wrapped variables alone keeps one name per weight.
  """

  def __init__(self, model, tokenizer, name, limits=None):
    super().__init__(name=name)
    object.__setattr__(self, "model", model)  # Not tracked (see above).
    object.__setattr__(self, "limits", limits or RequestLimits())
    replaced, prepared = prepare_for_serving(model)
    self.model_variables = [getattr(v, "value", v) for v in model.variables
                            if id(getattr(v, "value", v)) not in replaced] + prepared
    self.tokenizer = tokenizer

  def within_limits(self, **texts):
    """The request's text tensors, once checked against `limits` and for one
    text of each input per example: otherwise the call fails with an
    InvalidArgument error naming the limit or the inputs (TF Serving returns
    it to the client; the server carries on)."""
    (first_name, first), *others = texts.items()
    batch = tf.shape(first)[0]
    checks = [tf.debugging.assert_less_equal(
        batch, self.limits.max_batch_size,
        message="%s: more than %d examples in one request; send at most %d (a limit "
        "set at export by --serving_max_batch_size)" % (
            first_name, self.limits.max_batch_size, self.limits.max_batch_size))]
    for name, values in others:
      checks.append(tf.debugging.assert_equal(
          tf.shape(values)[0], batch,
          message="%s and %s: not as many of one as of the other in this request; send "
          "one of each per example" % (first_name, name)))
    for name, values in texts.items():
      checks.append(tf.debugging.assert_less_equal(
          tf.reduce_max(tf.strings.length(values)), self.limits.max_text_bytes,
          message="%s: a text longer than %d bytes; shorten it (a limit set at export "
          "by --serving_max_text_bytes)" % (name, self.limits.max_text_bytes)))
    with tf.control_dependencies(checks):
      return [tf.identity(values) for values in texts.values()]


PRECISIONS = ("float32", "bfloat16")


# /proc/cpuinfo's names of the x86 instructions that multiply in bfloat16.
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_multiplies_bfloat16(cpuinfo_path="/proc/cpuinfo"):
  """Whether this machine's CPU has bfloat16 arithmetic; None where
  `cpuinfo_path` cannot tell (not Linux, not x86)."""
  try:
    with open(cpuinfo_path, encoding="utf-8", errors="replace") as f:
      flags = next((line.split(":", 1)[1].split() for line in f
                    if line.startswith("flags")), None)
  except OSError:
    return None
  return None if flags is None else any(f in flags for f in BFLOAT16_CPU_FLAGS)


def in_precision(model, precision, **serving_config):
  """`model` itself for "float32"; for "bfloat16", the model rebuilt from
  its config under Keras's bfloat16 policy, holding the model's weights in bfloat16:
  the SavedModel stores them so (half the bytes to read per request) and
  its matrix products run in bfloat16. Embeddings, layer norms and the
  attention softmax stay float32, as in mixed-precision training.
  `serving_config`: settings of the model's config that serving wants
  otherwise (a window classifier trained under XLA gathers its windows
  when served); a float32 model is rebuilt, in its own dtype policy, only
  if one differs."""
  if precision not in PRECISIONS:
    raise ValueError("precision must be one of %s, not %r." % (PRECISIONS, precision))
  config = model.get_config()
  changed = {k: v for k, v in serving_config.items() if config.get(k) != v}
  if precision == "float32" and not changed:
    return model
  if precision == "bfloat16" and cpu_multiplies_bfloat16() is False:
    logging.warning(
        "This CPU has no bfloat16 arithmetic (%s): served on it, the bfloat16 export "
        "answers slower than a float32 one (docs/serving.md). It pays on CPUs that "
        "have it, and on accelerators.", " or ".join(BFLOAT16_CPU_FLAGS))
  previous = keras.config.dtype_policy()
  keras.config.set_dtype_policy(model.dtype_policy if precision == "float32" else precision)
  try:
    with deferred_init.deferred_initialization() as deferred:  # Every weight is copied below.
      copy = type(model).from_config(dict(config, **changed))
  finally:
    keras.config.set_dtype_policy(previous)
  targets = copy.original_names()
  for name, variable in model.original_names().items():
    targets[name].assign(tf.cast(variable, targets[name].dtype))
  deferred.initialize(except_for=targets.values())
  return copy


# TensorFlow's x86 kernels (oneDNN) lay a float32 weight matrix out by the
# rows of the product: one layout for 7-80 rows, another beyond 80 (and a
# third for 1-6). A server run with TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1
# (docs/serving.md) converts each weight once, to the layout of its product's
# first call, and then again on every call that wants the other one. So the
# model is traced twice, one copy for products of up to LAYOUT_ROWS rows and
# one for longer, and runs at MIN_LENGTH tokens at least: each copy of each
# product sees one layout.
LAYOUT_ROWS = 80
MIN_LENGTH = 8


def run_model(model, features, token_outputs=()):
  """model(features) as served: in the copy for the batch's number of rows,
  at MIN_LENGTH tokens at least (padding masked out); `token_outputs`, the
  outputs with one value per token, are cut back to the features' length."""
  width = tf.shape(features["input_ids"])[-1]
  missing = tf.maximum(MIN_LENGTH - width, 0)
  features = {name: tf.pad(features[name], [[0, 0]] * (features[name].shape.rank - 1)
                           + [[0, missing]])
              for name in FEATURE_NAMES}
  run = lambda: model(features, training=False)
  outputs = tf.cond(tf.size(features["input_ids"]) <= LAYOUT_ROWS, run, run)
  return {name: value[..., :width] if name in token_outputs else value
          for name, value in outputs.items()}


def text_spec(name):
  return tf.TensorSpec([None], tf.string, name=name)


def feature_specs(rank=2):
  """input_ids, input_mask, segment_ids: int32 of `rank` dimensions."""
  return [tf.TensorSpec([None] * rank, tf.int32, name=n) for n in FEATURE_NAMES]


def features_function(outputs_fn, rank=2):
  """The `serve_features` signature's function: the three feature tensors in,
  outputs_fn({name: tensor}) out."""
  @tf.function(input_signature=feature_specs(rank))
  def serve_features(input_ids, input_mask, segment_ids):
    return outputs_fn({"input_ids": input_ids, "input_mask": input_mask,
                       "segment_ids": segment_ids})
  return serve_features


def graph_tokenizer(vocab_file, do_lower_case):
  return tokenizer_lib.GraphTokenizer(vocab_file, do_lower_case=do_lower_case)


def concrete_functions(functions):
  """{signature name: tf.function} traced for serving (plain ops, no
  gradient functions, the projections prepared by Server), as concrete
  functions for tf.saved_model.save."""
  with fused.serving():
    return {name: function.get_concrete_function() for name, function in functions.items()}


def save(server, export_dir, signatures):
  """Writes the SavedModel whole or not at all (plumbing.files); returns export_dir."""
  with files.atomic_directory(export_dir) as temporary:
    tf.saved_model.save(server, temporary, signatures=signatures)
  return export_dir


def xla_functions(export_dir):
  """Names of the functions in a SavedModel that must be XLA-compiled (none
  should be: stock TF Serving would refuse them)."""
  from tensorflow.core.protobuf import saved_model_pb2
  proto = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(export_dir.rstrip("/") + "/saved_model.pb", "rb") as f:
    proto.ParseFromString(f.read())
  names = []
  for meta_graph in proto.meta_graphs:
    library = meta_graph.graph_def.library
    for function in library.function:
      attrs = dict(function.attr)
      if attrs.get("_XlaMustCompile") and attrs["_XlaMustCompile"].b:
        names.append(function.signature.name)
      for node in function.node_def:
        if node.attr.get("_XlaMustCompile") and node.attr["_XlaMustCompile"].b:
          names.append("%s/%s" % (function.signature.name, node.name))
  return names
