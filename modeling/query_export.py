"""Asks an exported classifier about raw text, as a TF Serving client would.

  python modeling/query_export.py --export_dir=export/ \\
    --text_a="The cat sat." --text_b="A cat was sitting."

Loads the SavedModel with TensorFlow and tensorflow-text only (none of this
project's code) and prints what its `serving_default` signature returns.
"""

import argparse
import json

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)


def query(export_dir, texts_a, texts_b=None):
  """serving_default's outputs for the texts, as Python lists."""
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  inputs = {"text_a": tf.constant(texts_a)}
  if "text_b" in serve.structured_input_signature[1]:
    inputs["text_b"] = tf.constant(texts_b if texts_b is not None else [""] * len(texts_a))
  outputs = serve(**inputs)
  return {k: [x.decode("utf-8") if isinstance(x, bytes) else x for x in v.numpy().tolist()]
          for k, v in outputs.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--export_dir", required=True)
  parser.add_argument("--text_a", action="append", required=True)
  parser.add_argument("--text_b", action="append")
  args = parser.parse_args()
  for key, values in query(args.export_dir, args.text_a, args.text_b).items():
    print("%s: %s" % (key, json.dumps(values, ensure_ascii=False)))


if __name__ == "__main__":
  main()
