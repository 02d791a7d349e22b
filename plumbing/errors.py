"""The error every module raises for bad input, so entry points can tell a
user's mistake (one line, exit status 1) from a bug (a traceback)."""


class UserError(ValueError):
  """Bad input or flags; the message names the file, line or flag and what to do."""


class Stopped(Exception):
  """The run stopped when asked to (SIGTERM) after saving where it was; the
  same command run again continues from there. Not an error of the input."""
