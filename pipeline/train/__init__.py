"""The train stage: a small transformer trained with FSDP2 on a curation run's token shards."""
