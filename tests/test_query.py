"""query.py (`bert-query`) and serving/rest.py answer each kind of export as TF
Serving's REST API would: the JSON of the signature's own outputs, called
directly here, for row and columnar requests; TF Serving's error messages
(tensorflow_serving/util/json_tensor.cc) for bad requests; one line and
status 1 for bad flags."""

import ast
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from conftest import REPO_ROOT, assert_one_line_error
import query
from serving import rest
import tiny_exports

QUERY = os.path.join(REPO_ROOT, "query.py")
# All the command needs beside TensorFlow and tensorflow-text.
COMMAND_FILES = ("query.py", "serving/__init__.py", "serving/rest.py", "plumbing/__init__.py",
                 "plumbing/startup.py")
ENDINGS = ["opens a book.", "flies away.", "melts.", "is a bench."]

# Examples of each kind of export, as row-format instances.
INSTANCES = {
    "single": [{"text_a": "The cat sat on the mat."}, {"text_a": "Héllo, WORLD!!  naïve café"},
               {"text_a": ""}],
    "pair": [{"text_a": "The cat sat on the mat.", "text_b": "A cat was sitting on a mat."},
             {"text_a": "中文字符和English混合", "text_b": ""},
             {"text_a": "a " * 40, "text_b": "b " * 40}],
    "squad": [{"question": "Where did the cat sit?", "context": "The cat sat on the mat."},
              {"question": "Who flew?", "context": "John Smith flew to Paris . " * 12}],
    "ner": [{"text": "John Smith flew to Paris ."},
            {"text": "Angela Merkel met Emmanuel Macron in Berlin , Germany ."},
            {"text": ""}],
    "fill_mask": [{"text": "The [MASK] sat on the [MASK] ."}, {"text": "No mask here."},
                  {"text": "[MASK]"}],
    "swag": [{"context": "A woman sits on the bench.", "start": "She", "endings": ENDINGS},
             {"context": "The man runs.", "start": "He", "endings": ENDINGS[::-1]}],
}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
  """{kind: (export directory, the SavedModel loaded)}, each exported once."""
  written = tiny_exports.write(tmp_path_factory.mktemp("exports"), INSTANCES)
  return {kind: (export_dir, tf.saved_model.load(export_dir))
          for kind, export_dir in written.items()}


def _direct(model, instances, signature="serving_default"):
  """The signature's outputs, called directly on the instances' values."""
  names = instances[0].keys()
  return model.signatures[signature](**{n: tf.constant([i[n] for i in instances])
                                        for n in names})


def _assert_json_is(value, tensor, where):
  """A JSON value (parsed) holds exactly the tensor: its shape, its strings
  as text, its float32 values read back to the same float32."""
  expected = np.array(tensor.numpy(), dtype=object if tensor.dtype == tf.string else None)
  if tensor.dtype == tf.string:
    decoded = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(expected)
    assert np.array(value, dtype=object).shape == expected.shape, where
    assert value == decoded.tolist(), where
    return
  got = np.array(value)
  assert got.shape == expected.shape, (where, got.shape, expected.shape)
  if expected.dtype == np.float32:
    got = got.astype(np.float64).astype(np.float32)
  np.testing.assert_array_equal(got, expected, err_msg=where)


@pytest.mark.parametrize("kind", sorted(INSTANCES))
def test_row_and_columnar_answers_are_the_signatures_outputs(exports, kind):
  _, model = exports[kind]
  instances = INSTANCES[kind]
  expected = _direct(model, instances)

  rows = json.loads(json.dumps(rest.predict(model, {"instances": instances})))
  assert list(rows) == ["predictions"]
  assert len(rows["predictions"]) == len(instances)
  for i, prediction in enumerate(rows["predictions"]):
    assert set(prediction) == set(expected)
    for name, tensor in expected.items():
      _assert_json_is(prediction[name], tensor[i], (kind, i, name))

  inputs = {name: [instance[name] for instance in instances] for name in instances[0]}
  columns = json.loads(json.dumps(rest.predict(model, {"inputs": inputs})))
  assert list(columns) == ["outputs"] and set(columns["outputs"]) == set(expected)
  for name, tensor in expected.items():
    _assert_json_is(columns["outputs"][name], tensor, (kind, name))


