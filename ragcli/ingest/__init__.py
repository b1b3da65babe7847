"""Walk files -> extract text -> sentence-aligned passages."""
