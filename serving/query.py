"""Asks an export what TF Serving's REST API would answer, without a server.

  bert-query --export_dir=mrpc_export/1 --text_a="The cat sat." --text_b="A cat sat."
  bert-query --export_dir=ner_export/1 --lines=texts.txt     # one text a line; - is stdin
  bert-query --export_dir=squad_export/1 \\
    --request='{"instances": [{"question": "Who sat?", "context": "The cat sat."}]}'
  bert-query --export_dir=swag_export/1 --request=@body.json  # @- is stdin

(`python serving/query.py` from a clone.) Prints the JSON body that
`POST /v1/models/NAME:predict` gets back from TF Serving for the same
request: {"predictions": [...]} for the row format ("instances"; texts from
flags or lines are sent so), {"outputs": {...}} for the columnar format
("inputs"), {"error": "..."} for a request the server refuses (then also one
line on stderr, and status 1). Requests are read, and answers written, by
TF Serving's rules (tensorflow_serving/util/json_tensor.cc): its error
messages, strings as UTF-8 text (base64 only for outputs named *_bytes),
float32 values as the shortest decimal that reads back as the same float.
From Python: predict(export_dir, body).

Loads the SavedModel with TensorFlow and tensorflow-text only (none of this
project's code), so it runs wherever a server could.
"""

import argparse
import base64
import json
import logging
import os
import re
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

DEFAULT_SIGNATURE = "serving_default"
# The text inputs of this project's exports (docs/serving.md), for --help;
# the flags an export takes are read from its signature.
EXPORT_INPUTS = (("classifier", ("--text_a", "--text_b")),
                 ("SQuAD", ("--question", "--context")),
                 ("SWAG", ("--context", "--start", "--endings")),
                 ("NER, fill-mask, sentence vectors", ("--text",)))