def test_bare_values_for_one_input_and_one_output(exports):
  """One input: instances and inputs may be the bare values; one output
  (NER's serve_features): each prediction, and the outputs, are bare."""
  _, model = exports["ner"]
  texts = [instance["text"] for instance in INSTANCES["ner"]]
  named = rest.predict(model, {"instances": INSTANCES["ner"]})
  assert rest.predict(model, {"instances": texts}) == named
  assert rest.predict(model, json.dumps({"inputs": texts})) == rest.predict(
      model, {"inputs": {"text": texts}})

  features = {name: value.numpy().tolist() for name, value in _direct(
      model, INSTANCES["ner"], "tokenize").items()}
  logits = model.signatures["serve_features"](
      **{name: tf.constant(value) for name, value in features.items()})["token_logits"]
  windows = len(features["input_ids"])
  rows = rest.predict(model, {"signature_name": "serve_features", "instances": [
      {name: features[name][i] for name in features} for i in range(windows)]})
  assert len(rows["predictions"]) == windows
  _assert_json_is(rows["predictions"], logits, "row")
  columns = rest.predict(model, {"signature_name": "serve_features", "inputs": features})
  _assert_json_is(columns["outputs"], logits, "columnar")


def test_signature_name_picks_the_signature(exports):
  _, model = exports["pair"]
  instances = INSTANCES["pair"]
  answer = rest.predict(model, {"signature_name": "tokenize", "instances": instances})
  for name, tensor in _direct(model, instances, "tokenize").items():
    _assert_json_is([p[name] for p in answer["predictions"]], tensor, name)


@pytest.fixture(scope="module")
def echo_export(tmp_path_factory):
  """A SavedModel of plain ops with a bytes input, a float input and an
  output named *_bytes, the one kind of output TF Serving base64-encodes."""
  module = tf.Module()

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="blob"),
                                tf.TensorSpec([None], tf.float32, name="x")])
  def echo(blob, x):
    return {"blob_bytes": blob, "blob": blob, "length": tf.strings.length(blob),
            "x": x, "tenth": x * 0 + 0.1}
  module.echo = echo
  export_dir = str(tmp_path_factory.mktemp("echo") / "1")
  tf.saved_model.save(module, export_dir, signatures={"serving_default": echo})
  return export_dir


def test_bytes_floats_and_types_as_tf_serving_writes_them(echo_export):
  raw = b"\xff\x00abc"
  answer = rest.predict(echo_export, {"instances": [
      {"blob": {"b64": base64.b64encode(raw).decode()}, "x": 3},
      {"blob": "naïve", "x": 2.5}]})
  first, second = answer["predictions"]
  assert first["blob_bytes"] == {"b64": base64.b64encode(raw).decode()}
  assert first["length"] == 5 and first["x"] == 3.0
  assert second["blob_bytes"] == {"b64": base64.b64encode("naïve".encode()).decode()}
  assert second["blob"] == "naïve" and second["length"] == 6
  # float32's 0.1 as TF Serving writes it, not as the float64 it widens to.
  assert json.dumps(second["tenth"]) == "0.1"
  assert rest.predict(echo_export, {"instances": [{"blob": "a", "x": "1"}]}) == {"error": (
      "Failed to process element: 0 key: x of 'instances' list. Error: INVALID_ARGUMENT: "
      "JSON Value: \"1\" Type: String is not of expected type: float")}


