"""crawlbelt: web crawls to clean, deduplicated, tokenized training data, on Ray or on Spark with the same bytes.

The belt is declared once, in order, in pipeline/spec.py; the stages it runs are in stages/ and know no engine.
"""