# TF Serving quotes at most this much of a JSON value in an error message.
_QUOTED_CHARS = 256
# TensorFlow's names of the types TF Serving's messages name.
_TYPE_NAMES = {"float32": "float", "float64": "double"}
_INTEGER_RANGES = {name: (np.iinfo(name).min, np.iinfo(name).max)
                   for name in ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64")}
_WRITABLE = set(_INTEGER_RANGES) | {"float32", "float64", "bool", "string"}


class RequestError(ValueError):
  """A request TF Serving answers with {"error": message} (HTTP 400)."""


class UsageError(ValueError):
  """Flags or files that make no request: one line, no answer."""


def predict(export_dir, body):
  """TF Serving's answer to `body` (a dict, or its JSON text) sent to
  :predict, as a dict: {"predictions": ...}, {"outputs": ...}, or
  {"error": message} for a request it refuses. `export_dir` may also be a
  SavedModel already loaded with tf.saved_model.load (a load takes seconds)."""
  model = _loaded(export_dir)
  try:
    return _answer(model, body)
  except RequestError as error:
    return {"error": str(error)}


def query(export_dir, **texts):
  """serving_default's outputs for lists of strings named as its inputs
  (text_a [and text_b], question and context, text, ...), as {output: list}
  (the columnar answer). A pair classifier's text_b, left out, is empty:
  single sentences. Raises ValueError for a request the export refuses."""
  model = _loaded(export_dir)
  signature = model.signatures[DEFAULT_SIGNATURE]
  texts = _with_empty_text_b(_input_specs(signature), texts)
  answer = predict(model, {"inputs": texts})
  if "error" in answer:
    raise ValueError("%s: %s" % (export_dir, answer["error"]))
  names = list(signature.structured_outputs)
  return answer["outputs"] if len(names) > 1 else {names[0]: answer["outputs"]}


def _loaded(export_dir):
  if isinstance(export_dir, (str, os.PathLike)):
    return tf.saved_model.load(os.fspath(export_dir))
  return export_dir


def _input_specs(signature):
  return signature.structured_input_signature[1]


def _with_empty_text_b(specs, texts):
  """The classifier export reads an empty text_b as "no second sentence"."""
  if "text_b" in specs and "text_b" not in texts and "text_a" in texts:
    return dict(texts, text_b=[""] * len(texts["text_a"]))
  return texts


# The request, as TF Serving reads it.

def _quoted(value):
  """A JSON value as TF Serving quotes it in an error message."""
  return json.dumps(value, ensure_ascii=False, separators=(",", ":"))[:_QUOTED_CHARS]


def _parsed(body):
  """The request's JSON object, from its text (or the object itself)."""
  if not isinstance(body, (str, bytes)):
    return _object(body)
  if isinstance(body, bytes):
    try:
      body = body.decode("utf-8")
    except UnicodeDecodeError as error:
      raise RequestError("JSON Parse error: Invalid encoding in string. at offset: %d"
                         % error.start) from None
  text = body.lstrip()
  if not text:
    raise RequestError("JSON Parse error: The document is empty")
  try:  # As TF Serving's parser, stops after the first value.
    value, _ = json.JSONDecoder().raw_decode(text)
  except json.JSONDecodeError as error:
    raise RequestError("JSON Parse error: %s at offset: %d"
                       % (error.msg, error.pos + len(body) - len(text))) from None
  return _object(value)


def _object(value):
  if not isinstance(value, dict):
    raise RequestError("JSON Value: %s Is not object" % _quoted(value))
  return value


def _answer(model, body, default_signature=DEFAULT_SIGNATURE):
  body = _parsed(body)
  name = body.get("signature_name", default_signature)
  if not isinstance(name, str):
    raise RequestError("JSON Value: %s not formatted correctly. 'signature_name' key must "
                       "be a string value." % _quoted(body))
  if name not in model.signatures:
    raise RequestError('Serving signature name: "%s" not found in signature def' % name)
  signature = model.signatures[name]
  specs = _input_specs(signature)
  if "instances" in body and "inputs" in body:
    raise RequestError("JSON Value: %s Not formatted correctly expecting only one of "
                       "'inputs' or 'instances' keys to exist " % _quoted(body))
  if "instances" in body:
    arrays, row_format = _from_instances(body, specs), True
  elif "inputs" in body:
    arrays, row_format = _from_inputs(body["inputs"], specs), False
  else:
    raise RequestError("Missing 'inputs' or 'instances' key")
  outputs = _run(signature, specs, arrays)
  return _rows(outputs) if row_format else _columns(outputs)


def _is_base64(value):
  return (isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str))


def _is_object(value):
  return isinstance(value, dict) and not _is_base64(value)


def _json_type(value):
  if value is None:
    return "Null"
  if isinstance(value, bool):
    return "True" if value else "False"
  return {dict: "Object", list: "Array", str: "String"}.get(type(value), "Number")


def _element(value, dtype):
  """One JSON scalar as a value of `dtype`, or TF Serving's error."""
  kind = dtype.name
  type_error = RequestError("JSON Value: %s Type: %s is not of expected type: %s" % (
      _quoted(value), _json_type(value), _TYPE_NAMES.get(kind, kind)))
  if kind == "string":
    if isinstance(value, str):
      return value.encode("utf-8")
    if isinstance(value, dict):
      if not _is_base64(value):
        raise RequestError("JSON Value: %s not formatted correctly for base64 data"
                           % _quoted(value))
      try:
        return base64.b64decode(value["b64"], validate=True)
      except ValueError:
        raise RequestError("Unable to base64 decode") from None
    raise type_error
  if kind == "bool":
    accepted = isinstance(value, bool)
  elif kind in ("float32", "float64"):
    accepted = isinstance(value, (int, float)) and not isinstance(value, bool)
  elif kind in _INTEGER_RANGES:
    low, high = _INTEGER_RANGES[kind]
    accepted = (isinstance(value, int) and not isinstance(value, bool)
                and low <= value <= high)
  else:
    raise RequestError("Conversion of JSON Value: %s to type: %s" % (_quoted(value), kind))
  if not accepted:
    raise type_error
  return value


