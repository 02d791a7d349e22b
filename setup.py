"""Lets Beam's `--setup_file=./setup.py` package this checkout for remote
workers (Dataflow); everything else about the package is in pyproject.toml."""

import setuptools

setuptools.setup()
