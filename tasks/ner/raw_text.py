"""Raw text in, entities out (run_ner.py --predict_file): one text a line.

A text's words are the ones the export finds (serving/words: by Penn
Treebank's conventions or the original BasicTokenizer's split, whichever
the run's training words followed, with code-point offsets), so a line gets
the entities the export gives the same text: its words tagged as any
sentence's (features.py), entities read from the tags as the export reads
them, less the words of punctuation alone at their ends (no entity is
`(` or `. Dale`), each entity's score the mean of its words' tag
probabilities.
"""

import json

from plumbing.errors import UserError
from plumbing import files
from serving import words as words_lib
from serving.words import chars
from tasks.ner import conll


def read_lines(path):
  """The lines of a UTF-8 text file, without their "\\n" or "\\r\\n" (nor a
  byte-order mark at the start); an error naming the line of a byte that is
  not UTF-8."""
  with files.open_binary(path) as f:
    data = f.read()
  lines = data.split(b"\n")
  if lines[-1] == b"":
    lines.pop()
  texts = []
  for number, line in enumerate(lines, 1):
    try:
      text = line.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
      raise UserError("%s:%d: not UTF-8 (byte %d of the line: %s); save the file as UTF-8."
                      % (path, number, e.start + 1, e.reason)) from None
    texts.append(text[:-1] if text.endswith("\r") else text)
  return texts


def sentences_of(texts, path, split):
  """(Sentences of the texts' words in `split` (serving/words' SPLITS),
  each text's word spans). No tag is read: the tags are O, which the
  records carry and predictions ignore."""
  spans = [words_lib.word_spans(text, split) for text in texts]
  sentences = [conll.Sentence([text[start:end] for start, end in text_spans],
                              ["O"] * len(text_spans), "%s:%d" % (path, number))
               for number, (text, text_spans) in enumerate(zip(texts, spans), 1)]
  return sentences, spans


def entities_of(text, spans, predictions, labels):
  """The entities of one text: [{type, start, end, text, score}], from its
  words' spans and (label index, probability) predictions (labels: IOB2 tags).
  A B- tag, or an I- tag after O or after another type, starts one; the
  words of punctuation alone at its ends are not part of it (an entity of
  nothing else is none)."""
  found, previous = [], None
  for index, (label, _) in enumerate(predictions):
    tag = labels[label]
    if conll.starts_entity(previous, tag):
      found.append((conll.split_tag(tag)[1], [index]))
    elif tag != "O":
      found[-1][1].append(index)
    previous = tag
  entities = []
  for kind, members in found:
    kept = [i for i in members
            if not chars.is_punctuation_only(text[spans[i][0]:spans[i][1]])]
    if not kept:
      continue
    members = range(kept[0], kept[-1] + 1)  # An entity's words follow one another.
    start, end = spans[members[0]][0], spans[members[-1]][1]
    probabilities = [predictions[i][1] for i in members]
    entities.append({"type": kind, "start": start, "end": end, "text": text[start:end],
                     "score": sum(probabilities) / len(probabilities)})
  return entities


def write_entities(path, texts, entities):
  """JSON Lines, one object per text: {"text", "entities"}; written whole
  or not at all."""
  with files.atomic_output(path) as f:
    for text, text_entities in zip(texts, entities):
      f.write(json.dumps({"text": text, "entities": text_entities}, ensure_ascii=False) + "\n")
