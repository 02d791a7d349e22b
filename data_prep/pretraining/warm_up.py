"""Compiles the pre-training data generator's numba code ahead of first use.

  python -m data_prep.pretraining.warm_up

`make install` runs this once: numba compiles each function on its first
call and keeps the machine code in __pycache__ (cache=True), so without it
the user's first create_pretraining_data run would spend seconds compiling
that later runs do not. A tiny made-up corpus is run through the whole
pipeline in both masking modes, which reaches every compiled function with
the argument types real runs use.
"""

import os
import tempfile
import time

from data_prep.pretraining import generator
from data_prep import tokenization

_WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "and",
          "came", "back", "home", "play", "##ing", "##s", "."]


def load_compiled_code():
  """Runs the tiny corpus through the generator: compiles the numba code, or
  loads it from the cache (what a new worker process pays once)."""
  with tempfile.TemporaryDirectory() as directory:
    vocab = os.path.join(directory, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
      f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + _WORDS) + "\n")
    corpus = os.path.join(directory, "corpus.txt")
    sentences = ["the cat sat on the mat .", "a dog ran far away .",
                 "the dog came back home .", "the cats and dogs playing ."]
    with open(corpus, "w", encoding="utf-8") as f:
      for document in range(4):
        f.write("\n".join(sentences[document:] + sentences[:document]) + "\n\n")
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    for whole_word in (False, True):
      options = generator.Options(
          max_seq_length=16, max_predictions_per_seq=3, dupe_factor=2,
          do_whole_word_mask=whole_word)
      generator.generate(
          [corpus], [os.path.join(directory, "out.tfrecord")], tokenizer, options)


def main():
  start = time.time()
  load_compiled_code()
  print("Compiled the data generator's numba code in %.1f s." % (time.time() - start))


if __name__ == "__main__":
  main()
