"""TF Serving's REST API, answered from a SavedModel without a server.

predict(export_dir, body) returns the JSON body that `POST
/v1/models/NAME:predict` gets back from TF Serving for the same request:
{"predictions": [...]} for the row format ("instances"), {"outputs": {...}}
for the columnar format ("inputs"), {"error": "..."} for a request the
server refuses. Requests are read, and answers written, by TF Serving's
rules (tensorflow_serving/util/json_tensor.cc): its error messages, strings
as UTF-8 text (base64 only for outputs named *_bytes), float32 values as the
shortest decimal that reads back as the same float. query(export_dir,
**texts) asks serving_default with lists of texts. The command query.py
(`bert-query`) asks an export from the command line.

Uses TensorFlow and tensorflow-text only (none of this project's code), so
it runs wherever a server could.
"""

import base64
import json
import os
import re

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

DEFAULT_SIGNATURE = "serving_default"
# TF Serving quotes at most this much of a JSON value in an error message.
_QUOTED_CHARS = 256
# TensorFlow's names of the types TF Serving's messages name.
_TYPE_NAMES = {"float32": "float", "float64": "double"}
_INTEGER_RANGES = {name: (np.iinfo(name).min, np.iinfo(name).max)
                   for name in ("int8", "int16", "int32", "int64", "uint8", "uint32", "uint64")}
_WRITABLE = set(_INTEGER_RANGES) | {"float32", "float64", "bool", "string"}


class RequestError(ValueError):
  """A request TF Serving answers with {"error": message} (HTTP 400)."""


def predict(export_dir, body):
  """TF Serving's answer to `body` (a dict, or its JSON text) sent to
  :predict, as a dict: {"predictions": ...}, {"outputs": ...}, or
  {"error": message} for a request it refuses. `export_dir` may also be a
  SavedModel already loaded with tf.saved_model.load (a load takes seconds)."""
  model = _loaded(export_dir)
  try:
    return answer(model, body)
  except RequestError as error:
    return {"error": str(error)}


def query(export_dir, **texts):
  """serving_default's outputs for lists of strings named as its inputs
  (text_a [and text_b], question and context, text, ...), as {output: list}
  (the columnar answer). A pair classifier's text_b, left out, is empty:
  single sentences. Raises ValueError for a request the export refuses."""
  model = _loaded(export_dir)
  signature = model.signatures[DEFAULT_SIGNATURE]
  texts = with_empty_text_b(input_specs(signature), texts)
  answer = predict(model, {"inputs": texts})
  if "error" in answer:
    raise ValueError("%s: %s" % (export_dir, answer["error"]))
  names = list(signature.structured_outputs)
  return answer["outputs"] if len(names) > 1 else {names[0]: answer["outputs"]}


def _loaded(export_dir):
  if isinstance(export_dir, (str, os.PathLike)):
    return tf.saved_model.load(os.fspath(export_dir))
  return export_dir


def input_specs(signature):
  """{input name: tf.TensorSpec} of a signature."""
  return signature.structured_input_signature[1]


def with_empty_text_b(specs, texts):
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


def answer(model, body, default_signature=DEFAULT_SIGNATURE):
  """TF Serving's answer to `body` from `model` (a loaded SavedModel);
  RequestError for a request it refuses."""
  body = _parsed(body)
  name = body.get("signature_name", default_signature)
  if not isinstance(name, str):
    raise RequestError("JSON Value: %s not formatted correctly. 'signature_name' key must "
                       "be a string value." % _quoted(body))
  if name not in model.signatures:
    raise RequestError('Serving signature name: "%s" not found in signature def' % name)
  signature = model.signatures[name]
  specs = input_specs(signature)
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
