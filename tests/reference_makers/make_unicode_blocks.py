"""Writes, for the running Python's Unicode tables, a hash of each 256-code-
point block's tokenizer-relevant properties (category, NFD form, lower case,
whether str.isspace): tests/data/unicode_blocks/<unicode version>.json.

The original's tokenizer reads these tables from the interpreter it runs
under, and so does ours: the committed code-point references
(tokenizer_codepoint_blocks.json) hold for the blocks whose hash under the
running interpreter equals the one under the Unicode version they were made
with. Standard library only; run it with each Python a release supports:

  for v in 3.11 3.12 3.13; do $(pyenv root)/versions/$v*/bin/python \\
      tests/reference_makers/make_unicode_blocks.py; done
"""

import hashlib
import json
import os
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT_DIR = os.path.normpath(os.path.join(HERE, "..", "data", "unicode_blocks"))


def block_hashes():
  hashes = []
  for block in range(0x110000 // 256):
    rows = []
    for cp in range(block * 256, block * 256 + 256):
      if 0xD800 <= cp <= 0xDFFF:
        continue
      char = chr(cp)
      rows.append("%x:%s:%s:%s:%d" % (cp, unicodedata.category(char),
                                      unicodedata.normalize("NFD", char), char.lower(),
                                      char.isspace()))
    hashes.append(hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass"))
                  .hexdigest()[:16])
  return hashes


def main():
  os.makedirs(OUTPUT_DIR, exist_ok=True)
  path = os.path.join(OUTPUT_DIR, unicodedata.unidata_version + ".json")
  with open(path, "w", encoding="utf-8") as f:
    json.dump({"unicode": unicodedata.unidata_version, "blocks": block_hashes()}, f)
    f.write("\n")
  print("wrote", path)


if __name__ == "__main__":
  main()
