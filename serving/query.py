"""Asks an exported model about raw text, as a TF Serving client would.

  python serving/query.py --export_dir=export/ \\
    --text_a="The cat sat." --text_b="A cat was sitting."
  python serving/query.py --export_dir=squad_export/ \\
    --question="Who sat?" --context="The cat sat on the mat."

Loads the SavedModel with TensorFlow and tensorflow-text only (none of this
project's code) and prints what its `serving_default` signature returns.
"""

import argparse
import json
import os

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)


def query(export_dir, **texts):
  """serving_default's outputs for lists of strings named as its inputs
  (text_a [and text_b], or question and context), as Python lists. A
  missing text_b is empty: single sentences."""
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  names = sorted(serve.structured_input_signature[1])
  rows = len(next(v for v in texts.values() if v is not None))
  inputs = {}
  for name in names:
    values = texts.get(name)
    if values is None:
      if name != "text_b":
        raise ValueError("%s needs --%s." % (export_dir, name))
      values = [""] * rows
    inputs[name] = tf.constant(values)
  outputs = serve(**inputs)
  return {k: [x.decode("utf-8") if isinstance(x, bytes) else x for x in v.numpy().tolist()]
          for k, v in outputs.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--export_dir", required=True)
  for name in ("text_a", "text_b", "question", "context"):
    parser.add_argument("--" + name, action="append")
  args = parser.parse_args()
  texts = {k: v for k, v in vars(args).items() if k != "export_dir" and v is not None}
  if not texts:
    parser.error("give --text_a (and --text_b), or --question and --context")
  if not tf.io.gfile.exists(os.path.join(args.export_dir, "saved_model.pb")):
    parser.error("%s holds no saved_model.pb: pass the directory --export_dir "
                 "wrote (its version subdirectory)." % args.export_dir)
  try:
    outputs = query(args.export_dir, **texts)
  except ValueError as e:
    parser.error(str(e))
  for key, values in outputs.items():
    print("%s: %s" % (key, json.dumps(values, ensure_ascii=False)))


if __name__ == "__main__":
  main()
