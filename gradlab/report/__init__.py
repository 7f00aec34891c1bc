"""The only place that prints: rich tables and progress (console), JSON and PNG files (files)."""
