"""The user's own files of rows: CSV, TSV or JSON Lines, read by column.

A file's format comes from its extension (.csv, .tsv, .jsonl or .json for
JSON Lines); CSV and TSV are read as Python's `csv` reads them (quoting,
CRLF, a UTF-8 byte-order mark, blank lines skipped). A column is a header
name, or a 0-based index for files without a header. Every mistake is one
line naming the file (and line, or flag). Classification's files
(classification/user_files.py) and embedding pairs (sentence_embedding/
pairs.py) are read here.
"""

import csv
import json
import os

from plumbing.errors import UserError
from plumbing import files

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}


def file_format(path, flag):
  extension = os.path.splitext(path)[1].lower()
  if extension not in FORMATS:
    raise UserError("%s=%s: unknown file type %r; give a .csv, .tsv or .jsonl file." %
                    (flag, path, extension))
  return FORMATS[extension]


def _rows(path, flag):
  """(line number, row) for each non-blank row: a list of fields (CSV, TSV)
  or a dict (JSON Lines)."""
  kind = file_format(path, flag)
  if not files.exists(path):
    raise UserError("%s=%s: no such file." % (flag, path))
  try:
    with files.open_text(path, encoding="utf-8-sig", newline="") as f:
      if kind == "jsonl":
        for number, line in enumerate(f, 1):
          if not line.strip():
            continue
          try:
            row = json.loads(line)
          except ValueError as e:
            raise UserError("%s:%d: not a JSON object (%s)." % (path, number, e)) from None
          if not isinstance(row, dict):
            raise UserError("%s:%d: expected a JSON object, got %s." % (
                path, number, type(row).__name__))
          yield number, row
      else:
        reader = csv.reader(f, delimiter="," if kind == "csv" else "\t")
        start = 1
        for row in reader:
          if row and any(field.strip() for field in row):
            yield start, row
          start = reader.line_num + 1
  except UnicodeDecodeError as e:
    raise UserError("%s: not UTF-8 text (%s)." % (path, e)) from None
  except csv.Error as e:
    raise UserError("%s: %s." % (path, e)) from None


class Table(object):
  """A file's rows with its header (if the columns are names), and the
  lookup of a column in a row."""

  def __init__(self, path, flag, has_header):
    self.path = path
    rows = list(_rows(path, flag))
    self.jsonl = file_format(path, flag) == "jsonl"
    if self.jsonl and not has_header:
      raise UserError("%s: JSON Lines rows are objects: name the columns by key, not by "
                      "index." % path)
    self.header = None
    if has_header and not self.jsonl:
      if not rows:
        raise UserError("%s has no header line." % path)
      self.header = [name.strip() for name in rows.pop(0)[1]]
    self.rows = rows

  def names(self):
    if self.header is not None:
      return self.header
    return list(self.rows[0][1]) if self.rows and self.jsonl else []

  def has(self, column):
    if isinstance(column, int):
      return True
    return column in self.names() or (self.jsonl and any(column in r for _, r in self.rows))

  def value(self, number, row, column, what):
    """The field of `row` at `column`; an error naming the line if missing."""
    if self.jsonl:
      if column not in row:
        raise UserError("%s:%d: no %r key (the %s column)." % (self.path, number, column,
                                                                what))
      value = row[column]
      return value if isinstance(value, str) else json.dumps(value)
    index = self.header.index(column) if self.header is not None else column
    if index >= len(row):
      raise UserError("%s:%d: %d fields, no column %s (the %s column)." % (
          self.path, number, len(row), column if isinstance(column, int) else repr(column),
          what))
    return row[index]


def columns_of_flag(values, flag):
  """A list flag's columns: all 0-based indexes (digits), or all header names."""
  numeric = [v.isdigit() for v in values]
  if any(numeric) and not all(numeric):
    raise UserError("%s=%s: give header names, or 0-based indexes for files without a header, "
                    "not both." % (flag, ",".join(values)))
  return tuple(int(v) if v.isdigit() else v for v in values)


def read_fields(path, flag, columns, choices=()):
  """(columns, rows) of the user's file `path`: each row as ("path:line",
  (its field at each column, ...)). `columns`: header names or 0-based
  indexes (columns_of_flag); None, the first of `choices` (tuples of names)
  whose every name the file has. One error line naming the file, and the
  line, where a column or field is missing."""
  table = Table(path, flag, columns is None or not any(isinstance(c, int) for c in columns))
  if columns is None:
    columns = next((c for c in choices if all(table.has(name) for name in c)), None)
    if columns is None:
      raise UserError("%s=%s: its columns are %s; name the ones to read (%s)." % (
          flag, path, ", ".join(table.names()) or "none",
          " or ".join(",".join(c) for c in choices)))
  for column in columns:
    if not table.has(column):
      raise UserError("%s=%s has no column %r (columns: %s)." % (
          flag, path, column, ", ".join(table.names())))
  rows = [("%s:%d" % (path, number),
           tuple(table.value(number, row, column, str(column)) for column in columns))
          for number, row in table.rows]
  return columns, rows