def _dense(value, dtype):
  """A (nested) JSON list as (shape, flat values): its shape is read down the
  first elements, and every list must agree with it, as TF Serving requires."""
  shape, probe = [], value
  while isinstance(probe, list):
    shape.append(len(probe))
    if not probe:
      break
    probe = probe[0]
  flat = []

  def fill(item, level):
    if not isinstance(item, list):
      if level != len(shape):
        raise RequestError("JSON Value: %s found at incorrect level: %d in the JSON DOM. "
                           "Expected at level: %d" % (_quoted(item), level + 1, len(shape)))
      flat.append(_element(item, dtype))
      return
    if level >= len(shape):
      raise RequestError("Encountered list at unexpected level: %d expected < %d"
                         % (level, len(shape)))
    if len(item) != shape[level]:
      raise RequestError("Encountered list at unexpected size: %d at level: %d expected "
                         "size: %d" % (len(item), level, shape[level]))
    for inner in item:
      fill(inner, level + 1)
  fill(value, 0)
  return shape, flat


def _array(shape, flat, dtype):
  numpy_type = object if dtype == tf.string else dtype.as_numpy_dtype
  return np.array(flat, dtype=numpy_type).reshape(shape)


def _shape_text(shape):
  return "[%s]" % ",".join(str(d) for d in shape)


def _from_instances(body, specs):
  """Row format: each instance gives one example of every input (an object
  of them, or the bare value when the signature has one input)."""
  instances = body["instances"]
  if not isinstance(instances, list):
    raise RequestError("JSON Value: %s Expecting 'instances' to be an list/array"
                       % _quoted(body))
  if not instances:
    raise RequestError("JSON Value: %s No values in 'instances' array" % _quoted(body))
  if not isinstance(instances[0], dict) and len(specs) > 1:
    raise RequestError("instances is a plain list, but expecting list of objects as "
                       "multiple input tensors required as per tensorinfo_map")
  named = _is_object(instances[0])
  shapes, values = {}, {}

  def add(name, value):
    if name not in specs:
      raise RequestError("JSON object: does not have named input: %s" % name)
    shape, flat = _dense(value, specs[name].dtype)
    if name not in shapes:
      shapes[name], values[name] = shape, []
    elif int(np.prod(shapes[name])) != len(flat):
      raise RequestError("Expecting tensor size: %d but got: %d"
                         % (int(np.prod(shapes[name])), len(flat)))
    elif shapes[name] != shape:
      raise RequestError("Expecting shape %s but got: %s"
                         % (_shape_text(shapes[name]), _shape_text(shape)))
    values[name] += flat

  for index, instance in enumerate(instances):
    if named:
      if not _is_object(instance):
        raise RequestError("Expecting object but got list at item %d of input list" % index)
      for name, value in instance.items():
        try:
          add(name, value)
        except RequestError as error:
          raise RequestError("Failed to process element: %d key: %s of 'instances' list. "
                             "Error: INVALID_ARGUMENT: %s" % (index, name, error)) from None
      if set(instance) != set(specs):
        raise RequestError("Failed to process element: %d of 'instances' list. JSON object: "
                           "%s keys must be equal to: %s"
                           % (index, _quoted(instance), ",".join(sorted(specs))))
    else:
      if _is_object(instance):
        raise RequestError("Expecting value/list but got object at item %d of input list"
                           % index)
      try:
        add(next(iter(specs)), instance)
      except RequestError as error:
        raise RequestError("Failed to process element: %d of 'instances' list. "
                           "Error: INVALID_ARGUMENT: %s" % (index, error)) from None
  return {name: _array([len(instances)] + shapes[name], values[name], specs[name].dtype)
          for name in values}


def _from_inputs(inputs, specs):
  """Columnar format: an object of every input's whole tensor (the bare
  tensor when the signature has one input). Other keys are ignored, as TF
  Serving ignores them."""
  if not _is_object(inputs):
    if len(specs) > 1:
      raise RequestError("inputs is a plain value/list, but expecting an object as multiple "
                         "input tensors required as per tensorinfo_map")
    inputs = {next(iter(specs)): inputs}
  for name in sorted(specs):
    if name not in inputs:
      raise RequestError("Missing named input: %s in 'inputs' object." % name)
  return {name: _array(*_dense(inputs[name], spec.dtype), spec.dtype)
          for name, spec in specs.items()}


