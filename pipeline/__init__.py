"""crawlbelt: web crawls to curated, deduplicated training data on Ray Data."""
