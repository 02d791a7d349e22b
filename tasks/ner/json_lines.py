"""Named-entity files in JSON Lines: a sentence a line, as
`{"tokens": ["EU", "rejects", ...], "tags": ["B-ORG", "O", ...]}`.

The layout of Hugging Face datasets' conll2003 (`ner_tags` is read too),
once its tags are strings: numbers mean nothing without the dataset's list
of names, so they are refused. Tags are in any scheme conll.py knows; other
keys are ignored, and blank lines and lines of no tokens skipped.
"""

import json

from plumbing.errors import UserError
from tasks.ner import conll
from tasks.ner import raw_text

TAG_KEYS = ("tags", "ner_tags")


def _sentence(record, where):
  """The Sentence of one line's object."""
  if not isinstance(record, dict):
    raise UserError('%s: not a JSON object; each line holds one, with "tokens" and "tags" '
                    "lists." % where)
  key = next((k for k in TAG_KEYS if k in record), None)
  if "tokens" not in record or key is None:
    raise UserError('%s: no "%s" key; each line needs "tokens" and "tags" (or "ner_tags") '
                    "lists." % (where, "tokens" if "tokens" not in record else "tags"))
  tokens, tags = record["tokens"], record[key]
  if not isinstance(tokens, list) or not isinstance(tags, list):
    raise UserError('%s: "tokens" and "%s" must be lists.' % (where, key))
  if len(tokens) != len(tags):
    raise UserError('%s: %d tokens but %d %s; give one tag per token.'
                    % (where, len(tokens), len(tags), key))
  for token in tokens:
    if not isinstance(token, str) or token.split() != [token]:
      raise UserError("%s: token %s is not a word (a non-empty string without whitespace)."
                      % (where, json.dumps(token, ensure_ascii=False)))
  for tag in tags:
    if isinstance(tag, (int, float)) and not isinstance(tag, bool):
      raise UserError('%s: "%s" holds numbers (%s); give the tags as strings ("B-PER", "O", '
                      "...), e.g. mapped through the dataset's list of tag names."
                      % (where, key, tag))
    if not isinstance(tag, str) or not conll.is_tag(tag):
      raise UserError("%s: tag %s is neither O nor B-, I-, E- or S- and a type."
                      % (where, json.dumps(tag, ensure_ascii=False)))
  return conll.Sentence(list(tokens), list(tags), where)


def read_sentences(path):
  """The sentences of a JSON Lines file; an error naming the file and line
  of a line that is not a JSON object with tokens and tags lists of equal
  length, or holds a tag of no known form."""
  sentences = []
  for number, line in enumerate(raw_text.read_lines(path), 1):
    if not line.strip():
      continue
    where = "%s:%d" % (path, number)
    try:
      record = json.loads(line)
    except ValueError as e:
      raise UserError("%s: not JSON (%s); a JSON Lines file holds one JSON object a line."
                      % (where, e)) from None
    sentence = _sentence(record, where)
    if sentence.words:
      sentences.append(sentence)
  return sentences