def _run(signature, specs, arrays):
  for name, array in arrays.items():
    if not specs[name].shape.is_compatible_with(array.shape):
      raise RequestError("%s: a tensor of shape %s where the signature takes %s" % (
          name, _shape_text(array.shape),
          _shape_text("?" if d is None else d for d in specs[name].shape)))
  try:
    return signature(**{name: tf.constant(array, specs[name].dtype)
                        for name, array in arrays.items()})
  except tf.errors.OpError as error:
    raise RequestError(_as_a_session_says(error.message)) from None


def _as_a_session_says(message):
  """An error of the graph as TF Serving's session reports it: without the
  preamble and the function's name an eager call adds."""
  message = re.sub(r"^Graph execution error:\s*(Detected at node [^\n]*\n"
                   r"<stack traces unavailable>\n)?", "", message.strip())
  return re.sub(r"\s*\[Op:__inference_\w+\]$", "", message)


# The answer, as TF Serving writes it.

def _json_values(name, tensor):
  """A tensor as nested JSON lists (a scalar as itself)."""
  array = tensor.numpy()
  kind = tensor.dtype.name
  if kind not in _WRITABLE:
    raise RequestError("Failed to write JSON value for tensor type: %s" % kind)
  if kind == "string":
    if name.endswith("_bytes"):
      text = lambda b: {"b64": base64.b64encode(b).decode("ascii")}
    else:  # Bytes that are not UTF-8 as U+FFFD: TF Serving sends them raw, not JSON.
      text = lambda b: b.decode("utf-8", errors="replace")
    array = np.vectorize(text, otypes=[object])(array)
  elif kind == "float32":
    # The shortest decimal that reads back as the same float32, as TF
    # Serving writes floats (not the float64 the float32 widens to).
    array = array.astype(str).astype(np.float64)
  return array.tolist()


def _rows(outputs):
  """{"predictions": [one per example]}: an object of the outputs each, or
  the bare value when there is one output."""
  batch = None
  for name in sorted(outputs):
    shape = outputs[name].shape
    if shape.rank == 0:
      raise RequestError("Tensor name: %s has no shape information " % name)
    if batch is not None and shape[0] != batch:
      raise RequestError("Tensor name: %s has inconsistent batch size: %d expecting: %d"
                         % (name, shape[0], batch))
    batch = shape[0]
  values = {name: _json_values(name, outputs[name]) for name in sorted(outputs)}
  if len(values) == 1:
    return {"predictions": next(iter(values.values()))}
  return {"predictions": [{name: value[i] for name, value in values.items()}
                          for i in range(batch)]}


def _columns(outputs):
  """{"outputs": {name: whole tensor}}, or the bare tensor when there is one."""
  values = {name: _json_values(name, outputs[name]) for name in sorted(outputs)}
  return {"outputs": next(iter(values.values())) if len(values) == 1 else values}


# The command line.

class _Parser(argparse.ArgumentParser):
  """Usage errors as one line and status 1, as every command of the project."""

  def error(self, message):
    _fail(self.prog, message)


def _fail(program, message):
  sys.stderr.write("%s: error: %s\n" % (program, " ".join(message.split())))
  sys.exit(1)


def _write(text):
  """UTF-8 whatever the locale: answers hold any language's text."""
  sys.stdout.flush()
  sys.stdout.buffer.write((text + "\n").encode("utf-8"))
  sys.stdout.buffer.flush()


def _read(path, flag):
  """A file's bytes ("-": stdin's)."""
  if path == "-":
    return sys.stdin.buffer.read()
  try:
    with open(path, "rb") as f:
      return f.read()
  except OSError as error:
    raise UsageError("%s: cannot read it (%s)" % (flag, error.strerror)) from None


