"""The classifier SavedModel: loaded in a fresh process with TensorFlow and
tensorflow-text only (also as TF Serving loads it: a TF1 session that
restores the variables by name), its three signatures give the Python
pipeline's features and probabilities; it holds no XLA-compiled function."""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, data_file, shared_path
from data_prep import tokenization
import modeling
from serving import classifier as serving_classifier
from serving import export
from tasks.classification import features as classifier_features
from tasks.classification import glue
from classifier_runs import CONFIG, UNCASED, task_checkpoint

MAX_SEQ_LENGTH = 48

# Texts that exercise the tokenizer's special cases inside the graph.
STRESS_PAIRS = [
    ("Héllo, WORLD!!  naïve café", "ΑΣ ΟΔΟΣ. Σ"),
    ("中文字符和English混合", ""),
    ("tab\there\u00a0nbsp\u2028line\u200bzero-width", "control\x07char and \ufffd replacement"),
    ("x" * 205 + " short", "ﬁ ligature Ⅻ ½ ｆｕｌｌ"),
    ("", "only b"),
    ("a " * 80, "b " * 80),
]

_FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text
export_dir, pairs_file, out_file = sys.argv[1:4]
with open(pairs_file, encoding="utf-8") as f:
  pairs = json.load(f)
text_a = tf.constant([a for a, _ in pairs])
text_b = tf.constant([b for _, b in pairs])
loaded = tf.saved_model.load(export_dir)
sigs = loaded.signatures
# Other requests first: a kernel that kept something of an earlier request
# (as oneDNN keeps weights under TF_ONEDNN_ASSUME_FROZEN_WEIGHTS) shows here.
for signature in ("serving_default", "tokenize"):
  sigs[signature](text_a=text_b, text_b=text_a)
sigs["serve_features"](**sigs["tokenize"](text_a=text_b[::-1], text_b=text_a[::-1]))
features = sigs["tokenize"](text_a=text_a, text_b=text_b)
served = sigs["serving_default"](text_a=text_a, text_b=text_b)
# One pair per request: products of at most 80 rows (the model's other copy).
one_by_one = np.concatenate([
    sigs["serving_default"](text_a=text_a[i:i + 1], text_b=text_b[i:i + 1])[
        "probabilities"].numpy() for i in range(len(pairs))])
from_features = sigs["serve_features"](**features)
# As tensorflow_model_server loads it: the graph, the variables restored by
# their names, a session running the signature.
with tf.Graph().as_default(), tf.compat.v1.Session() as session:
  meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
  signature = meta.signature_def["serving_default"]
  session.run(signature.outputs["probabilities"].name,
              {signature.inputs["text_a"].name: [b for _, b in pairs],
               signature.inputs["text_b"].name: [a for a, _ in pairs]})
  session_probabilities = session.run(
      signature.outputs["probabilities"].name,
      {signature.inputs["text_a"].name: [a for a, _ in pairs],
       signature.inputs["text_b"].name: [b for _, b in pairs]})
ours = [m for m in sys.modules
        if m.split(".")[0] in ("modeling", "data_prep", "serving", "tasks", "plumbing")]
np.savez(out_file, project_modules=np.array(len(ours)),
         session_probabilities=session_probabilities,
         labels=served["label"].numpy().astype(str),
         probabilities=served["probabilities"].numpy(), one_by_one=one_by_one,
         feature_probabilities=from_features["probabilities"].numpy(),
         **{k: v.numpy() for k, v in features.items()})
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  directory = tmp_path_factory.mktemp("export")
  model = modeling.BertClassifier(modeling.BertConfig.from_json_file(CONFIG), num_labels=2)
  modeling.load_checkpoint(model, task_checkpoint(directory, "mrpc"), log=False)
  export_dir = str(directory / "savedmodel")
  serving_classifier.export_classifier(model, export_dir, data_file(UNCASED), do_lower_case=True,
                                       max_seq_length=MAX_SEQ_LENGTH, label_list=["0", "1"])
  return model, export_dir


