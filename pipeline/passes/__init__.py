"""The belt's passes over the data, one module each: filter, dedup, paragraph dedup, finalize, tokens, exports."""
