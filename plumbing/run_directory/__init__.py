"""What guards a training run's output directory: one run trains into it at a
time (lock.py), and a run with other settings does not continue it
(settings.py)."""