# "1": as docs/serving.md advises serving bfloat16 exports (oneDNN keeps each
# weight matrix in its own layout after the first request; the caching is
# the same code for float32).
@pytest.mark.parametrize("frozen_weights", ["0", "1"])
def test_fresh_process_gets_the_python_pipeline(exported, tmp_path, frozen_weights):
  model, export_dir = exported
  examples = glue.MrpcProcessor().get_dev_examples(
      shared_path("checks/classifier/MRPC"))[:40]
  pairs = [(e.text_a, e.text_b) for e in examples] + STRESS_PAIRS
  pairs_file = tmp_path / "pairs.json"
  pairs_file.write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")
  out_file = str(tmp_path / "out.npz")
  result = subprocess.run(
      [sys.executable, "-c", _FRESH_PROCESS, export_dir, str(pairs_file), out_file],
      cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH="",
               TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=frozen_weights))
  assert result.returncode == 0, result.stderr[-3000:]
  served = dict(np.load(out_file))
  assert int(served["project_modules"]) == 0

  tokenizer = tokenization.FullTokenizer(data_file(UNCASED), do_lower_case=True)
  features = [classifier_features.convert_single_example(
      i, classifier_features.InputExample("x", a, b, "0"), ["0", "1"], MAX_SEQ_LENGTH, tokenizer)
      for i, (a, b) in enumerate(pairs)]
  for name in ("input_ids", "input_mask", "segment_ids"):
    expected = np.array([getattr(f, name) for f in features])
    mismatched = [pairs[i] for i in np.nonzero((served[name] != expected).any(1))[0]]
    assert not mismatched, (name, mismatched[:3])

  inputs = {k: tf.constant(served[k]) for k in ("input_ids", "input_mask", "segment_ids")}
  probabilities = tf.nn.softmax(model(inputs, training=False)["logits"]).numpy()
  np.testing.assert_allclose(served["probabilities"], probabilities, rtol=0, atol=1e-5)
  np.testing.assert_allclose(served["feature_probabilities"], probabilities, rtol=0, atol=1e-5)
  np.testing.assert_allclose(served["one_by_one"], probabilities, rtol=0, atol=1e-5)
  np.testing.assert_allclose(served["session_probabilities"], probabilities, rtol=0, atol=1e-5)
  assert served["labels"].tolist() == [str(i) for i in probabilities.argmax(1)]


def test_export_is_servable_without_xla(exported):
  _, export_dir = exported
  assert export.xla_functions(export_dir) == []
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  result = subprocess.run([cli, "show", "--dir", export_dir, "--tag_set", "serve"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-2000:]
  for signature in ("serving_default", "serve_features", "tokenize"):
    assert signature in result.stdout


def test_export_holds_no_gradient_function_and_each_weight_once(exported):
  """Serving runs no backward pass: a gradient function in the SavedModel is
  dead weight that loading warns about. The query, key and value
  projections are stored as the one product the export runs, not also
  apart."""
  model, export_dir = exported
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  proto = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    proto.ParseFromString(f.read())
  functions = [f.signature.name for graph in proto.meta_graphs
               for f in graph.graph_def.library.function]
  assert functions and not [name for name in functions if "grad" in name]
  stored = tf.train.load_checkpoint(os.path.join(export_dir, "variables", "variables"))
  shapes = [s for name, s in stored.get_variable_to_shape_map().items()
            if name.startswith("model_variables/")]
  hidden = model.config.hidden_size
  assert shapes.count([hidden, 3 * hidden]) == model.config.num_hidden_layers
  assert len(shapes) == len(model.variables) - 4 * model.config.num_hidden_layers


def test_single_sentence_export_takes_text_a_only(tmp_path):
  config = modeling.BertConfig.from_json_file(CONFIG)
  model = modeling.BertClassifier(config, num_labels=1)  # A regressor, as STS-B.
  export_dir = serving_classifier.export_classifier(
      model, str(tmp_path / "single"), data_file(UNCASED), True, 16, [None],
      sentence_pair=False)
  loaded = tf.saved_model.load(export_dir)
  serve = loaded.signatures["serving_default"]
  assert set(serve.structured_input_signature[1]) == {"text_a"}
  texts = ["A sentence, Héllo!", "another one, much longer than sixteen word pieces will be"]
  score = serve(text_a=tf.constant(texts))["score"]
  # The features FullTokenizer makes (the original's packing), not the
  # export's own tokenize signature, say what the model must be run on.
  tokenizer = tokenization.FullTokenizer(data_file(UNCASED), do_lower_case=True)
  python = [classifier_features.convert_single_example(
      i, classifier_features.InputExample("x", text, None, 0.0), [None], 16, tokenizer)
            for i, text in enumerate(texts)]
  features = {name: tf.constant([getattr(f, name) for f in python])
              for name in ("input_ids", "input_mask", "segment_ids")}
  exported = loaded.signatures["tokenize"](text_a=tf.constant(texts))
  for name, value in features.items():
    np.testing.assert_array_equal(exported[name].numpy(), value.numpy(), err_msg=name)
  expected = model(features, training=False)["logits"].numpy().reshape(-1)
  np.testing.assert_allclose(score.numpy(), expected, rtol=0, atol=1e-5)


def test_features_run_at_the_longest_row(exported):
  """serve_features takes any length up to max_seq_length; the model runs
  at the longest real row either way, with the same outputs."""
  _, export_dir = exported
  serve = tf.saved_model.load(export_dir).signatures["serve_features"]
  ids = np.zeros([2, MAX_SEQ_LENGTH], np.int32)
  ids[0, :5] = [101, 2023, 2003, 1037, 102]
  ids[1, :9] = [101, 2178, 2028, 102, 1037, 2062, 2936, 2028, 102]
  mask = (ids > 0).astype(np.int32)
  segments = np.zeros_like(ids)
  segments[1, 4:9] = 1
  padded = serve(input_ids=ids, input_mask=mask, segment_ids=segments)["probabilities"]
  cut = serve(input_ids=ids[:, :9], input_mask=mask[:, :9],
              segment_ids=segments[:, :9])["probabilities"]
  np.testing.assert_allclose(padded.numpy(), cut.numpy(), rtol=0, atol=1e-6)


def test_model_runs_in_one_copy_per_weight_layout():
  """export.run_model: short products in the first traced copy, long ones in
  the second (so that a kept oneDNN weight layout always fits), at least
  MIN_LENGTH tokens seen by the model, per-token outputs cut back."""
  copies = []

  def model(features, training):
    assert not training
    copy = len(copies)  # Which trace this is: one per copy.
    copies.append(copy)
    ids = features["input_ids"]
    return {"copy": tf.constant(copy), "width": tf.shape(ids)[-1],
            "per_token": ids * 2 + features["input_mask"]}

  @tf.function(input_signature=export.feature_specs())
  def run(input_ids, input_mask, segment_ids):
    return export.run_model(model, {"input_ids": input_ids, "input_mask": input_mask,
                                    "segment_ids": segment_ids}, token_outputs=("per_token",))

  def outputs(batch, length):
    ids = np.arange(1, batch * length + 1, dtype=np.int32).reshape(batch, length)
    out = run(ids, np.ones_like(ids), np.zeros_like(ids))
    np.testing.assert_array_equal(out["per_token"].numpy(), ids * 2 + 1)
    return int(out["copy"]), int(out["width"])

  assert outputs(1, 3) == (0, export.MIN_LENGTH)
  assert outputs(2, 2) == (0, export.MIN_LENGTH)
  assert outputs(1, 80) == (0, 80)
  assert outputs(10, 8) == (0, 8)
  assert outputs(1, 81) == (1, 81)
  assert outputs(11, 8) == (1, 8)
  assert copies == [0, 1]


def test_pairs_need_as_many_texts_b_as_texts_a(exported):
  """Both sides are tokenized in one call, so a request with more of one
  side than the other must fail with a message, not pair texts wrongly."""
  _, export_dir = exported
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  for text_a, text_b in ((["a", "b", "c"], ["x"]), (["a", "b", "c"], ["x", "y", "z", "w", "v"])):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="text_a and text_b: not as many of one as of the other"):
      serve(text_a=tf.constant(text_a), text_b=tf.constant(text_b))
  served = serve(text_a=tf.constant(["a b", "c"]), text_b=tf.constant(["", "d e"]))
  assert served["probabilities"].shape == (2, 2)


