"""Generators of crawlbelt's own test data: the fixture crawl, bad, hostile and text inputs. Each is run as
`.venv/bin/python -m testdata.NAME`; the tests check the committed files against a fresh run."""
