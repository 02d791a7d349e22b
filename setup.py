"""Packages the library for workers that need it (e.g. Beam's --setup_file on
Dataflow); the scripts themselves run from the checkout."""

import setuptools

setuptools.setup(
    name="bert-tf2-original",
    version="0.1",
    packages=setuptools.find_packages(include=[
        "plumbing", "data_prep", "data_prep.*", "vocab", "tasks", "tasks.*", "modeling",
        "serving", "demo"]),
    install_requires=[],  # Workers get requirements.txt (--requirements_file).
)
