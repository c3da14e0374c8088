"""Per-document stages of the belt. Plain functions and small classes over Arrow tables; no Ray or Spark here."""
