"""Evaluation: datasets, metrics (EM, F1, recall), runs over the same event stream as `ask`, reports."""
