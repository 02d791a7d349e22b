"""Raw text as words, each with its code-point offsets into the text as
sent, in Python and as TensorFlow ops alike (the NER export and run_ner.py
--predict_file read the same words): by Penn Treebank's conventions
(treebank.py: the words of CoNLL-2003 and most English NER data) or where
the original's BasicTokenizer splits (basic.py: every punctuation mark a
word), over one table of character kinds (chars.py).
"""

from serving.words import basic
from serving.words import treebank

SPLITS = {"treebank": treebank, "basic": basic}


def word_spans(text, split):
  """[(start, end)] of the words of `text` in the split named `split`."""
  return SPLITS[split].word_spans(text)


def words_of(texts, split):
  """The words of UTF-8 strings [batch] in the split named `split`, as
  TensorFlow ops: (words, start, end), each [batch, (words)]."""
  return SPLITS[split].words_of(texts)
