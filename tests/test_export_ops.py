"""Stock `tensorflow_model_server` can run every kind of export: each
SavedModel's ops, in its main graph and in every function of its library,
are core TensorFlow's or tensorflow-text's ops the server links, and no
function must be compiled by XLA (docs/serving.md#what-a-stock-server-needs)."""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from conftest import REPO_ROOT
import tiny_exports

# The tensorflow-text ops `tensorflow_model_server` links: tensorflow/serving
# lists `@org_tensorflow_text//tensorflow_text:ops_lib` among its
# SUPPORTED_TENSORFLOW_OPS (tensorflow_serving/model_servers/BUILD), and
# these are the ops the targets of that library (tensorflow_text/BUILD)
# register at the tensorflow/text release the server pins
# (tensorflow_serving/workspace.bzl). docs/serving.md names the releases.
TF_SERVING_TEXT_OPS = frozenset({
    "CaseFoldUTF8", "ConstrainedSequence", "FastBertNormalize",
    "FastWordpieceTokenizeWithOffsets", "FindSourceOffsets", "MaxSpanningTree",
    "NormalizeUTF8", "NormalizeUTF8WithOffsetsMap", "PhraseTokenize", "RegexSplitWithOffsets",
    "RougeL", "SentenceFragments", "SentenceFragmentsV2", "SentencepieceDetokenizeOp",
    "SentencepieceIdToStringOp", "SentencepieceOp", "SentencepieceStringToIdOp",
    "SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp", "SentencepieceVocabSizeOp",
    "SplitMergeTokenizeWithOffsets", "TFText>BoiseTagsToOffsets", "TFText>ByteSplitByOffsets",
    "TFText>ByteSplitWithOffsets", "TFText>FastSentencepieceDetokenize",
    "TFText>FastSentencepieceTokenize", "TFText>FastWordpieceDetokenize",
    "TFText>NgramsStringJoin", "TFText>OffsetsToBoiseTags", "TFText>PhraseDetokenize",
    "TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim", "TFText>Utf8Binarize",
    "TFText>WhitespaceTokenizeWithOffsetsV2", "TokenizerFromLogits",
    "UnicodeScriptTokenizeWithOffsets", "WhitespaceTokenizeWithOffsets",
    "WordpieceTokenizeWithOffsets",
})

# Core ops whose kernels are Python code: registered in any TensorFlow, run
# only in a Python process, never in a server.
PYTHON_KERNEL_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def is_xla_op(op):
  """Ops that exist only for XLA to compile or launch (XlaLaunch,
  _XlaCompile, _XlaRun, the tf2xla ops): a stock server runs them only
  behind its experimental --xla_cpu_compilation_enabled."""
  return "Xla" in op


# The ops TensorFlow registers before and after tensorflow-text is imported,
# read in a process that has imported nothing else.
_REGISTERED_OPS = r"""
import json, sys
import tensorflow
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session

def registered():
  ops = op_def_pb2.OpList()
  ops.ParseFromString(pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList()))
  return {op.name for op in ops.op}

assert "tensorflow_text" not in sys.modules
core = registered()
import tensorflow_text
print(json.dumps({"core": sorted(core), "text": sorted(registered() - core)}))
"""


def read_saved_model(export_dir):
  proto = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    proto.ParseFromString(f.read())
  return proto


def _graphs(proto):
  """(where, nodes, the function's attributes or None) for each meta graph's
  main graph and each function of its library (which holds every function
  a call names, at any depth)."""
  for meta_graph in proto.meta_graphs:
    tags = ",".join(meta_graph.meta_info_def.tags)
    graph = meta_graph.graph_def
    yield "%s: main graph" % tags, graph.node, None
    for function in graph.library.function:
      yield "%s: %s" % (tags, function.signature.name), function.node_def, function.attr


def ops_by_graph(proto):
  """{where: set of op types} of a SavedModel (read_saved_model); a node
  that calls a library function by name is a call, not an op."""
  functions = {f.signature.name for m in proto.meta_graphs for f in m.graph_def.library.function}
  return {where: {node.op for node in nodes} - functions for where, nodes, _ in _graphs(proto)}


def xla_compiled(proto):
  """Where a SavedModel needs XLA: functions and call nodes marked
  _XlaMustCompile (tf.function(jit_compile=True)), and XLA's own ops."""
  must_compile = lambda attrs: "_XlaMustCompile" in attrs and attrs["_XlaMustCompile"].b
  found = []
  for where, nodes, attrs in _graphs(proto):
    if attrs is not None and must_compile(attrs):
      found.append("%s (_XlaMustCompile)" % where)
    for node in nodes:
      if must_compile(node.attr):
        found.append("%s: node %s (_XlaMustCompile)" % (where, node.name))
      elif is_xla_op(node.op):
        found.append("%s: node %s (%s)" % (where, node.name, node.op))
  return found