# Bad requests and TF Serving's answers to them (json_tensor.cc, http_rest_api_handler.cc).
BAD_REQUESTS = [
    ('{"instances": [{"text_a": "x"}]}',
     "Failed to process element: 0 of 'instances' list. JSON object: {\"text_a\":\"x\"} keys "
     "must be equal to: text_a,text_b"),
    ('{"instances": [{"text_a": "x", "text_b": "y", "text_c": "z"}]}',
     "Failed to process element: 0 key: text_c of 'instances' list. Error: INVALID_ARGUMENT: "
     "JSON object: does not have named input: text_c"),
    ('{"inputs": {"text_a": ["x"]}}', "Missing named input: text_b in 'inputs' object."),
    ('{"instances": ["x", "y"]}', "instances is a plain list, but expecting list of objects as "
     "multiple input tensors required as per tensorinfo_map"),
    ('{"inputs": ["x"]}', "inputs is a plain value/list, but expecting an object as multiple "
     "input tensors required as per tensorinfo_map"),
    ('{"instances": [{"text_a": 1, "text_b": "y"}]}',
     "Failed to process element: 0 key: text_a of 'instances' list. Error: INVALID_ARGUMENT: "
     "JSON Value: 1 Type: Number is not of expected type: string"),
    ('{"instances": []}', "JSON Value: {\"instances\":[]} No values in 'instances' array"),
    ('{"text_a": ["x"]}', "Missing 'inputs' or 'instances' key"),
    ('{"instances": [{"text_a": "x", "text_b": "y"}], "signature_name": "nope"}',
     'Serving signature name: "nope" not found in signature def'),
    ('{"instances": [{"text_a": "x", "text_b": "y"}], "inputs": {}}',
     "JSON Value: {\"instances\":[{\"text_a\":\"x\",\"text_b\":\"y\"}],\"inputs\":{}} Not "
     "formatted correctly expecting only one of 'inputs' or 'instances' keys to exist "),
    ('["x"]', "JSON Value: [\"x\"] Is not object"),
    ("", "JSON Parse error: The document is empty"),
]


@pytest.mark.parametrize("body, message", BAD_REQUESTS)
def test_bad_requests_get_tf_servings_error(exports, body, message):
  _, model = exports["pair"]
  assert rest.predict(model, body) == {"error": message}


def test_more_bad_requests(exports):
  _, model = exports["pair"]
  assert rest.predict(model, '{"instances": [{"text_a": "x"')["error"].startswith(
      "JSON Parse error: ")
  # The export's own check, as the server's session reports it.
  error = rest.predict(model, {"inputs": {"text_a": ["a", "b"], "text_b": ["c"]}})["error"]
  assert error.startswith("assertion failed: [text_a and text_b: not as many of one as of "
                          "the other in this request"), error
  assert "Graph execution error" not in error and "[Op:" not in error
  _, swag = exports["swag"]
  ragged = [dict(INSTANCES["swag"][0]), dict(INSTANCES["swag"][1], endings=ENDINGS[:3])]
  assert rest.predict(swag, {"instances": ragged}) == {"error": (
      "Failed to process element: 1 key: endings of 'instances' list. Error: INVALID_ARGUMENT: "
      "Expecting tensor size: 4 but got: 3")}


def test_query_keeps_its_columnar_answer(exports):
  export_dir, model = exports["pair"]
  pairs = INSTANCES["pair"]
  answer = rest.query(export_dir, text_a=[p["text_a"] for p in pairs],
                       text_b=[p["text_b"] for p in pairs])
  expected = _direct(model, pairs)
  assert set(answer) == set(expected)
  for name, tensor in expected.items():
    _assert_json_is(answer[name], tensor, name)
  single = rest.query(model, text_a=["The cat sat."])  # text_b left out: empty.
  assert single == rest.query(model, text_a=["The cat sat."], text_b=[""])
  with pytest.raises(ValueError, match="Missing named input: question"):
    rest.query(exports["squad"][1], context=["The cat sat."])


def test_query_loads_tensorflow_only():
  """It runs beside a server, where this project is not installed: its
  files import TensorFlow, tensorflow-text and one another only."""
  imported = set()
  for name in COMMAND_FILES:
    for node in ast.walk(ast.parse(open(os.path.join(REPO_ROOT, name), encoding="utf-8").read())):
      if isinstance(node, ast.Import):
        imported |= {alias.name for alias in node.names}
      elif isinstance(node, ast.ImportFrom):
        imported |= {node.module + "." + alias.name for alias in node.names}
  assert imported <= {"argparse", "base64", "importlib.abc", "json", "logging", "os", "re",
                      "sys", "numpy", "tensorflow", "tensorflow_text", "plumbing.startup",
                      "serving.rest"}, imported