def _example(specs, values, where):
  """One instance from the strings given for each input: one for an input of
  one text per example, a list for one of several (SWAG's endings)."""
  instance = {}
  for name, texts in values.items():
    if specs[name].shape.rank == 1:
      if len(texts) != 1:
        raise UsageError("%s: %d values of %s, which takes one text per example"
                         % (where, len(texts), name))
      instance[name] = texts[0]
    else:
      instance[name] = texts
  return instance


def _instances_from_flags(specs, given):
  """--NAME=TEXT flags, repeated for several examples; an input that takes a
  list per example (SWAG's endings) gets its values shared out in order."""
  given = _with_empty_text_b(specs, given)
  missing = sorted(set(specs) - set(given))
  if missing:
    raise UsageError("--%s: missing; the signature takes %s"
                     % (missing[0], ", ".join("--" + n for n in sorted(specs))))
  counts = {name: len(given[name]) for name in given if specs[name].shape.rank == 1}
  examples = max(counts.values(), default=1)
  fewer = sorted(name for name, count in counts.items() if count != examples)
  if fewer:
    most = min(name for name, count in counts.items() if count == examples)
    raise UsageError("--%s given %s but --%s %d times; give each input once per example"
                     % (fewer[0], "once" if counts[fewer[0]] == 1 else "%d times"
                        % counts[fewer[0]], most, examples))
  instances = []
  for i in range(examples):
    values = {}
    for name, texts in given.items():
      if name in counts:
        values[name] = [texts[i]]
      elif len(texts) % examples:
        raise UsageError("--%s: %d values do not share out over %d examples"
                         % (name, len(texts), examples))
      else:
        share = len(texts) // examples
        values[name] = texts[i * share:(i + 1) * share]
    instances.append(_example(specs, values, "example %d" % (i + 1)))
  return instances


def _instances_from_lines(specs, data, columns, flag):
  """One example a line: the text, or with --columns, tab-separated fields
  (a name given several times collects its fields into a list)."""
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as error:
    raise UsageError("%s: not UTF-8 text (byte %d)" % (flag, error.start)) from None
  lines = text.replace("\r\n", "\n").split("\n")
  if lines[-1] == "":
    lines.pop()
  if not lines:
    raise UsageError("%s: no lines" % flag)
  if columns is None:
    if len(specs) > 1:
      raise UsageError("%s: the signature takes %s; name the tab-separated fields of a "
                       "line with --columns" % (flag, ", ".join(sorted(specs))))
    columns = list(specs)
  unknown = sorted(set(columns) - set(specs))
  missing = sorted(set(specs) - set(columns))
  if unknown or missing:
    raise UsageError("--columns: %s; the signature takes %s" % (
        "%s is not an input" % unknown[0] if unknown else "%s is missing" % missing[0],
        ", ".join(sorted(specs))))
  instances = []
  for number, line in enumerate(lines, 1):
    fields = line.split("\t") if len(columns) > 1 else [line]
    if len(fields) != len(columns):
      raise UsageError("%s, line %d: %d tab-separated fields, not the %d of --columns"
                       % (flag, number, len(fields), len(columns)))
    values = {}
    for name, field in zip(columns, fields):
      values.setdefault(name, []).append(field)
    instances.append(_example(specs, values, "%s, line %d" % (flag, number)))
  return instances


def _text_flags(specs, args):
  """{input name: [texts]} from --NAME=TEXT flags naming the signature's inputs."""
  parser = _Parser(allow_abbrev=False)
  for name in sorted(specs):
    parser.add_argument("--" + name, action="append")
  given, unknown = parser.parse_known_args(args)
  if unknown:
    raise UsageError("%s: not an input of the signature; it takes %s" % (
        unknown[0].split("=")[0], ", ".join("--" + n for n in sorted(specs))))
  return {name: texts for name, texts in vars(given).items() if texts is not None}