def ops_a_server_lacks(proto, core_ops):
  """{where: sorted op types} that neither core TensorFlow (`core_ops`,
  without Python kernels and XLA) nor TF_SERVING_TEXT_OPS provide."""
  served = {op for op in core_ops if op not in PYTHON_KERNEL_OPS and not is_xla_op(op)}
  lacking = {where: sorted(ops - served - TF_SERVING_TEXT_OPS)
             for where, ops in ops_by_graph(proto).items()}
  return {where: ops for where, ops in lacking.items() if ops}


@pytest.fixture(scope="module")
def registered_ops():
  """{"core": TensorFlow's own op names, "text": tensorflow-text's}."""
  result = subprocess.run([sys.executable, "-c", _REGISTERED_OPS], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  return {name: set(ops) for name, ops in json.loads(result.stdout.splitlines()[-1]).items()}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
  """{kind: the SavedModel proto} of one export of every kind."""
  written = tiny_exports.write(tmp_path_factory.mktemp("exports"), tiny_exports.makers())
  return {kind: read_saved_model(export_dir) for kind, export_dir in written.items()}


def test_every_kind_of_export_holds_only_ops_a_stock_server_has(exports, registered_ops):
  lacking = {kind: ops_a_server_lacks(proto, registered_ops["core"])
             for kind, proto in exports.items()}
  assert not any(lacking.values()), lacking
  # Not vacuously true: the lists hold the model's products, which live in
  # nested functions, and the tokenizer's tensorflow-text op.
  for kind, proto in exports.items():
    ops = set().union(*ops_by_graph(proto).values())
    assert {"MatMul", "WordpieceTokenizeWithOffsets"} <= ops, kind


def test_no_export_needs_xla(exports):
  assert {kind: xla_compiled(proto) for kind, proto in exports.items()} == {
      kind: [] for kind in exports}


def test_docs_name_the_text_ops_the_exports_need(exports):
  """docs/serving.md says which tensorflow-text ops a server must link."""
  used = set().union(*(ops for proto in exports.values()
                       for ops in ops_by_graph(proto).values())) & TF_SERVING_TEXT_OPS
  with open(os.path.join(REPO_ROOT, "docs", "serving.md"), encoding="utf-8") as f:
    docs = f.read()
  section = docs[docs.index("## What a stock server needs"):]
  section = section[:section.index("\n## ", 1)]
  assert used and all("`%s`" % op in section for op in used), used


def test_linked_text_ops_are_tensorflow_texts(registered_ops):
  """Every name in TF_SERVING_TEXT_OPS is an op tensorflow-text registers
  (a misspelt name would allow nothing)."""
  assert TF_SERVING_TEXT_OPS <= registered_ops["text"]
  assert not TF_SERVING_TEXT_OPS & registered_ops["core"]


@pytest.fixture(scope="module")
def unservable(tmp_path_factory):
  """A SavedModel with what a stock server refuses, each inside a nested
  function: a jit_compile=True function and a Python kernel."""
  @tf.function(jit_compile=True)
  def compiled(x):
    return tf.sin(x)

  @tf.function
  def in_python(x):
    return tf.py_function(lambda v: v * 2, [x], tf.float32)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
  def serve(x):
    return {"y": compiled(x) + in_python(x)}

  module = tf.Module()
  module.serve = serve
  export_dir = str(tmp_path_factory.mktemp("unservable") / "1")
  tf.saved_model.save(module, export_dir, signatures={"serving_default": serve})
  return read_saved_model(export_dir)


def test_checks_find_an_xla_function_and_a_python_kernel(unservable, registered_ops):
  by_graph = ops_by_graph(unservable)
  assert any("Sin" in ops for ops in by_graph.values())  # Inside the compiled function.
  assert {"PartitionedCall", "StatefulPartitionedCall"} & set().union(*by_graph.values())
  compiled = xla_compiled(unservable)
  assert any(where.endswith("(_XlaMustCompile)") and "compiled" in where
             for where in compiled), compiled
  assert any("node" in where and "_XlaMustCompile" in where for where in compiled), compiled
  assert sorted(set().union(*ops_a_server_lacks(
      unservable, registered_ops["core"]).values())) == ["EagerPyFunc"]


def test_checks_find_xla_ops_and_ops_no_server_registers(unservable, registered_ops):
  """An XlaLaunch node and an op of no library, written into a function."""
  edited = saved_model_pb2.SavedModel()
  edited.CopyFrom(unservable)
  function = next(f for f in edited.meta_graphs[0].graph_def.library.function
                  if "Sin" in {node.op for node in f.node_def})
  function.node_def.add(name="launch", op="XlaLaunch")
  function.node_def.add(name="custom", op="SomeoneElsesOp")
  where = "serve: %s" % function.signature.name
  assert "%s: node launch (XlaLaunch)" % where in xla_compiled(edited)
  assert ops_a_server_lacks(edited, registered_ops["core"])[where] == [
      "SomeoneElsesOp", "XlaLaunch"]
