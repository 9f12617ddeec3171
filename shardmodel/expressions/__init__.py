"""Conditions and filters: reading bounds off key conditions, evaluating filters on items."""