def _request(args, text_flags, model):
  """The body the command's flags make: --request's, or a row-format request
  of the texts given as flags or lines."""
  if args.request is not None:
    body = args.request
    return _read(body[1:], "--request=" + body) if body.startswith("@") else body
  if args.signature_name not in model.signatures:
    raise UsageError("--signature_name=%s: %s has no such signature; it has %s" % (
        args.signature_name, args.export_dir, ", ".join(sorted(model.signatures))))
  specs = _input_specs(model.signatures[args.signature_name])
  if args.lines is not None:
    columns = None if args.columns is None else args.columns.split(",")
    flag = "--lines=" + args.lines
    instances = _instances_from_lines(specs, _read(args.lines, flag), columns, flag)
  else:
    instances = _instances_from_flags(specs, _text_flags(specs, text_flags))
  return {"signature_name": args.signature_name, "instances": instances}


def _no_saved_model(export_dir):
  """What to pass instead: TF Serving wants the model's base directory, this
  command a version directory inside it."""
  message = "--export_dir=%s holds no saved_model.pb" % export_dir
  if tf.io.gfile.isdir(export_dir):
    versions = sorted((d.rstrip("/") for d in tf.io.gfile.listdir(export_dir)
                       if d.rstrip("/").isdigit()), key=int)
    if versions:
      return message + "; pass a version directory, e.g. %s" % os.path.join(
          export_dir, versions[-1])
  return message + "; pass the directory --export_dir wrote"


def _load_quietly(export_dir):
  """tf.saved_model.load, without its warnings about gradients, which
  answering requests never takes."""
  disabled = logging.root.manager.disable
  logging.disable(logging.WARNING)
  try:
    return tf.saved_model.load(export_dir)
  finally:
    logging.disable(disabled)


def main(argv=None):
  """The command line (also the installed command `bert-query`)."""
  parser = _Parser(
      description=__doc__.split("\n\n")[0], allow_abbrev=False,
      epilog="Texts on the command line: one flag per input of the signature, named as the "
             "input, repeated for several examples (a list input such as SWAG's endings takes "
             "its values in order). The exports' inputs: %s." % "; ".join(
                 "%s %s" % (kind, " ".join(flags)) for kind, flags in EXPORT_INPUTS))
  parser.add_argument("--export_dir", required=True,
                      help="The SavedModel's directory (the version directory, .../1).")
  parser.add_argument("--signature_name", default=DEFAULT_SIGNATURE,
                      help="The signature to ask; a request's own signature_name wins.")
  parser.add_argument("--request", help="The JSON body a client would POST to "
                      "/v1/models/NAME:predict; @FILE reads it from FILE, @- from stdin.")
  parser.add_argument("--lines", help="A UTF-8 file of one example a line (- for stdin), "
                      "sent as one row-format request.")
  parser.add_argument("--columns", help="With --lines, for a signature of several inputs: "
                      "the input each tab-separated field of a line is, e.g. question,context.")
  args, text_flags = parser.parse_known_args(argv)
  if not tf.io.gfile.exists(os.path.join(args.export_dir, "saved_model.pb")):
    parser.error(_no_saved_model(args.export_dir))
  if args.columns is not None and args.lines is None:
    parser.error("--columns goes with --lines")
  sources = [flag for flag, value in (("--request", args.request), ("--lines", args.lines),
                                      ("text flags", text_flags or None)) if value is not None]
  if len(sources) != 1:
    parser.error("give texts as flags (one per input of the signature, e.g. --text_a=...), "
                 "--lines=FILE or --request=JSON: %s" % (
                     "one of them" if sources else "none was given"))
  try:
    model = _load_quietly(args.export_dir)
  except (OSError, ValueError, tf.errors.OpError) as error:
    parser.error("--export_dir=%s: cannot load it (%s)" % (
        args.export_dir, str(error).strip().splitlines()[0]))
  try:
    body = _request(args, text_flags, model)
  except UsageError as error:
    parser.error(str(error))
  try:
    answer = _answer(model, body, default_signature=args.signature_name)
  except RequestError as error:
    _write(json.dumps({"error": str(error)}, ensure_ascii=False))
    source = sources[0]
    if source == "--request" and args.request.startswith("@"):
      source += "=" + args.request
    _fail(parser.prog, "%s: %s" % (source, error))
  _write(json.dumps(answer, ensure_ascii=False))


if __name__ == "__main__":
  main()