def _command(args, stdin=None, cwd=None, script=QUERY):
  """query.py run as a user runs it, from another directory."""
  return subprocess.run([sys.executable, script] + args, input=stdin, capture_output=True,
                        text=True, timeout=300, cwd=cwd,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=""))


def test_command_runs_outside_the_repository(exports, tmp_path):
  """Flags as the old command took them (two pairs), from a copy of the
  command's files alone: the row request's answer."""
  export_dir, model = exports["pair"]
  pairs = INSTANCES["pair"][:2]
  for name in COMMAND_FILES:
    os.makedirs(os.path.dirname(str(tmp_path / "copy" / name)), exist_ok=True)
    shutil.copy(os.path.join(REPO_ROOT, name), str(tmp_path / "copy" / name))
  result = _command(["--export_dir=" + export_dir] + [
      "--%s=%s" % (name, p[name]) for p in pairs for name in ("text_a", "text_b")],
      cwd=str(tmp_path), script=str(tmp_path / "copy" / "query.py"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout) == rest.predict(model, {"instances": pairs})
  assert "Traceback" not in result.stderr and "WARNING:absl" not in result.stderr


def test_command_refuses_a_bad_request_in_one_line(exports):
  export_dir, _ = exports["pair"]
  result = _command(["--export_dir=" + export_dir, '--request={"instances": [{"text_a": "x"'])
  assert_one_line_error(result, "query.py", "--request: JSON Parse error: ")
  assert json.loads(result.stdout)["error"].startswith("JSON Parse error: ")


@pytest.fixture
def loads_once(exports, monkeypatch):
  """The command in this process finds the exports already loaded (each
  load takes seconds; the tests above load them as the command does)."""
  loaded = {export_dir: model for export_dir, model in exports.values()}
  load = query._load_quietly  # pylint: disable=protected-access
  monkeypatch.setattr(query, "_load_quietly", lambda d: loaded.get(d) or load(d))
  return exports


def _main(args, capsys):
  """query.main in this process: (status, stdout, stderr); quicker than a
  process per case."""
  try:
    query.main(args)
    status = 0
  except SystemExit as exit_:
    status = exit_.code
  out, err = capsys.readouterr()
  return types.SimpleNamespace(returncode=status, stdout=out, stderr=err)


def test_command_reads_lines_and_bodies(loads_once, capsys, tmp_path, monkeypatch):
  """Lines from stdin (NER) and a body from a file (SWAG, columnar)."""
  ner_dir, ner = loads_once["ner"]
  texts = [instance["text"] for instance in INSTANCES["ner"]]
  monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
      ("\r\n".join(texts) + "\r\n").encode("utf-8"))))
  result = _main(["--export_dir=" + ner_dir, "--lines=-"], capsys)
  assert result.returncode == 0, result.stderr
  answer = json.loads(result.stdout)
  assert len(answer["predictions"]) == len(texts)
  expected = _direct(ner, INSTANCES["ner"])
  for i, prediction in enumerate(answer["predictions"]):
    for name, tensor in expected.items():
      _assert_json_is(prediction[name], tensor[i], (i, name))

  swag_dir, swag = loads_once["swag"]
  body = tmp_path / "body.json"
  inputs = {name: [i[name] for i in INSTANCES["swag"]] for name in INSTANCES["swag"][0]}
  body.write_text(json.dumps({"inputs": inputs}), encoding="utf-8")
  result = _main(["--export_dir=" + swag_dir, "--request=@%s" % body], capsys)
  assert result.returncode == 0, result.stderr
  expected = _direct(swag, INSTANCES["swag"])
  for name, tensor in expected.items():
    _assert_json_is(json.loads(result.stdout)["outputs"][name], tensor, name)