def test_bfloat16_export_stores_bfloat16_weights_and_agrees(exported, tmp_path):
  model, export_dir = exported
  half = serving_classifier.export_classifier(
      model, str(tmp_path / "bf16"), data_file(UNCASED), do_lower_case=True,
      max_seq_length=MAX_SEQ_LENGTH, label_list=["0", "1"], precision="bfloat16")
  assert export.xla_functions(half) == []
  stored = collections.Counter(tf.train.load_checkpoint(os.path.join(
      half, "variables", "variables")).get_variable_to_dtype_map().values())
  names = model.original_names()
  kept = [n for n in names if "LayerNorm" in n or n.startswith("bert/embeddings/")]
  assert stored[tf.float32] == len(kept)  # Embeddings and layer norms.
  # Every matrix and bias; each layer's query, key and value projections are
  # stored as the one product the export runs (two variables for six).
  assert stored[tf.bfloat16] == len(names) - len(kept) - 4 * model.config.num_hidden_layers
  texts = dict(text_a=tf.constant([a for a, _ in STRESS_PAIRS]),
               text_b=tf.constant([b for _, b in STRESS_PAIRS]))
  full = tf.saved_model.load(export_dir).signatures["serving_default"](**texts)
  reduced = tf.saved_model.load(half).signatures["serving_default"](**texts)
  # bfloat16 keeps 8 bits of mantissa: probabilities within a few 1e-3.
  np.testing.assert_allclose(reduced["probabilities"], full["probabilities"], rtol=0, atol=0.02)


