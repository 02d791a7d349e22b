"""Makes tests/data/fill_mask_reference/reference.json with the original
google-research/bert code: for each line of input.txt, the 5 most likely
tokens (and their probabilities) at each [MASK], by the original's BertModel
and run_pretraining.py's get_masked_lm_output on the committed reference
checkpoint (tests/data/modeling_reference/model.ckpt) with vocab.txt.

Each line is turned into ids as fill-mask promises (tasks/fill_mask.py), but
here with the original's FullTokenizer: the text is cut at each [MASK]
literal, the pieces tokenized (lower-cased), the [MASK] id put between them,
[CLS] ... [SEP] cut to 40 tokens (the checkpoint's positions), masks past
the cut left out.

  TF_CPP_MIN_LOG_LEVEL=2 bench/output/envs/original/bin/python \\
      tests/reference_makers/make_fill_mask_reference.py --original_dir=/path/to/bert
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import original  # pylint: disable=g-import-not-at-top,wrong-import-position

DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
FOLDER = os.path.join(DATA, "fill_mask_reference")
MODEL = os.path.join(DATA, "modeling_reference")
SEQ, TOP_K = 40, 5


def features(tokenization, lines):
  tokenizer = tokenization.FullTokenizer(os.path.join(FOLDER, "vocab.txt"), do_lower_case=True)
  vocab = tokenizer.vocab
  rows = []
  for line in lines:
    body, positions = [], []
    segments = line.split("[MASK]")
    for i, segment in enumerate(segments):
      body += tokenizer.convert_tokens_to_ids(tokenizer.tokenize(segment))
      if i < len(segments) - 1:
        positions.append(len(body) + 1)
        body.append(vocab["[MASK]"])
    body = body[:SEQ - 2]
    rows.append(([vocab["[CLS]"]] + body + [vocab["[SEP]"]],
                 [p for p in positions if p <= len(body)]))
  return rows


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--original_dir", required=True)
  args = parser.parse_args()
  tf, tokenization, modeling, optimization, code = original.load(args.original_dir)
  heads = original.functions(args.original_dir, "run_pretraining.py",
                             ["get_masked_lm_output", "gather_indexes"],
                             {"tf": tf, "modeling": modeling, "optimization": optimization})
  with open(os.path.join(FOLDER, "input.txt"), encoding="utf-8") as f:
    lines = [l.strip() for l in f]
  rows = features(tokenization, lines)
  width = max(max(len(p) for _, p in rows), 1)
  ids = np.zeros((len(rows), SEQ), np.int32)
  mask = np.zeros_like(ids)
  positions = np.zeros((len(rows), width), np.int32)
  for i, (row_ids, row_positions) in enumerate(rows):
    ids[i, :len(row_ids)] = row_ids
    mask[i, :len(row_ids)] = 1
    positions[i, :len(row_positions)] = row_positions
  config = modeling.BertConfig.from_json_file(os.path.join(MODEL, "bert_config.json"))
  with tf.Graph().as_default():
    model = modeling.BertModel(config=config, is_training=False, input_ids=tf.constant(ids),
                               input_mask=tf.constant(mask),
                               token_type_ids=tf.zeros_like(tf.constant(ids)),
                               use_one_hot_embeddings=False)
    _, _, log_probs = heads["get_masked_lm_output"](
        config, model.get_sequence_output(), model.get_embedding_table(),
        tf.constant(positions), tf.zeros_like(tf.constant(positions)),
        tf.ones(positions.shape, tf.float32))
    with tf.Session() as session:
      tf.train.Saver(tf.global_variables()).restore(session, os.path.join(MODEL, "model.ckpt"))
      values = session.run(log_probs).reshape(len(rows), width, -1)
  out = []
  for (row_ids, row_positions), row_values in zip(rows, values):
    masks = []
    for k, position in enumerate(row_positions):
      order = np.argsort(-row_values[k], kind="stable")[:TOP_K]
      masks.append({"position": position, "ids": order.tolist(),
                    "probabilities": np.exp(row_values[k][order]).astype(float).tolist()})
    out.append({"input_ids": row_ids, "masks": masks})
  with open(os.path.join(FOLDER, "reference.json"), "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
  original.cleanup(code)


if __name__ == "__main__":
  main()