def test_command_flags_follow_the_signature(loads_once, capsys, tmp_path):
  """Flags of any kind's inputs: SWAG's endings shared out over the examples,
  SQuAD's fields named by --columns; the answer is the row request's."""
  swag_dir, swag = loads_once["swag"]
  flags = []
  for instance in INSTANCES["swag"]:
    flags += ["--context=" + instance["context"], "--start=" + instance["start"]]
  flags += ["--endings=" + e for instance in INSTANCES["swag"] for e in instance["endings"]]
  result = _main(["--export_dir=" + swag_dir] + flags, capsys)
  assert result.returncode == 0, result.stderr
  assert json.loads(result.stdout) == rest.predict(swag, {"instances": INSTANCES["swag"]})

  squad_dir, squad_model = loads_once["squad"]
  lines = tmp_path / "pairs.tsv"
  lines.write_text("".join("%s\t%s\n" % (i["context"], i["question"])
                           for i in INSTANCES["squad"]), encoding="utf-8")
  result = _main(["--export_dir=" + squad_dir, "--lines=%s" % lines,
                  "--columns=context,question"], capsys)
  assert result.returncode == 0, result.stderr
  assert json.loads(result.stdout) == rest.predict(squad_model,
                                                    {"instances": INSTANCES["squad"]})


@pytest.mark.parametrize("args, fragments", [
    (["--text_a=x", "--text_c=y"], ["--text_c: not an input of the signature",
                                    "--text_a, --text_b"]),
    (["--text_b=y"], ["--text_a: missing"]),
    (["--text_a=x", "--text_a=y", "--text_b=z"], ["--text_b given once but --text_a 2 times"]),
    ([], ["--lines=FILE or --request=JSON"]),
    (["--text_a=x", "--request={}"], ["one of them"]),
    (["--request=@/nonexistent/body.json"], ["--request=@/nonexistent/body.json: cannot read it"]),
    (["--lines=/nonexistent/texts.txt"], ["--lines=/nonexistent/texts.txt: cannot read it"]),
    (["--signature_name=nope", "--text_a=x"], ["--signature_name=nope", "serving_default"]),
    (["--columns=text_a"], ["--columns goes with --lines"]),
])
def test_command_errors_are_one_line(loads_once, capsys, args, fragments):
  export_dir, _ = loads_once["pair"]
  result = _main(["--export_dir=" + export_dir] + args, capsys)
  assert_one_line_error(result, os.path.basename(sys.argv[0]), *fragments)
  assert result.stdout == ""  # No request was made: nothing a server would answer.


def test_command_refusals_print_the_error_body(loads_once, capsys):
  export_dir, _ = loads_once["pair"]
  result = _main(["--export_dir=" + export_dir, '--request={"inputs": {"text_a": ["x"]}}'],
                 capsys)
  assert_one_line_error(result, os.path.basename(sys.argv[0]),
                        "--request: Missing named input: text_b in 'inputs' object.")
  assert json.loads(result.stdout) == {
      "error": "Missing named input: text_b in 'inputs' object."}


def test_command_names_the_file_and_line(loads_once, capsys, tmp_path):
  export_dir, _ = loads_once["pair"]
  lines = tmp_path / "pairs.tsv"
  lines.write_text("a\tb\nonly one field\n", encoding="utf-8")
  result = _main(["--export_dir=" + export_dir, "--lines=%s" % lines,
                  "--columns=text_a,text_b"], capsys)
  assert_one_line_error(result, os.path.basename(sys.argv[0]),
                        "--lines=%s, line 2: 1 tab-separated fields" % lines)
  assert result.stdout == ""

  (tmp_path / "base" / "7").mkdir(parents=True)
  result = _main(["--export_dir=%s" % (tmp_path / "base"), "--text_a=x"], capsys)
  assert_one_line_error(result, os.path.basename(sys.argv[0]), "holds no saved_model.pb",
                        os.path.join(str(tmp_path / "base"), "7"))