def test_bfloat16_cpu_check_reads_cpuinfo_flags(tmp_path):
  """The export warns where the CPU cannot multiply in bfloat16."""
  cases = {"flags\t\t: fpu avx2 fma avx512f avx512_bf16 sha_ni\n": True,
           "flags\t\t: fpu avx2 fma amx_bf16 amx_tile\n": True,
           "flags\t\t: fpu avx2 fma avx512f avx512_vnni\n": False,
           "processor\t: 0\nflags\t\t: fpu avx2 fma\nflags\t\t: avx512_bf16\n": False,
           "Features\t: fp asimd bf16\n": None}  # aarch64 names it otherwise.
  for i, (text, expected) in enumerate(cases.items()):
    path = tmp_path / ("cpuinfo%d" % i)
    path.write_text(text)
    assert export.cpu_multiplies_bfloat16(str(path)) is expected, text
  assert export.cpu_multiplies_bfloat16(str(tmp_path / "absent")) is None



_BAD_REQUESTS = r"""
import json, re, sys
import numpy as np
import tensorflow as tf
import tensorflow_text
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]

def ask(text_a, text_b):
  return serve(text_a=tf.constant(text_a, tf.string),
               text_b=tf.constant(text_b, tf.string))["probabilities"].numpy()

def answer(request):
  try:
    return request().tolist()
  except tf.errors.InvalidArgumentError as error:
    limit = re.search(r"assertion failed: \[([^\]]*)\]", str(error))
    return "error: " + (limit.group(1) if limit else str(error).splitlines()[0])

pairs = [("The cat sat on the mat.", "A cat."), ("Stocks fell sharply.", "Markets dropped.")]
print(json.dumps({
    "empty": answer(lambda: ask([""], [""])),
    "one_empty_pair_of_two": answer(lambda: ask(["", pairs[0][0]], ["", pairs[0][1]])),
    "garbled": answer(lambda: ask([b"The cat \xff\xfe sat \xc3( on the mat."], ["A cat."])),
    "cleaned": answer(lambda: ask(["The cat  sat ( on the mat."], ["A cat."])),
    "alone": [answer(lambda a=a, b=b: ask([a], [b])) for a, b in pairs],
    "batch_1000": answer(lambda: ask([pairs[i % 2][0] for i in range(1000)],
                                     [pairs[i % 2][1] for i in range(1000)])),
    "one_megabyte": answer(lambda: ask(["word " * 200_000], [""])),
    "over_limit": answer(lambda: ask(["A cat."] * 1025, [""] * 1025)),
    "after_errors": answer(lambda: ask([pairs[0][0]], [pairs[0][1]])),
}))
"""


def test_bad_requests_get_answers_or_one_clear_error(exported):
  """What a server meets besides good requests, sent to the export in a
  fresh process: empty strings and a 1,000-pair batch get the answers they
  get row by row; invalid UTF-8 the answer for the text without those
  bytes (as FullTokenizer reads it); a 1 MB text and a batch over the limit
  an error naming the limit and the flag that set it; then it keeps serving.
  (bench/bench_serving_load.py sends these under load.)"""
  _, export_dir = exported
  result = subprocess.run([sys.executable, "-c", _BAD_REQUESTS, export_dir],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.splitlines()[-1])
  np.testing.assert_allclose(got["one_empty_pair_of_two"][0], got["empty"][0], atol=1e-6)
  np.testing.assert_allclose(got["garbled"], got["cleaned"], atol=1e-6)
  alone = np.concatenate([np.array(a) for a in got["alone"]])
  batch = np.array(got["batch_1000"])
  assert batch.shape == (1000, 2)
  np.testing.assert_allclose(batch, np.tile(alone, (500, 1)), atol=1e-5)
  assert got["one_megabyte"] == (
      "error: text_a: a text longer than 100000 bytes; shorten it (a limit set at export by "
      "--serving_max_text_bytes)")
  assert got["over_limit"] == (
      "error: text_a: more than 1024 examples in one request; send at most 1024 (a limit set "
      "at export by --serving_max_batch_size)")
  np.testing.assert_allclose(got["after_errors"], got["alone"][0], atol=1e-6)


def test_a_window_classifier_trained_without_gathering_is_served_gathering_its_windows():
  """A window classifier trained under XLA (every window slot run) is served
  gathering the present windows: a float32 copy in the model's own policy,
  the same weights and logits; a model that gathers already is served as
  itself."""
  config = modeling.BertConfig.from_json_file(CONFIG)
  trained = modeling.BertWindowClassifier(config, 2, gather_windows=False)
  served = export.in_precision(trained, "float32", gather_windows=True)
  assert served is not trained and served.gather_windows and not trained.gather_windows
  assert served.dtype_policy.name == trained.dtype_policy.name
  for a, b in zip(trained.weights, served.weights):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
  ids = np.zeros([2, 3, 8], np.int32)
  ids[:, :, 0] = 101
  ids[0, 0, 1:4] = [2023, 2003, 102]
  mask = (ids > 0).astype(np.int32)
  mask[0, 1:] = 0
  features = {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
  np.testing.assert_allclose(served(features)["logits"], trained(features)["logits"],
                             rtol=0, atol=1e-6)
  assert export.in_precision(served, "float32", gather_windows=True) is served
