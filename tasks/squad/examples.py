"""SQuAD 1.1 / 2.0 files read as the original `run_squad.py` read them.

`SquadExample` and `read_squad_examples` keep the original's names and
behaviour: the paragraph split into words on the original's whitespace
(which includes U+202F), answers mapped from character offsets to words,
training questions whose answer text cannot be found in the words skipped
with a warning, `is_impossible` for 2.0. A malformed file or question is a
UserError naming the file and the question id, not a KeyError from deep
inside. See tests/data/squad_reference/README.md for the quirks copied on
purpose.
"""

import bisect
import json
import re

from absl import logging

from data_prep import tokenization
from plumbing.errors import UserError
from plumbing import files

# The original splits document text on these characters only; other Unicode
# spaces stay inside a word (the WordPiece tokenizer splits there later).
_DOC_WORD = re.compile("[^ \t\r\n\u202f]+")


class SquadExample(object):
  """One question about one paragraph; answer fields only set for training."""

  def __init__(self, qas_id, question_text, doc_tokens, orig_answer_text=None,
               start_position=None, end_position=None, is_impossible=False):
    self.qas_id = qas_id
    self.question_text = question_text
    self.doc_tokens = doc_tokens
    self.orig_answer_text = orig_answer_text
    self.start_position = start_position
    self.end_position = end_position
    self.is_impossible = is_impossible

  def __str__(self):
    return self.__repr__()

  def __repr__(self):
    parts = ["qas_id: %s" % self.qas_id,
             "question_text: %s" % self.question_text,
             "doc_tokens: [%s]" % " ".join(self.doc_tokens)]
    if self.start_position:
      parts.append("start_position: %d" % self.start_position)
    if self.end_position:
      parts.append("end_position: %d" % self.end_position)
    if self.is_impossible:
      parts.append("is_impossible: %r" % self.is_impossible)
    return ", ".join(parts)


class SquadExamples(list):
  """The examples read from a file (a plain list to callers), remembering which
  training questions were dropped because their answer is not in the text."""

  def __init__(self, examples=(), skipped_qas_ids=(), skip_warnings=()):
    super().__init__(examples)
    self.skipped_qas_ids = list(skipped_qas_ids)
    self.skip_warnings = list(skip_warnings)


def _load_json(input_file):
  """The file's "data" list; unreadable JSON is the user's error, in one line."""
  if not files.exists(input_file):
    raise UserError("%s: no such file." % input_file)
  try:
    with files.open_text(input_file) as f:
      document = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:
    raise UserError("%s: not a valid SQuAD JSON file: %s" % (input_file, e)) from None
  if not isinstance(document, dict) or not isinstance(document.get("data"), list):
    raise UserError('%s: not a SQuAD file: no top-level "data" list.' % input_file)
  return document["data"]


def _field(container, name, input_file, where, kind=None):
  """container[name], or a UserError naming the file and the question."""
  if not isinstance(container, dict) or name not in container:
    raise UserError('%s: %s has no "%s" field.' % (input_file, where, name))
  value = container[name]
  if kind is not None and not isinstance(value, kind):
    raise UserError('%s: %s: "%s" should be a %s, not %r.' %
                    (input_file, where, name, kind.__name__, value))
  return value


def split_document(text):
  """(words, start offset of each word) of a paragraph, split as the original."""
  words = []
  starts = []
  for match in _DOC_WORD.finditer(text):
    words.append(match.group())
    starts.append(match.start())
  return words, starts


def _word_at(starts, char_index):
  """Index of the word a character belongs to; a space belongs to the word
  before it (-1 before the first word), as the original's char-to-word map."""
  return bisect.bisect_right(starts, char_index) - 1


def _training_answer(qa, doc_tokens, starts, context, version_2_with_negative,
                     input_file, where):
  """(text, start word, end word, is_impossible) of a training question, or
  None with a warning message when the answer cannot be found in the words."""
  is_impossible = False
  if version_2_with_negative:
    is_impossible = bool(_field(qa, "is_impossible", input_file, where))
  if is_impossible:
    return ("", -1, -1, True), None
  answers = _field(qa, "answers", input_file, where, list)
  if len(answers) != 1:
    raise UserError("%s: %s: for training, each question should have exactly 1 "
                    "answer, found %d." % (input_file, where, len(answers)))
  text = _field(answers[0], "text", input_file, where, str)
  offset = _field(answers[0], "answer_start", input_file, where, int)
  last = offset + len(text) - 1
  if offset < 0 or offset >= len(context) or last >= len(context):
    raise UserError("%s: %s: answer_start %d (answer of %d characters) is outside "
                    "the context of %d characters." %
                    (input_file, where, offset, len(text), len(context)))
  # An empty text at offset 0 looks at the context's last character, as the
  # original's negative index does.
  start = _word_at(starts, offset)
  end = _word_at(starts, last % len(context))
  actual = " ".join(doc_tokens[start:end + 1])
  cleaned = " ".join(tokenization.whitespace_tokenize(text))
  if actual.find(cleaned) == -1:
    return None, "Could not find answer: '%s' vs. '%s'" % (actual, cleaned)
  return (text, start, end, False), None


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
  """Reads a SQuAD JSON file into SquadExamples (a list, in file order).

  For training, questions whose answer text cannot be recovered from the
  document words (mostly Unicode oddities) are skipped with a warning, as in
  the original; their ids are in the result's `skipped_qas_ids`.
  """
  data = _load_json(input_file)
  examples = SquadExamples()
  for article_index, article in enumerate(data):
    paragraphs = _field(article, "paragraphs", input_file,
                        "article #%d" % article_index, list)
    for paragraph_index, paragraph in enumerate(paragraphs):
      where = "paragraph #%d of article #%d" % (paragraph_index, article_index)
      context = _field(paragraph, "context", input_file, where, str)
      doc_tokens, starts = split_document(context)
      for qa_index, qa in enumerate(_field(paragraph, "qas", input_file, where, list)):
        question_where = "question #%d of %s" % (qa_index, where)
        qas_id = _field(qa, "id", input_file, question_where)
        question_where = "question %r" % (qas_id,)
        question_text = _field(qa, "question", input_file, question_where, str)
        example = SquadExample(qas_id=qas_id, question_text=question_text,
                               doc_tokens=doc_tokens)
        if is_training:
          answer, warning = _training_answer(qa, doc_tokens, starts, context,
                                             version_2_with_negative, input_file,
                                             question_where)
          if answer is None:
            logging.warning(warning)
            examples.skipped_qas_ids.append(qas_id)
            examples.skip_warnings.append(warning)
            continue
          (example.orig_answer_text, example.start_position, example.end_position,
           example.is_impossible) = answer
        examples.append(example)
  if examples.skipped_qas_ids:
    logging.warning("%s: skipped %d training question(s) whose answer text is not "
                    "in the context: %s", input_file, len(examples.skipped_qas_ids),
                    ", ".join(str(i) for i in examples.skipped_qas_ids))
  return examples
